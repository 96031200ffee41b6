// The chat templates of the real test models, read through the model loader:
// SmolLM2's own template renders what transformers renders, and the Gemma 3
// file (which carries no template) gets the visible Gemma fallback.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "folio/chat_template.h"
#include "folio/model.h"
#include "folio_test.h"

namespace {

using Json = nlohmann::ordered_json;

Json load_goldens() {
    std::ifstream in(folio_test::data_path("chat/goldens.json"), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return Json::parse(text.str(), nullptr, false);
}

// Renders the golden cases made for `golden_template` with `chat_template`; returns the failures.
int render_golden_cases(const folio::ChatTemplate& chat_template, const Json& goldens, const std::string& golden_template, int& checked) {
    int failures = 0;
    for (const Json& c : goldens["cases"]) {
        if (c["template"] != golden_template || !c.contains("expected") || c.contains("messages")) continue;
        folio::ChatTemplateInputs in;
        for (const Json& m : goldens["conversations"][c["conversation"].get<std::string>()])
            in.messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>(), ""});
        in.add_generation_prompt = c["add_generation_prompt"].get<bool>();
        in.bos_token = c["bos_token"].get<std::string>();
        in.eos_token = c["eos_token"].get<std::string>();
        auto out = chat_template.render(in);
        ++checked;
        if (out.ok() && out.value() == c["expected"].get<std::string>()) continue;
        ++failures;
        std::fprintf(stderr, "  case %s: %s\n", c["name"].get<std::string>().c_str(),
                     out.ok() ? ("got " + Json(out.value()).dump()).c_str() : out.error().message.c_str());
    }
    return failures;
}

}  // namespace

class ChatTemplateModelTest : public QObject {
    Q_OBJECT

private slots:
    void smolLM2TemplateFromTheFileRendersLikeTransformers() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        auto model = folio::load_model_description(path);
        QVERIFY2(model.ok(), model.ok() ? "" : model.error().message.c_str());
        const Json goldens = load_goldens();
        QVERIFY(goldens.is_object());
        QCOMPARE(model->chat_template, goldens["templates"]["smollm2"].get<std::string>());

        auto choice = folio::ChatTemplate::for_model(model->chat_template, model->hparams.architecture);
        QVERIFY2(!choice.is_fallback, choice.notice.c_str());
        int checked = 0;
        QCOMPARE(render_golden_cases(choice.chat_template, goldens, "smollm2", checked), 0);
        QVERIFY(checked >= 12);
    }

    void gemma3FileWithoutTemplateGetsGemmaFallback() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kGemma3);
        auto model = folio::load_model_description(path);
        QVERIFY2(model.ok(), model.ok() ? "" : model.error().message.c_str());
        QVERIFY(model->chat_template.empty());
        QCOMPARE(model->hparams.architecture, std::string("gemma3"));

        auto choice = folio::ChatTemplate::for_model(model->chat_template, model->hparams.architecture);
        QVERIFY(choice.is_fallback);
        QCOMPARE(choice.notice, std::string("using built-in Gemma template because the model has no chat template"));
        int checked = 0;
        QCOMPARE(render_golden_cases(choice.chat_template, load_goldens(), "gemma_builtin", checked), 0);
        QVERIFY(checked >= 12);
    }
};

FOLIO_TEST_MAIN(ChatTemplateModelTest)
#include "chat_template_model_test.moc"
