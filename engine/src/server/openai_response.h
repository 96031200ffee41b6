// The OpenAI API's response bodies and stream chunks, built from what the
// engine streamed: chat.completion / chat.completion.chunk for
// /v1/chat/completions, text_completion for /v1/completions, usage (with
// prompt_tokens_details.cached_tokens from the prefix cache) and logprobs in
// each endpoint's own shape.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "folio/sampling.h"
#include "folio/tokenizer.h"
#include "server/openai_request.h"

namespace folio::server {

// What a response says about itself in every body and chunk.
struct ResponseHeader {
    Endpoint endpoint = Endpoint::Chat;
    std::string id;        // "chatcmpl-..." / "cmpl-..."
    int64_t created = 0;   // Unix seconds
    std::string model;
    bool logprobs = false;
    int32_t top_logprobs = 0;
};

// One choice as far as it has streamed.
struct ChoiceOutput {
    std::string text;
    std::vector<int32_t> token_ids;
    std::vector<SampleInfo> logprobs;  // per token, when asked for
    bool finished = false;
    FinishReason reason = FinishReason::Length;
    std::string error;
};

// "stop" (an end-of-generation token or a stop string), "length", "abort" (as vLLM), "error".
std::string_view finish_reason_name(FinishReason reason);

nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens);

// The logprobs of tokens [0, ids.size()): chat's {"content": [...]}, or
// completions' {"tokens", "token_logprobs", "top_logprobs", "text_offset"}
// with offsets counted from `text_offset` (the bytes streamed before).
nlohmann::json logprobs_json(const ResponseHeader& header, const Tokenizer& tokenizer, std::span<const int32_t> ids,
                             std::span<const SampleInfo> info, size_t text_offset = 0);

// The whole response of a request that did not stream.
nlohmann::json completion_body(const ResponseHeader& header, const Tokenizer& tokenizer,
                               std::span<const ChoiceOutput> choices, const nlohmann::json& usage);

// One stream chunk for choice `index`: its new text (chat: with the role in
// the first chunk), its logprobs (null when none) and finish reason (null
// until it has one). `usage_null` adds "usage": null, as OpenAI does when
// stream_options.include_usage is set.
nlohmann::json stream_chunk(const ResponseHeader& header, int32_t index, std::string_view text, bool first,
                            nlohmann::json logprobs, const FinishReason* finish, bool usage_null);
// The last chunk with include_usage: no choices, the usage.
nlohmann::json usage_chunk(const ResponseHeader& header, const nlohmann::json& usage);

// A server-sent event carrying `value`: "data: <json>\n\n".
std::string sse_event(const nlohmann::json& value);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace folio::server
