#include "folio/chat_prompt.h"

#include <algorithm>
#include <string>

namespace folio {

Result<std::vector<int32_t>> chat_prompt_tokens(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                                std::span<const ChatMessage> messages) {
    ChatTemplateInputs inputs;
    inputs.messages.assign(messages.begin(), messages.end());
    inputs.add_generation_prompt = true;
    if (tokenizer.bos_id() >= 0) inputs.bos_token = tokenizer.token_text(tokenizer.bos_id());
    if (tokenizer.eos_id() >= 0) inputs.eos_token = tokenizer.token_text(tokenizer.eos_id());
    auto text = chat_template.render(inputs);
    if (!text) return make_error("chat template: " + text.error().message);
    const bool has_bos = tokenizer.bos_id() >= 0 && text->rfind(inputs.bos_token, 0) == 0;
    std::vector<int32_t> ids = tokenizer.encode(*text, /*add_special=*/!has_bos, /*parse_special=*/true);
    if (ids.empty()) return make_error("the conversation has no tokens");
    return ids;
}

Result<FittedChatPrompt> fit_chat_prompt(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                         std::span<const ChatMessage> messages, size_t max_tokens) {
    auto full = chat_prompt_tokens(chat_template, tokenizer, messages);
    if (!full) return full.error();
    FittedChatPrompt fitted;
    fitted.full_tokens = full->size();
    if (full->size() <= max_tokens) {
        fitted.tokens = std::move(*full);
        return fitted;
    }
    // Where each turn starts among the non-system messages; turn 0 starts at
    // the first of them even when it is not a user message.
    std::vector<ChatMessage> system;
    std::vector<ChatMessage> rest;
    for (const ChatMessage& m : messages) (m.role == "system" ? system : rest).push_back(m);
    std::vector<size_t> turn_starts;
    for (size_t i = 0; i < rest.size(); ++i)
        if (i == 0 || rest[i].role == "user") turn_starts.push_back(i);
    // Leaving out the first k turns: the prompt only shrinks as k grows, so
    // the fewest turns to leave out are found by bisection (a few renders,
    // not one per turn).
    auto without_turns = [&](size_t k) -> Result<std::vector<int32_t>> {
        std::vector<ChatMessage> kept = system;
        kept.insert(kept.end(), rest.begin() + static_cast<std::ptrdiff_t>(turn_starts[k]), rest.end());
        return chat_prompt_tokens(chat_template, tokenizer, kept);
    };
    if (turn_starts.empty())
        return make_error("the system messages alone are " + std::to_string(full->size()) +
                          " tokens; the prompt may hold " + std::to_string(max_tokens));
    const size_t last = turn_starts.size() - 1;
    auto shortest = without_turns(last);
    if (!shortest) return shortest.error();
    if (shortest->size() > max_tokens)
        return make_error("the system prompt and the last message alone are " + std::to_string(shortest->size()) +
                          " tokens; the prompt may hold " + std::to_string(max_tokens));
    size_t lo = 1, hi = last;  // the answer is in [lo, hi]; `best` is hi's prompt, which fits
    std::vector<int32_t> best = std::move(*shortest);
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        auto ids = without_turns(mid);
        if (!ids) return ids.error();
        if (ids->size() <= max_tokens) {
            hi = mid;
            best = std::move(*ids);
        } else {
            lo = mid + 1;
        }
    }
    fitted.tokens = std::move(best);
    fitted.dropped_messages = turn_starts[hi];
    return fitted;
}

std::string_view to_string(ChatOverflow overflow) {
    switch (overflow) {
        case ChatOverflow::DropOldestTurns: return "drop-oldest";
        case ChatOverflow::Stop: return "stop";
        case ChatOverflow::TruncateMiddle: return "truncate";
        case ChatOverflow::RollingWindow: return "rolling";
        case ChatOverflow::SinkWindow: return "sink-window";
    }
    return "drop-oldest";
}

OverflowPolicy engine_overflow(ChatOverflow overflow) {
    switch (overflow) {
        case ChatOverflow::DropOldestTurns:
        case ChatOverflow::Stop: return OverflowPolicy::Stop;
        case ChatOverflow::TruncateMiddle: return OverflowPolicy::TruncateMiddle;
        case ChatOverflow::RollingWindow: return OverflowPolicy::RollingWindow;
        case ChatOverflow::SinkWindow: return OverflowPolicy::SinkWindow;
    }
    return OverflowPolicy::Stop;
}

std::optional<ChatOverflow> chat_overflow_from_string(std::string_view name) {
    for (ChatOverflow o : {ChatOverflow::DropOldestTurns, ChatOverflow::Stop, ChatOverflow::TruncateMiddle,
                           ChatOverflow::RollingWindow, ChatOverflow::SinkWindow})
        if (to_string(o) == name) return o;
    return std::nullopt;
}

Result<ChatTurnPrompt> chat_turn_prompt(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                        std::span<const ChatMessage> messages, ChatOverflow overflow,
                                        int32_t context, int32_t max_tokens) {
    if (context < 2) return make_error("the context must hold at least 2 tokens");
    ChatTurnPrompt turn;
    if (overflow == ChatOverflow::DropOldestTurns) {
        const int32_t reserve = std::clamp(std::min(max_tokens, context / 4), 1, context - 1);
        auto fitted = fit_chat_prompt(chat_template, tokenizer, messages, static_cast<size_t>(context - reserve));
        if (!fitted) return make_error(fitted.error().message + " (the context is " + std::to_string(context) +
                                       " tokens, " + std::to_string(reserve) + " of them kept for the reply)");
        turn.tokens = std::move(fitted->tokens);
        turn.dropped_messages = fitted->dropped_messages;
        turn.full_tokens = fitted->full_tokens;
        return turn;  // a reply that fills the context stops there (OverflowPolicy::Stop)
    }
    auto ids = chat_prompt_tokens(chat_template, tokenizer, messages);
    if (!ids) return ids.error();
    turn.full_tokens = ids->size();
    turn.overflow = engine_overflow(overflow);
    if (overflow == ChatOverflow::Stop) {
        if (ids->size() >= static_cast<size_t>(context))
            return make_error("the conversation is " + std::to_string(ids->size()) + " tokens; the context holds " +
                              std::to_string(context));
    } else if (overflow == ChatOverflow::TruncateMiddle) {
        // The system prompt is what the system messages alone render to, as
        // far as it agrees with the whole conversation's tokens.
        std::vector<ChatMessage> system;
        for (const ChatMessage& m : messages)
            if (m.role == "system") system.push_back(m);
        if (!system.empty()) {
            auto head = chat_prompt_tokens(chat_template, tokenizer, system);
            if (!head) return head.error();
            const auto mismatch = std::mismatch(head->begin(), head->end(), ids->begin(), ids->end());
            turn.keep_tokens = static_cast<int32_t>(mismatch.first - head->begin());
        }
    }
    turn.tokens = std::move(*ids);
    return turn;
}

}  // namespace folio
