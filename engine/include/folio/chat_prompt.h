// A conversation turned into the prompt a model continues: rendered through
// its chat template with the tokenizer's BOS/EOS texts and a generation
// prompt, then tokenized with control tokens parsed; BOS is added unless
// the template already wrote it. One place for the CLI, the studio and
// (later) the server, so the three send the model the same tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "folio/chat_template.h"
#include "folio/error.h"
#include "folio/scheduler.h"
#include "folio/tokenizer.h"

namespace folio {

Result<std::vector<int32_t>> chat_prompt_tokens(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                                std::span<const ChatMessage> messages);

// A conversation that outgrew the context, fitted by leaving out its oldest turns.
struct FittedChatPrompt {
    std::vector<int32_t> tokens;
    size_t dropped_messages = 0;  // the oldest non-system messages left out
    size_t full_tokens = 0;       // what the whole conversation would have taken
};

// The conversation's prompt in at most `max_tokens` tokens. System messages
// are always kept; whole turns (a user message and what follows it, up to
// the next user message) are left out from the oldest, so that what is sent
// still begins with a user message as templates expect, and the last turn
// is always kept. An error, naming the sizes, when the system messages and
// the last turn alone do not fit.
Result<FittedChatPrompt> fit_chat_prompt(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                         std::span<const ChatMessage> messages, size_t max_tokens);

// What a chat does when its conversation outgrows the context: leave out
// its oldest turns (the default: the model keeps the system prompt and the
// latest exchange, and the user is told what was left out), or one of the
// engine's token-level policies (scheduler.h).
enum class ChatOverflow {
    DropOldestTurns,  // "drop-oldest"
    Stop,             // "stop": the turn fails with an error that says what to do
    TruncateMiddle,   // "truncate": the system prompt and the latest tokens
    RollingWindow,    // "rolling": the latest tokens
    SinkWindow,       // "sink-window": the first tokens (attention sinks) and the latest, slid in place
};
std::string_view to_string(ChatOverflow overflow);
std::optional<ChatOverflow> chat_overflow_from_string(std::string_view name);
// The engine's policy for a reply that outgrows the context (Stop where the
// chat's own fitting, DropOldestTurns, leaves nothing to the engine).
OverflowPolicy engine_overflow(ChatOverflow overflow);

// One chat turn ready for GenerationRequest: its prompt tokens and the
// engine policy for whatever still does not fit.
struct ChatTurnPrompt {
    std::vector<int32_t> tokens;
    OverflowPolicy overflow = OverflowPolicy::Stop;
    int32_t keep_tokens = 0;      // the system prompt's tokens, for TruncateMiddle
    size_t dropped_messages = 0;  // DropOldestTurns: the oldest non-system messages left out
    size_t full_tokens = 0;       // the whole conversation's prompt
};

// `context`: the longest sequence the engine runs (the smaller of its
// context and its KV pool). DropOldestTurns leaves room for a reply of
// min(max_tokens, context / 4) tokens; Stop fails when the prompt leaves
// no room for one token.
Result<ChatTurnPrompt> chat_turn_prompt(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                        std::span<const ChatMessage> messages, ChatOverflow overflow,
                                        int32_t context, int32_t max_tokens);

}  // namespace folio
