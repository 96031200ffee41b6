// Which template a model gets, and that the choice is visible: the model's
// own when it parses, Gemma's turn format for Gemma models without one,
// ChatML for the rest. Also: hostile input ends in an Error, never a crash.
#include <fstream>
#include <sstream>

#include "folio/chat_template.h"
#include "folio_test.h"

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

folio::ChatTemplateInputs conversation() {
    folio::ChatTemplateInputs in;
    in.messages = {{"system", "Be brief.", ""}, {"user", "Hi", ""}, {"assistant", "Hello.", ""}, {"user", "Bye", ""}};
    in.bos_token = "<bos>";
    in.eos_token = "<eos>";
    return in;
}

}  // namespace

class ChatTemplatePolicyTest : public QObject {
    Q_OBJECT

private slots:
    void modelTemplateIsUsedWhenItParses() {
        auto choice = folio::ChatTemplate::for_model("{% for m in messages %}{{ m.content }}{% endfor %}", "gemma3");
        QVERIFY(!choice.is_fallback);
        QVERIFY(choice.notice.empty());
        auto out = choice.chat_template.render(conversation());
        QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
        QCOMPARE(out.value(), std::string("Be brief.HiHello.Bye"));
    }

    void missingTemplateFallsBackToChatMLVisibly() {
        auto choice = folio::ChatTemplate::for_model("", "llama");
        QVERIFY(choice.is_fallback);
        QCOMPARE(choice.builtin_name, std::string("ChatML"));
        QCOMPARE(choice.notice, std::string("using built-in ChatML template because the model has no chat template"));
        auto out = choice.chat_template.render(conversation());
        QVERIFY(out.ok());
        QCOMPARE(out.value(), std::string("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                                          "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
                                          "<|im_start|>assistant\n"));
    }

    void gemmaWithoutTemplateGetsGemmaTurns() {
        for (const char* arch : {"gemma", "gemma2", "gemma3"}) {
            auto choice = folio::ChatTemplate::for_model("  \n", arch);
            QVERIFY(choice.is_fallback);
            QCOMPARE(choice.builtin_name, std::string("Gemma"));
            QVERIFY2(choice.notice.find("using built-in Gemma template because") == 0, choice.notice.c_str());
            auto out = choice.chat_template.render(conversation());
            QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
            QCOMPARE(out.value(), std::string("<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
                                              "<start_of_turn>model\nHello.<end_of_turn>\n"
                                              "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n"));
        }
    }

    void brokenTemplateFallsBackAndSaysWhy() {
        auto choice = folio::ChatTemplate::for_model("{% for m in messages %}{{ m.content | no_such_filter }}{% endfor %}", "qwen2");
        QVERIFY(choice.is_fallback);
        QCOMPARE(choice.builtin_name, std::string("ChatML"));
        QVERIFY2(choice.notice.find("using built-in ChatML template because the model's chat template cannot be used") == 0, choice.notice.c_str());
        QVERIFY2(choice.notice.find("no filter named 'no_such_filter'") != std::string::npos, choice.notice.c_str());
        QVERIFY(choice.chat_template.render(conversation()).ok());
    }

    void templateThatCannotRenderOneMessageFallsBack() {
        // Parses, but str has no method 'format_map' here: it would fail on every request.
        auto choice = folio::ChatTemplate::for_model("{% for m in messages %}{{ m.content.format_map({}) }}{% endfor %}", "llama");
        QVERIFY(choice.is_fallback);
        QVERIFY2(choice.notice.find("line 1, column") != std::string::npos, choice.notice.c_str());
        QVERIFY(choice.chat_template.render(conversation()).ok());
    }

    void builtinTemplatesMatchResourceFiles() {
        const std::string dir = folio_test::source_dir() + "/resources/templates/";
        QCOMPARE(std::string(folio::builtin_chat_template_source(folio::BuiltinChatTemplate::ChatML)), read_file(dir + "chatml.jinja"));
        QCOMPARE(std::string(folio::builtin_chat_template_source(folio::BuiltinChatTemplate::Gemma)), read_file(dir + "gemma.jinja"));
    }

    void badInputsAreErrorsNotCrashes() {
        folio::ChatTemplate empty;
        QVERIFY(!empty.render(conversation()).ok());

        auto t = folio::ChatTemplate::parse("{{ messages|length }}");
        QVERIFY(t.ok());
        auto in = conversation();
        in.extra_variables_json = "{not json";
        auto r = t->render(in);
        QVERIFY(!r.ok());
        QVERIFY2(r.error().message.find("extra template variables") != std::string::npos, r.error().message.c_str());
        in.extra_variables_json = "[1, 2]";
        QVERIFY(!t->render(in).ok());
        in.extra_variables_json = "{\"messages\": [1, 2, 3]}";
        auto overridden = t->render(in);
        QVERIFY(overridden.ok());
        QCOMPARE(overridden.value(), std::string("3"));
    }

    void everyPrefixOfARealTemplateParsesOrFailsCleanly() {
        // Truncated templates exercise every "unexpected end" path of lexer and parser.
        const std::string sources[] = {
            std::string(folio::builtin_chat_template_source(folio::BuiltinChatTemplate::Gemma)),
            "{%- for k, v in {'a': [1, 2.5, 'x\\'y'], 'b': (3,)}.items() if k != 'c' -%}{{ k ~ v|tojson(indent=2) }}"
            "{%- set ns = namespace(a=1) %}{% set ns.a = ns.a + 1 %}{# c #}{% raw %}{{x}}{% endraw %}"
            "{{ 'abc'[::-1] if ns.a is odd else -ns.a ** 2 // 3 }}{% macro m(a, b=2) %}{{ caller() }}{% endmacro %}"
            "{% call m(1) %}z{% endcall %}{% filter upper %}q{% endfilter %}{%- endfor %}",
        };
        int parsed = 0;
        for (const std::string& source : sources) {
            for (size_t n = 0; n <= source.size(); ++n) {
                auto t = folio::ChatTemplate::parse(std::string_view(source).substr(0, n));
                if (!t.ok()) {
                    QVERIFY2(!t.error().message.empty(), "empty error message");
                    continue;
                }
                ++parsed;
                (void)t->render(conversation());
            }
        }
        QVERIFY(parsed > 2);
    }

    void moduloTakesTheDivisorsSignAndNeverOverflows() {
        // Python's results (python3 -c "print((-2**63) % 3372036854775, ...)"); the first
        // overflowed as a - (a // b) * b, found by the fuzzer.
        auto t = folio::ChatTemplate::parse(
            "{{ (-9223372036854775807 - 1) % 3372036854775 }}|{{ (-9223372036854775807 - 1) % -1 }}|"
            "{{ 7 % -3 }}|{{ -7 % 3 }}|{{ 9223372036854775807 % -9223372036854775807 }}|{{ 7.5 % -2 }}");
        QVERIFY(t.ok());
        auto out = t->render(conversation());
        QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
        QCOMPARE(out.value(), std::string("1886279107267|0|-2|2|0|-0.5"));
    }

    void strftimeNowFormatsTheCurrentDate() {
        auto t = folio::ChatTemplate::parse("{{ strftime_now('%Y') }}|{{ strftime_now('%d %b %Y')|length }}");
        QVERIFY(t.ok());
        auto out = t->render(conversation());
        QVERIFY(out.ok());
        QCOMPARE(out.value().size(), size_t(7));
        QVERIFY(out.value().substr(0, 2) == "20");
        QCOMPARE(out.value().substr(4), std::string("|11"));
    }
};

FOLIO_TEST_MAIN(ChatTemplatePolicyTest)
#include "chat_template_policy_test.moc"
