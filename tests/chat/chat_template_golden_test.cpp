// Renders every case in tests/data/chat/goldens.json (made by
// tools/make_template_goldens.py with Python jinja2 configured as
// transformers configures it) and compares byte for byte; error cases must
// fail with a message containing the expected words. A golden that prints
// strftime_now(fmt) holds "<<strftime_now FMT>>" where the date was; the
// test puts today's date there (in local time, as transformers does).
#include <chrono>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "folio/chat_template.h"
#include "folio_test.h"

namespace {

using Json = nlohmann::ordered_json;

Json load_goldens() {
    std::ifstream in(folio_test::data_path("chat/goldens.json"), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return Json::parse(text.str(), nullptr, false);
}

std::string today(const std::string& format) {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm local{};
#ifdef _WIN32
    localtime_s(&local, &now);
#else
    localtime_r(&now, &local);
#endif
    char buf[128];
    return std::string(buf, std::strftime(buf, sizeof buf, format.c_str(), &local));
}

// The golden's expected text with its date placeholders filled in.
std::string expected_text(const Json& c) {
    std::string expected = c["expected"].get<std::string>();
    if (!c.contains("today_format")) return expected;
    const std::string format = c["today_format"].get<std::string>();
    const std::string placeholder = "<<strftime_now " + format + ">>";
    const std::string date = today(format);
    for (size_t at = expected.find(placeholder); at != std::string::npos; at = expected.find(placeholder, at + date.size()))
        expected.replace(at, placeholder.size(), date);
    return expected;
}

folio::ChatTemplateInputs inputs_for(const Json& goldens, const Json& c) {
    folio::ChatTemplateInputs inputs;
    const Json& messages = c.contains("messages") ? c["messages"] : goldens["conversations"][c["conversation"].get<std::string>()];
    for (const Json& m : messages) {
        folio::ChatMessage message;
        message.role = m["role"].get<std::string>();
        Json extra = Json::object();
        // Content given as a list of parts (multimodal) travels as an extra field, which replaces it.
        if (m["content"].is_string()) message.content = m["content"].get<std::string>();
        for (auto it = m.begin(); it != m.end(); ++it)
            if (it.key() != "role" && (it.key() != "content" || !it.value().is_string())) extra[it.key()] = it.value();
        if (!extra.empty()) message.extra_fields_json = extra.dump();
        inputs.messages.push_back(std::move(message));
    }
    inputs.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    inputs.bos_token = c["bos_token"].get<std::string>();
    inputs.eos_token = c["eos_token"].get<std::string>();
    if (!c["variables"].empty()) inputs.extra_variables_json = c["variables"].dump();
    return inputs;
}

// Why one case does not match, or "" when it does.
std::string check_case(const Json& goldens, const Json& c) {
    const std::string source = goldens["templates"][c["template"].get<std::string>()].get<std::string>();
    folio::Result<folio::ChatTemplate> parsed = folio::ChatTemplate::parse(source);
    folio::Result<std::string> rendered = parsed.ok() ? parsed->render(inputs_for(goldens, c)) : folio::Result<std::string>(parsed.error());
    if (c.contains("error_contains")) {
        const std::string needle = c["error_contains"].get<std::string>();
        if (rendered.ok()) return "expected an error containing '" + needle + "', got output " + Json(rendered.value()).dump();
        if (rendered.error().message.find(needle) == std::string::npos)
            return "error message '" + rendered.error().message + "' lacks '" + needle + "'";
        return "";
    }
    if (!rendered.ok()) return "failed: " + rendered.error().message;
    const std::string expected = expected_text(c);
    if (rendered.value() != expected)
        return "output differs\n     got:      " + Json(rendered.value()).dump() + "\n     expected: " + Json(expected).dump();
    return "";
}

}  // namespace

class ChatTemplateGoldenTest : public QObject {
    Q_OBJECT

private slots:
    void rendersEveryGoldenCaseLikeTransformers() {
        const Json goldens = load_goldens();
        QVERIFY2(goldens.is_object() && goldens.contains("cases"), "tests/data/chat/goldens.json missing or not JSON");
        int failures = 0, renders = 0, errors = 0;
        for (const Json& c : goldens["cases"]) {
            const std::string why = check_case(goldens, c);
            (c.contains("error_contains") ? errors : renders)++;
            if (why.empty()) continue;
            ++failures;
            std::fprintf(stderr, "  case %s: %s\n", c["name"].get<std::string>().c_str(), why.c_str());
        }
        std::printf("  %d rendering cases, %d error cases, %d failures\n", renders, errors, failures);
        QVERIFY(renders >= 100);
        QVERIFY(errors >= 20);
        QCOMPARE(failures, 0);
    }

    // The fallbacks stand in for these families when a file has no template: on plain
    // conversations they must give the family's own prompt wherever its template renders one.
    void builtinFallbacksRenderTheirFamiliesPlainConversations() {
        const Json goldens = load_goldens();
        const std::pair<const char*, folio::BuiltinChatTemplate> families[] = {
            {"gemma2", folio::BuiltinChatTemplate::Gemma},
            {"gemma3", folio::BuiltinChatTemplate::Gemma},
            {"qwen3", folio::BuiltinChatTemplate::ChatML}};
        int compared = 0, failures = 0;
        for (const auto& [family, which] : families) {
            folio::Result<folio::ChatTemplate> builtin = folio::ChatTemplate::parse(folio::builtin_chat_template_source(which));
            QVERIFY(builtin.ok());
            for (const Json& c : goldens["cases"]) {
                if (c["template"] != family || !c.contains("expected") || c.contains("messages")) continue;
                ++compared;
                folio::Result<std::string> rendered = builtin->render(inputs_for(goldens, c));
                if (rendered.ok() && rendered.value() == expected_text(c)) continue;
                ++failures;
                std::fprintf(stderr, "  built-in %s on case %s: %s\n", std::string(folio::builtin_chat_template_name(which)).c_str(),
                             c["name"].get<std::string>().c_str(),
                             rendered.ok() ? Json(rendered.value()).dump().c_str() : rendered.error().message.c_str());
            }
        }
        QVERIFY(compared >= 30);
        QCOMPARE(failures, 0);
    }

    void errorsNameLineAndColumn() {
        auto parsed = folio::ChatTemplate::parse("ok\n{{ 1 +\n}}");
        QVERIFY(!parsed.ok());
        QVERIFY2(parsed.error().message.find("line 3, column 1") != std::string::npos, parsed.error().message.c_str());

        auto t = folio::ChatTemplate::parse("line\n  {{ messages[0].content + 5 }}");
        QVERIFY(t.ok());
        folio::ChatTemplateInputs in;
        in.messages.push_back({"user", "hi", ""});
        auto r = t->render(in);
        QVERIFY(!r.ok());
        QVERIFY2(r.error().message.find("line 2, column ") != std::string::npos, r.error().message.c_str());
    }
};

FOLIO_TEST_MAIN(ChatTemplateGoldenTest)
#include "chat_template_golden_test.moc"
