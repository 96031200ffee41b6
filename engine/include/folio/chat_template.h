// Chat templates: turn a conversation into the exact prompt text a model was
// trained on. A ChatTemplate is the model's Jinja template (GGUF
// tokenizer.chat_template or tokenizer_config.json), run by Folio's own
// interpreter for the subset of Jinja that chat templates use, rendering
// byte for byte what Hugging Face transformers renders. When a model has no
// template, or one Folio cannot run, for_model() picks a built-in one and
// says so in words the CLI and GUI show to the user.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "folio/error.h"

namespace folio {

struct ChatMessage {
    std::string role;     // "system", "user", "assistant", "tool"
    std::string content;
    // Room to grow: tool calls and other per-message fields, as a JSON object
    // merged into the message the template sees ("" = none).
    std::string extra_fields_json;
};

struct ChatTemplateInputs {
    std::vector<ChatMessage> messages;
    bool add_generation_prompt = true;
    std::string bos_token;
    std::string eos_token;
    // A JSON object whose members become template variables (tools,
    // documents, enable_thinking, ...); "" = none. `tools` and `documents`
    // are None unless given here, as in transformers.
    std::string extra_variables_json;
};

// Bounds on one render, so that a broken or hostile template ends in an
// Error instead of a hang or an exhausted memory.
struct ChatTemplateLimits {
    size_t max_output_bytes = size_t{16} << 20;   // also caps every string built on the way
    uint64_t max_loop_iterations = 1'000'000;      // all loops of one render together
    int max_call_depth = 64;                       // nested macro calls
};

namespace chat {
struct CompiledTemplate;
}
struct ChatTemplateChoice;

class ChatTemplate {
public:
    ChatTemplate() = default;  // renders an error until assigned a parsed template

    // Errors name the line and column of the problem.
    static Result<ChatTemplate> parse(std::string_view source);

    // Never throws and never hangs: loops, output size and macro recursion
    // are capped, and a template's raise_exception() becomes the Error.
    Result<std::string> render(const ChatTemplateInputs& inputs, const ChatTemplateLimits& limits = {}) const;

    const std::string& source() const;

    // The model's own template when it has one that parses; otherwise Gemma's
    // turn format for gemma/gemma2/gemma3 architectures and ChatML for the
    // rest, with a notice saying which and why.
    static ChatTemplateChoice for_model(std::string_view template_source, std::string_view architecture);

private:
    std::shared_ptr<const chat::CompiledTemplate> compiled_;
};

enum class BuiltinChatTemplate { ChatML, Gemma };

// The Jinja source of a built-in template (also in resources/templates/).
std::string_view builtin_chat_template_source(BuiltinChatTemplate which);
std::string_view builtin_chat_template_name(BuiltinChatTemplate which);  // "ChatML", "Gemma"

struct ChatTemplateChoice {
    ChatTemplate chat_template;
    bool is_fallback = false;
    std::string builtin_name;  // set when is_fallback
    // For the user when is_fallback, e.g. "using built-in ChatML template
    // because the model has no chat template"; empty otherwise.
    std::string notice;
};

}  // namespace folio
