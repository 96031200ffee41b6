#include "server/openai_request.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include <nlohmann/json.hpp>

#include "server/json_text.h"

namespace folio::server {
namespace {

using nlohmann::json;

constexpr int kMaxJsonDepth = 32;  // deeper bodies are refused before anything reads them

ApiError invalid(std::string message, std::string param = {}, std::string code = "invalid_value") {
    return ApiError{400, std::move(message), "invalid_request_error", std::move(param), std::move(code)};
}

ApiError wrong_type(const std::string& param, const char* wanted) {
    return invalid("'" + param + "' must be " + wanted, param, "invalid_type");
}

// The body as a JSON object, or the error a client should see.
std::optional<ApiError> parse_object(std::string_view body, json& out) {
    bool too_deep = false;
    json::parser_callback_t guard = [&too_deep](int depth, json::parse_event_t, json&) {
        if (depth > kMaxJsonDepth) too_deep = true;
        return !too_deep;
    };
    out = json::parse(body.begin(), body.end(), guard, /*allow_exceptions=*/false);
    if (too_deep)
        return invalid("the request body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels", {},
                       "invalid_json");
    if (out.is_discarded()) return invalid("the request body is not valid JSON", {}, "invalid_json");
    if (!out.is_object()) return invalid("the request body must be a JSON object", {}, "invalid_json");
    return std::nullopt;
}

bool present(const json& body, const char* key) {
    auto it = body.find(key);
    return it != body.end() && !it->is_null();
}

std::optional<ApiError> read_bool(const json& body, const char* key, bool& out) {
    if (!present(body, key)) return std::nullopt;
    const json& v = body.at(key);
    if (!v.is_boolean()) return wrong_type(key, "a boolean");
    out = v.get<bool>();
    return std::nullopt;
}

// An integer within [min, max]; a float with an integral value is not one.
std::optional<ApiError> read_int(const json& v, const std::string& param, int64_t min, int64_t max, int64_t& out) {
    if (!v.is_number_integer()) return wrong_type(param, "an integer");
    if (v.is_number_unsigned()) {
        const uint64_t u = v.get<uint64_t>();
        if (u > static_cast<uint64_t>(max) || static_cast<int64_t>(u) < min)
            return invalid("'" + param + "' is " + std::to_string(u) + "; it must be between " + std::to_string(min) +
                               " and " + std::to_string(max),
                           param);
        out = static_cast<int64_t>(u);
        return std::nullopt;
    }
    const int64_t i = v.get<int64_t>();
    if (i < min || i > max)
        return invalid("'" + param + "' is " + std::to_string(i) + "; it must be between " + std::to_string(min) +
                           " and " + std::to_string(max),
                       param);
    out = i;
    return std::nullopt;
}

std::optional<ApiError> read_number(const json& body, const char* key, double min, double max, float& out) {
    if (!present(body, key)) return std::nullopt;
    const json& v = body.at(key);
    if (!v.is_number()) return wrong_type(key, "a number");
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < min || d > max) {
        char range[96];
        std::snprintf(range, sizeof range, "between %g and %g", min, max);
        return invalid(std::string("'") + key + "' is " + v.dump() + "; it must be " + range, key);
    }
    out = static_cast<float>(d);
    return std::nullopt;
}

// A message's content: a string, or an array of {"type": "text", "text": ...} parts.
std::optional<ApiError> read_content(const json& v, const std::string& param, std::string& out) {
    if (v.is_null()) return std::nullopt;  // an assistant message with tool calls only
    if (v.is_string()) {
        out = v.get<std::string>();
        return std::nullopt;
    }
    if (!v.is_array()) return wrong_type(param, "a string or an array of content parts");
    for (size_t i = 0; i < v.size(); ++i) {
        const std::string part_param = param + "[" + std::to_string(i) + "]";
        const json& part = v[i];
        if (!part.is_object()) return wrong_type(part_param, "an object");
        auto type = part.find("type");
        if (type == part.end() || !type->is_string()) return wrong_type(part_param + ".type", "a string");
        if (*type != "text")
            return invalid("content parts of type '" + type->get<std::string>() + "' are not supported (only 'text')",
                           part_param + ".type", "unsupported_value");
        auto text = part.find("text");
        if (text == part.end() || !text->is_string()) return wrong_type(part_param + ".text", "a string");
        out += text->get<std::string>();
    }
    return std::nullopt;
}

std::optional<ApiError> read_messages(const json& body, std::vector<ChatMessage>& out) {
    if (!present(body, "messages")) return invalid("'messages' is required", "messages", "missing_required_parameter");
    const json& v = body.at("messages");
    if (!v.is_array()) return wrong_type("messages", "an array");
    if (v.empty()) return invalid("'messages' must hold at least one message", "messages");
    if (v.size() > kMaxMessages)
        return invalid("'messages' holds " + std::to_string(v.size()) + " messages; at most " +
                           std::to_string(kMaxMessages) + " are allowed",
                       "messages");
    for (size_t i = 0; i < v.size(); ++i) {
        const std::string param = "messages[" + std::to_string(i) + "]";
        const json& m = v[i];
        if (!m.is_object()) return wrong_type(param, "an object");
        auto role = m.find("role");
        if (role == m.end() || !role->is_string()) return wrong_type(param + ".role", "a string");
        const std::string name = role->get<std::string>();
        if (name != "system" && name != "developer" && name != "user" && name != "assistant" && name != "tool")
            return invalid("'" + param + ".role' is '" + name + "'; it must be system, developer, user, assistant or tool",
                           param + ".role");
        ChatMessage message;
        message.role = name == "developer" ? "system" : name;
        auto content = m.find("content");
        if (content == m.end()) {
            if (name != "assistant") return invalid("'" + param + ".content' is required", param + ".content",
                                                    "missing_required_parameter");
        } else if (auto e = read_content(*content, param + ".content", message.content)) {
            return e;
        }
        out.push_back(std::move(message));
    }
    return std::nullopt;
}

// A token-id prompt: an array of integers (ids are checked against the vocabulary later).
std::optional<ApiError> read_ids(const json& v, const std::string& param, std::vector<int32_t>& out) {
    for (size_t i = 0; i < v.size(); ++i) {
        int64_t id = 0;
        if (auto e = read_int(v[i], param + "[" + std::to_string(i) + "]", 0, std::numeric_limits<int32_t>::max(), id))
            return e;
        out.push_back(static_cast<int32_t>(id));
    }
    return std::nullopt;
}

// prompt: a string, an array of strings, an array of token ids, or an array of those.
std::optional<ApiError> read_prompts(const json& body, CompletionParams& out) {
    if (!present(body, "prompt")) return invalid("'prompt' is required", "prompt", "missing_required_parameter");
    const json& v = body.at("prompt");
    if (v.is_string()) {
        out.prompts.push_back(v.get<std::string>());
        return std::nullopt;
    }
    if (!v.is_array() || v.empty()) return wrong_type("prompt", "a string, an array of strings or of token ids");
    if (v[0].is_number()) {
        out.prompt_ids.emplace_back();
        return read_ids(v, "prompt", out.prompt_ids.back());
    }
    if (v.size() > kMaxPrompts)
        return invalid("'prompt' holds " + std::to_string(v.size()) + " prompts; at most " +
                           std::to_string(kMaxPrompts) + " are allowed",
                       "prompt");
    const bool as_ids = v[0].is_array();
    for (size_t i = 0; i < v.size(); ++i) {
        const std::string param = "prompt[" + std::to_string(i) + "]";
        if (as_ids) {
            if (!v[i].is_array() || v[i].empty()) return wrong_type(param, "a non-empty array of token ids");
            out.prompt_ids.emplace_back();
            if (auto e = read_ids(v[i], param, out.prompt_ids.back())) return e;
        } else {
            if (!v[i].is_string()) return wrong_type(param, "a string");
            out.prompts.push_back(v[i].get<std::string>());
        }
    }
    return std::nullopt;
}

std::optional<ApiError> read_stop(const json& body, std::vector<std::string>& out) {
    if (!present(body, "stop")) return std::nullopt;
    const json& v = body.at("stop");
    if (v.is_string()) {
        out.push_back(v.get<std::string>());
    } else if (v.is_array()) {
        if (v.size() > kMaxStopStrings)
            return invalid("'stop' holds " + std::to_string(v.size()) + " strings; at most " +
                               std::to_string(kMaxStopStrings) + " are allowed",
                           "stop");
        for (size_t i = 0; i < v.size(); ++i) {
            if (!v[i].is_string()) return wrong_type("stop[" + std::to_string(i) + "]", "a string");
            out.push_back(v[i].get<std::string>());
        }
    } else {
        return wrong_type("stop", "a string or an array of strings");
    }
    for (const std::string& s : out)
        if (s.size() > kMaxStopBytes)
            return invalid("a stop string is " + std::to_string(s.size()) + " bytes; at most " +
                               std::to_string(kMaxStopBytes) + " are allowed",
                           "stop");
    return std::nullopt;
}

std::optional<ApiError> read_logprobs(const json& body, CompletionParams& out) {
    if (out.endpoint == Endpoint::Chat) {
        if (auto e = read_bool(body, "logprobs", out.logprobs)) return e;
        if (present(body, "top_logprobs")) {
            int64_t top = 0;
            if (auto e = read_int(body.at("top_logprobs"), "top_logprobs", 0, kMaxTopLogprobs, top)) return e;
            if (!out.logprobs && top > 0)
                return invalid("'top_logprobs' needs 'logprobs': true", "top_logprobs");
            out.top_logprobs = static_cast<int32_t>(top);
        }
        return std::nullopt;
    }
    // Completions: logprobs is the number of alternatives (0 = the chosen tokens' only).
    if (!present(body, "logprobs")) return std::nullopt;
    int64_t top = 0;
    if (auto e = read_int(body.at("logprobs"), "logprobs", 0, kMaxTopLogprobs, top)) return e;
    out.logprobs = true;
    out.top_logprobs = static_cast<int32_t>(top);
    return std::nullopt;
}

std::optional<ApiError> read_sampling(const json& body, SamplingParams& s) {
    if (auto e = read_number(body, "temperature", 0.0, 2.0, s.temperature)) return e;
    if (auto e = read_number(body, "top_p", 0.0, 1.0, s.top_p)) return e;
    if (present(body, "top_p") && s.top_p <= 0.0f) return invalid("'top_p' must be greater than 0", "top_p");
    if (auto e = read_number(body, "frequency_penalty", -2.0, 2.0, s.frequency_penalty)) return e;
    if (auto e = read_number(body, "presence_penalty", -2.0, 2.0, s.presence_penalty)) return e;
    // vLLM's extra sampling parameters.
    if (auto e = read_number(body, "min_p", 0.0, 1.0, s.min_p)) return e;
    if (auto e = read_number(body, "repetition_penalty", 0.01, 100.0, s.repetition_penalty)) return e;
    if (present(body, "top_k")) {
        int64_t k = 0;
        if (auto e = read_int(body.at("top_k"), "top_k", -1, std::numeric_limits<int32_t>::max(), k)) return e;
        s.top_k = k < 0 ? 0 : static_cast<int32_t>(k);  // vLLM: -1 = off
    }
    if (present(body, "seed")) {
        int64_t seed = 0;
        if (auto e = read_int(body.at("seed"), "seed", 0, std::numeric_limits<int64_t>::max(), seed)) return e;
        s.seed = static_cast<uint64_t>(seed);
        if (s.seed == kRandomSeed) s.seed = kRandomSeed + 1;  // kRandomSeed would mean "draw one"
    }
    if (Status st = s.validate(); !st) return invalid(st.error().message);
    return std::nullopt;
}

}  // namespace

std::string error_body(const ApiError& error) {
    json e = {{"message", error.message},
              {"type", error.type},
              {"param", error.param.empty() ? json(nullptr) : json(error.param)},
              {"code", error.code.empty() ? json(nullptr) : json(error.code)}};
    return dump_json(json{{"error", std::move(e)}});
}

std::optional<ApiError> parse_completion_request(std::string_view text, Endpoint endpoint, CompletionParams& out) {
    json body;
    if (auto e = parse_object(text, body)) return e;
    out = CompletionParams{};
    out.endpoint = endpoint;
    // OpenAI's defaults, not llama.cpp's: no top-k, top-p or min-p cut unless asked.
    out.sampling.temperature = 1.0f;
    out.sampling.top_k = 0;
    out.sampling.top_p = 1.0f;
    out.sampling.min_p = 0.0f;
    if (present(body, "model")) {
        if (!body.at("model").is_string()) return wrong_type("model", "a string");
        out.model = body.at("model").get<std::string>();
    }
    if (endpoint == Endpoint::Chat) {
        if (auto e = read_messages(body, out.messages)) return e;
    } else {
        if (auto e = read_prompts(body, out)) return e;
        bool echo = false;
        if (auto e = read_bool(body, "echo", echo)) return e;
        if (echo) return invalid("'echo' is not supported", "echo", "unsupported_value");
        if (present(body, "suffix")) return invalid("'suffix' is not supported", "suffix", "unsupported_value");
    }
    // Asked for but not done would be worse than refused: say so.
    if (present(body, "tools") && !(body.at("tools").is_array() && body.at("tools").empty()))
        return invalid("'tools' (function calling) is not supported", "tools", "unsupported_value");
    if (present(body, "logit_bias") && !(body.at("logit_bias").is_object() && body.at("logit_bias").empty()))
        return invalid("'logit_bias' is not supported", "logit_bias", "unsupported_value");
    if (present(body, "response_format")) {
        const json& format = body.at("response_format");
        if (!format.is_object() || format.value("type", json()) != "text")
            return invalid("'response_format' other than {\"type\": \"text\"} (JSON mode, schemas) is not supported",
                           "response_format", "unsupported_value");
    }
    if (auto e = read_bool(body, "stream", out.stream)) return e;
    if (present(body, "stream_options")) {
        const json& options = body.at("stream_options");
        if (!options.is_object()) return wrong_type("stream_options", "an object");
        if (!out.stream) return invalid("'stream_options' is only allowed with 'stream': true", "stream_options");
        if (auto e = read_bool(options, "include_usage", out.include_usage)) return e;
    }
    if (present(body, "n")) {
        int64_t n = 0;
        if (auto e = read_int(body.at("n"), "n", 1, kMaxSamples, n)) return e;
        out.n = static_cast<int32_t>(n);
    }
    const size_t n_prompts = endpoint == Endpoint::Chat ? 1 : out.prompts.size() + out.prompt_ids.size();
    if (n_prompts * static_cast<size_t>(out.n) > 256)
        return invalid("the request asks for " + std::to_string(n_prompts * static_cast<size_t>(out.n)) +
                           " completions (prompts times n); at most 256 are allowed",
                       "n");
    for (const char* key : {"max_completion_tokens", "max_tokens"}) {
        if (!present(body, key)) continue;
        int64_t max_tokens = 0;
        // The upper bound here is the integer's; the context's is checked once the prompt's length is known.
        if (auto e = read_int(body.at(key), key, 1, std::numeric_limits<int32_t>::max(), max_tokens)) return e;
        out.max_tokens = max_tokens;
        break;
    }
    if (auto e = read_stop(body, out.stop)) return e;
    if (auto e = read_sampling(body, out.sampling)) return e;
    if (auto e = read_logprobs(body, out)) return e;
    out.sampling.n_logprobs = out.logprobs ? std::max(1, out.top_logprobs) : 0;
    if (auto e = read_bool(body, "ignore_eos", out.ignore_eos)) return e;
    return std::nullopt;
}

std::optional<ApiError> parse_tokenize_request(std::string_view text, TokenizeParams& out) {
    json body;
    if (auto e = parse_object(text, body)) return e;
    out = TokenizeParams{};
    if (!present(body, "content")) return invalid("'content' is required", "content", "missing_required_parameter");
    if (!body.at("content").is_string()) return wrong_type("content", "a string");
    out.content = body.at("content").get<std::string>();
    if (auto e = read_bool(body, "add_special", out.add_special)) return e;
    if (auto e = read_bool(body, "parse_special", out.parse_special)) return e;
    if (auto e = read_bool(body, "with_pieces", out.with_pieces)) return e;
    return std::nullopt;
}

std::optional<ApiError> parse_detokenize_request(std::string_view text, int32_t vocab_size,
                                                 std::vector<int32_t>& tokens) {
    json body;
    if (auto e = parse_object(text, body)) return e;
    tokens.clear();
    if (!present(body, "tokens")) return invalid("'tokens' is required", "tokens", "missing_required_parameter");
    const json& v = body.at("tokens");
    if (!v.is_array()) return wrong_type("tokens", "an array of token ids");
    if (vocab_size <= 0) return invalid("the model has no vocabulary", "tokens");
    for (size_t i = 0; i < v.size(); ++i) {
        int64_t id = 0;
        if (auto e = read_int(v[i], "tokens[" + std::to_string(i) + "]", 0, vocab_size - 1, id)) return e;
        tokens.push_back(static_cast<int32_t>(id));
    }
    return std::nullopt;
}

}  // namespace folio::server
