// The public face of the interpreter: parse once, render many times. Inputs
// become the variables transformers passes to a template (messages, tools,
// documents, add_generation_prompt, bos_token, eos_token, extra kwargs), and
// interpreter errors become folio::Error values with a line and column.
#include "folio/chat_template.h"

#include <new>
#include <nlohmann/json.hpp>

#include "chat/evaluator.h"
#include "chat/lexer.h"
#include "chat/parser.h"

namespace folio {
namespace chat {

struct CompiledTemplate {
    std::string source;
    Body body;
};

namespace {

Value from_json(const nlohmann::ordered_json& j, int depth = 0) {
    if (depth > 128) fail("input JSON nested too deeply");
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null: return Value::none();
        case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const uint64_t u = j.get<uint64_t>();
            return u > static_cast<uint64_t>(INT64_MAX) ? Value::number(static_cast<double>(u)) : Value::integer(static_cast<int64_t>(u));
        }
        case nlohmann::ordered_json::value_t::number_float: return Value::number(j.get<double>());
        case nlohmann::ordered_json::value_t::string: return Value::string(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            Array items;
            for (const auto& item : j) items.push_back(from_json(item, depth + 1));
            return Value::array(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            Object obj;
            for (auto it = j.begin(); it != j.end(); ++it) obj.set(it.key(), from_json(it.value(), depth + 1));
            return Value::object(std::move(obj));
        }
        default: return Value::none();
    }
}

// Parses `text` as a JSON object; `what` names it in the error.
Result<Object> json_object(const std::string& text, const std::string& what) {
    nlohmann::ordered_json j;
    try {
        j = nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        return make_error(what + " is not valid JSON: " + e.what());
    }
    if (!j.is_object()) return make_error(what + " must be a JSON object");
    try {
        Value v = from_json(j);
        return v.as_object();
    } catch (const TemplateError& e) {
        return make_error(what + ": " + e.message);
    }
}

std::string where(const TemplateError& e) {
    if (!e.has_pos) return "";
    return " at line " + std::to_string(e.pos.line) + ", column " + std::to_string(e.pos.column);
}

}  // namespace
}  // namespace chat

Result<ChatTemplate> ChatTemplate::parse(std::string_view source) {
    auto compiled = std::make_shared<chat::CompiledTemplate>();
    compiled->source = std::string(source);
    try {
        compiled->body = chat::parse_template(chat::tokenize(source));
    } catch (const chat::TemplateError& e) {
        return make_error("chat template syntax error" + chat::where(e) + ": " + e.message);
    } catch (const std::bad_alloc&) {
        return make_error("chat template too large to parse");
    } catch (const std::exception& e) {
        return make_error(std::string("chat template syntax error: ") + e.what());
    }
    ChatTemplate result;
    result.compiled_ = std::move(compiled);
    return result;
}

const std::string& ChatTemplate::source() const {
    static const std::string empty;
    return compiled_ ? compiled_->source : empty;
}

Result<std::string> ChatTemplate::render(const ChatTemplateInputs& inputs, const ChatTemplateLimits& limits) const {
    if (!compiled_) return make_error("no chat template loaded");
    chat::Object variables;
    chat::Array messages;
    for (size_t i = 0; i < inputs.messages.size(); ++i) {
        const ChatMessage& m = inputs.messages[i];
        chat::Object message;
        message.set("role", chat::Value::string(m.role));
        message.set("content", chat::Value::string(m.content));
        if (!m.extra_fields_json.empty()) {
            Result<chat::Object> extra = chat::json_object(m.extra_fields_json, "extra fields of message " + std::to_string(i));
            if (!extra.ok()) return extra.error();
            for (auto& [k, v] : extra->entries) message.set(k, std::move(v));
        }
        messages.push_back(chat::Value::object(std::move(message)));
    }
    variables.set("messages", chat::Value::array(std::move(messages)));
    variables.set("tools", chat::Value::none());
    variables.set("documents", chat::Value::none());
    variables.set("add_generation_prompt", chat::Value::boolean(inputs.add_generation_prompt));
    variables.set("bos_token", chat::Value::string(inputs.bos_token));
    variables.set("eos_token", chat::Value::string(inputs.eos_token));
    if (!inputs.extra_variables_json.empty()) {
        Result<chat::Object> extra = chat::json_object(inputs.extra_variables_json, "extra template variables");
        if (!extra.ok()) return extra.error();
        for (auto& [k, v] : extra->entries) variables.set(k, std::move(v));
    }
    try {
        chat::Evaluator evaluator(std::move(variables), limits);
        return evaluator.render(compiled_->body);
    } catch (const chat::TemplateError& e) {
        return make_error("chat template error" + chat::where(e) + ": " + e.message);
    } catch (const std::bad_alloc&) {
        return make_error("chat template ran out of memory while rendering");
    } catch (const std::exception& e) {
        return make_error(std::string("chat template error: ") + e.what());
    }
}

}  // namespace folio
