// The built-in templates, embedded from resources/templates/*.jinja (a unit
// test checks the two copies match), and the policy that picks one when a
// model brings no usable template of its own.
#include <string>

#include "folio/chat_template.h"

namespace folio {
namespace {

// resources/templates/chatml.jinja
constexpr std::string_view kChatML = R"jinja(
{#- Folio's built-in ChatML format, the fallback for models whose file carries
    no chat template (or one Folio cannot run). -#}
{%- for message in messages -%}
    {{- '<|im_start|>' ~ message.role ~ '\n' ~ message.content ~ '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{- '<|im_start|>assistant\n' -}}
{%- endif -%}
)jinja";

// resources/templates/gemma.jinja
constexpr std::string_view kGemma = R"jinja(
{#- Folio's built-in Gemma turn format, for Gemma models whose file carries no
    chat template. System messages are folded into the next user turn (Gemma has
    no system role) and the assistant speaks as "model". -#}
{{- bos_token -}}
{%- set ns = namespace(system='') -%}
{%- for message in messages -%}
    {%- if message.role == 'system' -%}
        {%- set ns.system = ns.system ~ (message.content | trim) ~ '\n\n' -%}
    {%- else -%}
        {%- set role = 'model' if message.role == 'assistant' else message.role -%}
        {{- '<start_of_turn>' ~ role ~ '\n' -}}
        {%- if role == 'user' and ns.system -%}
            {{- ns.system -}}
            {%- set ns.system = '' -%}
        {%- endif -%}
        {{- (message.content | trim) ~ '<end_of_turn>\n' -}}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{- '<start_of_turn>model\n' -}}
{%- endif -%}
)jinja";

bool is_blank(std::string_view text) {
    for (char c : text)
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return false;
    return true;
}

}  // namespace

std::string_view builtin_chat_template_source(BuiltinChatTemplate which) {
    // substr(1): the raw strings open with a newline so the template text starts on its own line.
    return (which == BuiltinChatTemplate::Gemma ? kGemma : kChatML).substr(1);
}

std::string_view builtin_chat_template_name(BuiltinChatTemplate which) {
    return which == BuiltinChatTemplate::Gemma ? "Gemma" : "ChatML";
}

ChatTemplateChoice ChatTemplate::for_model(std::string_view template_source, std::string_view architecture) {
    ChatTemplateChoice choice;
    std::string reason;
    if (is_blank(template_source)) {
        reason = "the model has no chat template";
    } else {
        Result<ChatTemplate> parsed = ChatTemplate::parse(template_source);
        if (!parsed.ok()) {
            reason = "the model's chat template cannot be used (" + parsed.error().message + ")";
        } else {
            // A template that parses but cannot render one user message (an unsupported
            // method, say) would fail on every request; better to know now.
            ChatTemplateInputs probe;
            probe.messages.push_back({"user", "Hello", ""});
            Result<std::string> rendered = parsed->render(probe);
            if (rendered.ok()) {
                choice.chat_template = std::move(parsed).value();
                return choice;
            }
            reason = "the model's chat template cannot be used (" + rendered.error().message + ")";
        }
    }
    // Gemma has no system role and calls the assistant "model"; ChatML would be a foreign format to it.
    const bool gemma = architecture == "gemma" || architecture == "gemma2" || architecture == "gemma3" ||
                       architecture == "gemma3_text";
    const BuiltinChatTemplate which = gemma ? BuiltinChatTemplate::Gemma : BuiltinChatTemplate::ChatML;
    Result<ChatTemplate> builtin = ChatTemplate::parse(builtin_chat_template_source(which));
    if (builtin.ok()) choice.chat_template = std::move(builtin).value();
    choice.is_fallback = true;
    choice.builtin_name = std::string(builtin_chat_template_name(which));
    choice.notice = "using built-in " + choice.builtin_name + " template because " + reason;
    return choice;
}

}  // namespace folio
