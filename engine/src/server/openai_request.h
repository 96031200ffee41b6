// The OpenAI API's request bodies read into values, every field checked:
// what /v1/chat/completions, /v1/completions, /tokenize and /detokenize
// accept. A field of the wrong type, out of range or unknown in meaning gets
// an ApiError naming it (OpenAI's error object, status 400), never an
// exception or a crash. Fields the API defines that Folio does not act on
// (user, metadata, ...) are ignored, as other servers ignore them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "folio/chat_template.h"
#include "folio/sampling.h"

namespace folio::server {

// OpenAI's error object: {"error": {"message", "type", "param", "code"}}.
struct ApiError {
    int status = 400;
    std::string message;
    std::string type = "invalid_request_error";
    std::string param;  // "" is null
    std::string code;   // "" is null
};
std::string error_body(const ApiError& error);

enum class Endpoint { Chat, Completion };

// The bounds a request is held to.
inline constexpr int32_t kMaxSamples = 64;       // n
inline constexpr size_t kMaxPrompts = 64;        // a completions batch
inline constexpr size_t kMaxStopStrings = 16;
inline constexpr size_t kMaxStopBytes = 256;     // each
inline constexpr int32_t kMaxTopLogprobs = 20;
inline constexpr size_t kMaxMessages = 4096;

// One request to either completions endpoint, as the engine will run it.
struct CompletionParams {
    Endpoint endpoint = Endpoint::Chat;
    std::string model;                               // "" when left out
    std::vector<ChatMessage> messages;               // chat
    std::vector<std::string> prompts;                // completions: text prompts, or
    std::vector<std::vector<int32_t>> prompt_ids;    // token-id prompts (one of the two is filled)
    bool stream = false;
    bool include_usage = false;                      // stream_options.include_usage
    int32_t n = 1;
    std::optional<int64_t> max_tokens;               // max_tokens / max_completion_tokens; none: the context
    std::vector<std::string> stop;
    SamplingParams sampling;                         // OpenAI's defaults: temperature 1, no top-k/p or min-p
    bool logprobs = false;                           // report the chosen tokens' logprobs
    int32_t top_logprobs = 0;                        // and this many alternatives per token
    bool ignore_eos = false;                         // vLLM's extra
};

// Parses the body of /v1/chat/completions or /v1/completions.
std::optional<ApiError> parse_completion_request(std::string_view body, Endpoint endpoint, CompletionParams& out);

// llama-server's POST /tokenize {"content", "add_special", "parse_special", "with_pieces"}.
struct TokenizeParams {
    std::string content;
    bool add_special = false;
    bool parse_special = true;
    bool with_pieces = false;
};
std::optional<ApiError> parse_tokenize_request(std::string_view body, TokenizeParams& out);

// POST /detokenize {"tokens": [ids]}: every id in [0, vocab_size).
std::optional<ApiError> parse_detokenize_request(std::string_view body, int32_t vocab_size,
                                                 std::vector<int32_t>& tokens);

}  // namespace folio::server
