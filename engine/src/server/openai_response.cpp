#include "server/openai_response.h"

#include "server/json_text.h"

namespace folio::server {

using nlohmann::json;

namespace {

json byte_list(const std::string& bytes) {
    json list = json::array();
    for (unsigned char c : bytes) list.push_back(static_cast<int>(c));
    return list;
}

const char* object_name(const ResponseHeader& h, bool chunk) {
    if (h.endpoint == Endpoint::Completion) return "text_completion";
    return chunk ? "chat.completion.chunk" : "chat.completion";
}

json header_json(const ResponseHeader& h, bool chunk) {
    return json{{"id", h.id}, {"object", object_name(h, chunk)}, {"created", h.created}, {"model", h.model}};
}

json chat_logprobs(const ResponseHeader& h, const Tokenizer& tokenizer, std::span<const int32_t> ids,
                   std::span<const SampleInfo> info) {
    json content = json::array();
    for (size_t i = 0; i < ids.size() && i < info.size(); ++i) {
        const std::string piece = tokenizer.token_bytes(ids[i]);
        json top = json::array();
        for (size_t k = 0; k < info[i].top.size() && k < static_cast<size_t>(h.top_logprobs); ++k) {
            const std::string alt = tokenizer.token_bytes(info[i].top[k].id);
            top.push_back({{"token", alt}, {"logprob", info[i].top[k].logprob}, {"bytes", byte_list(alt)}});
        }
        content.push_back(
            {{"token", piece}, {"logprob", info[i].logprob}, {"bytes", byte_list(piece)}, {"top_logprobs", top}});
    }
    return json{{"content", std::move(content)}, {"refusal", nullptr}};
}

json completion_logprobs(const ResponseHeader& h, const Tokenizer& tokenizer, std::span<const int32_t> ids,
                         std::span<const SampleInfo> info, size_t text_offset) {
    json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(),
         offsets = json::array();
    for (size_t i = 0; i < ids.size() && i < info.size(); ++i) {
        const std::string piece = tokenizer.token_bytes(ids[i]);
        tokens.push_back(piece);
        token_logprobs.push_back(info[i].logprob);
        json top = json::object();
        for (size_t k = 0; k < info[i].top.size() && k < static_cast<size_t>(h.top_logprobs); ++k)
            top[tokenizer.token_bytes(info[i].top[k].id)] = info[i].top[k].logprob;
        top_logprobs.push_back(h.top_logprobs > 0 ? std::move(top) : json(nullptr));
        offsets.push_back(text_offset);
        text_offset += piece.size();
    }
    return json{{"tokens", std::move(tokens)},
                {"token_logprobs", std::move(token_logprobs)},
                {"top_logprobs", std::move(top_logprobs)},
                {"text_offset", std::move(offsets)}};
}

}  // namespace

std::string_view finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::Stop:
        case FinishReason::StopString: return "stop";
        case FinishReason::Length: return "length";
        case FinishReason::Abort: return "abort";
        case FinishReason::Error: return "error";
    }
    return "error";
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens) {
    return json{{"prompt_tokens", prompt_tokens},
                {"completion_tokens", completion_tokens},
                {"total_tokens", prompt_tokens + completion_tokens},
                {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
}

json logprobs_json(const ResponseHeader& header, const Tokenizer& tokenizer, std::span<const int32_t> ids,
                   std::span<const SampleInfo> info, size_t text_offset) {
    if (header.endpoint == Endpoint::Chat) return chat_logprobs(header, tokenizer, ids, info);
    return completion_logprobs(header, tokenizer, ids, info, text_offset);
}

json completion_body(const ResponseHeader& header, const Tokenizer& tokenizer, std::span<const ChoiceOutput> choices,
                     const json& usage) {
    json body = header_json(header, /*chunk=*/false);
    json list = json::array();
    for (size_t i = 0; i < choices.size(); ++i) {
        const ChoiceOutput& c = choices[i];
        json choice = {{"index", i}, {"finish_reason", finish_reason_name(c.reason)}};
        choice["logprobs"] = header.logprobs ? logprobs_json(header, tokenizer, c.token_ids, c.logprobs) : json(nullptr);
        if (header.endpoint == Endpoint::Chat)
            choice["message"] = {{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}};
        else
            choice["text"] = c.text;
        list.push_back(std::move(choice));
    }
    body["choices"] = std::move(list);
    body["usage"] = usage;
    if (header.endpoint == Endpoint::Chat) body["system_fingerprint"] = nullptr;
    return body;
}

json stream_chunk(const ResponseHeader& header, int32_t index, std::string_view text, bool first, json logprobs,
                  const FinishReason* finish, bool usage_null) {
    json chunk = header_json(header, /*chunk=*/true);
    json choice = {{"index", index}, {"logprobs", std::move(logprobs)}};
    choice["finish_reason"] = finish ? json(finish_reason_name(*finish)) : json(nullptr);
    if (header.endpoint == Endpoint::Chat) {
        json delta = json::object();
        if (first) delta["role"] = "assistant";
        if (!text.empty() || first) delta["content"] = std::string(text);
        choice["delta"] = std::move(delta);
    } else {
        choice["text"] = std::string(text);
    }
    chunk["choices"] = json::array({std::move(choice)});
    if (usage_null) chunk["usage"] = nullptr;
    return chunk;
}

json usage_chunk(const ResponseHeader& header, const json& usage) {
    json chunk = header_json(header, /*chunk=*/true);
    chunk["choices"] = json::array();
    chunk["usage"] = usage;
    return chunk;
}

std::string sse_event(const json& value) { return "data: " + dump_json(value) + "\n\n"; }

}  // namespace folio::server
