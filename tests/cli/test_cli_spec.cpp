// The speculative-decoding flags on bad values: a clear message naming the
// flag, exit code 1, nothing on stdout, never a crash. The flags are read
// before any model loads; the model cases (a draft of another vocabulary,
// too many draft layers) skip without the test models.
#include <string>

#include "cli_runner.h"
#include "folio_test.h"

using folio_test::run_folio;
using folio_test::shell_quote;

class CliSpecTest : public QObject {
    Q_OBJECT

    static void expect_error(const std::string& args, const std::string& message) {
        const auto r = run_folio(args);
        const std::string what = "folio " + args + ": " + r.err;
        QVERIFY2(r.exit_code == 1, what.c_str());
        QVERIFY2(r.err.find(message) != std::string::npos, ("want '" + message + "' in: " + what).c_str());
        QVERIFY2(r.out.empty(), what.c_str());
    }

private slots:
    void badSpecFlagsAreNamed() {
        const std::string run = "run -m /nonexistent.gguf -p hi ";
        expect_error(run + "--spec eagle", "unknown speculative decoding method 'eagle'");
        expect_error(run + "--spec ngram --draft-max 0", "--draft-max must be between 1 and 64, not 0");
        expect_error(run + "--spec ngram --draft-max many", "option --draft-max expects an integer");
        expect_error(run + "--spec ngram --draft-max 65", "option --draft-max must be between 0 and 64");
        expect_error(run + "--spec ngram --draft-max 3 --draft-min 4", "--draft-min must be between 0 and 3, not 4");
        expect_error(run + "--spec ngram --ngram-min 5 --ngram-max 3", "--ngram-max must be between 5 and 64, not 3");
        expect_error(run + "--draft-max 4", "option --draft-max needs --spec METHOD");
        expect_error(run + "--spec draft", "--spec draft needs the draft model (-md PATH)");
        expect_error(run + "--spec ngram -md other.gguf", "option --model-draft needs --spec draft");
        expect_error(run + "--spec ngram --draft-layers 4", "option --draft-layers needs --spec layer-skip");
        expect_error(run + "--spec ngram --draft-p-min 0.5", "option --draft-p-min needs a draft model");
        expect_error(run + "--spec layer-skip --draft-p-min 1.5", "--draft-p-min");
        expect_error(run + "--spec layer-skip --draft-p-min sure", "--draft-p-min");
        expect_error("chat -m /nonexistent.gguf --spec eagle", "unknown speculative decoding method");
        expect_error("bench -m /nonexistent.gguf --spec ngram", "needs --spec-prompt TEXT or --spec-prompt-file FILE");
    }

    void draftModelsAreChecked() {
        FOLIO_REQUIRE_MODEL(smollm2, folio_test::kSmolLM2);
        FOLIO_REQUIRE_MODEL(gemma, folio_test::kGemma3);
        expect_error("run -m " + shell_quote(gemma) + " -p hi -n 1 --spec draft -md " + shell_quote(smollm2),
                     "the draft model's vocabulary is not the target's: it has 49152 tokens, the target 262144");
        expect_error("run -m " + shell_quote(smollm2) + " -p hi -n 1 --spec draft -md /nonexistent/draft.gguf",
                     "/nonexistent/draft.gguf");
        expect_error("run -m " + shell_quote(smollm2) + " -p hi -n 1 --spec layer-skip --draft-layers 30",
                     "--draft-layers must be between 1 and 29 (the target has 30 layers), not 30");
    }

    // --kv-budget holds the target's KV and the draft model's: int4-self's
    // draft has the target's shapes, so each gets half of 64 MiB (91 blocks
    // of SmolLM2's 360 KiB); without a draft model the target has it all.
    void theKvBudgetHoldsTheDraftsBlocksToo() {
        FOLIO_REQUIRE_MODEL(smollm2, folio_test::kSmolLM2);
        const std::string run = "run -m " + shell_quote(smollm2) + " -p hi -n 1 -t 2 --kv-budget 64 ";
        const auto both = run_folio(run + "--spec int4-self");
        QVERIFY2(both.exit_code == 0, both.err.c_str());
        QVERIFY2(both.err.find("KV cache 91 blocks of 16 tokens (32.0 MiB)") != std::string::npos, both.err.c_str());
        QVERIFY2(both.err.find("KV cache 91 blocks (32.0 MiB)") != std::string::npos, both.err.c_str());
        const auto alone = run_folio(run + "--spec ngram");
        QVERIFY2(alone.err.find("KV cache 182 blocks of 16 tokens (64.0 MiB)") != std::string::npos, alone.err.c_str());
    }

    // bench --workload --spec runs each mode without and with speculation
    // and reports both, with the speed-up and the acceptance.
    void workloadBenchComparesWithAndWithoutSpeculation() {
        FOLIO_REQUIRE_MODEL(smollm2, folio_test::kSmolLM2);
        const auto r = run_folio("bench -m " + shell_quote(smollm2) +
                                 " --workload synthetic --requests 2 --rate inf --prompt-len 24 --output-len 12"
                                 " --modes paged --spec ngram -t 2 --json");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        const auto off = r.out.find("\"mode\": \"paged\"");
        const auto on = r.out.find("\"mode\": \"paged\"", off + 1);
        QVERIFY2(off != std::string::npos && on != std::string::npos, r.out.c_str());
        QVERIFY2(r.out.find("\"spec\": \"off\"", off) < on, r.out.c_str());
        QVERIFY2(r.out.find("\"spec\": \"ngram\"", on) != std::string::npos, r.out.c_str());
        QVERIFY2(r.out.find("\"spec_speedup\": 1.0000", off) < on, r.out.c_str());  // the run without, by itself
        QVERIFY2(r.out.find("\"acceptance_rate\"", on) != std::string::npos, r.out.c_str());
    }
};

FOLIO_TEST_MAIN(CliSpecTest)
#include "test_cli_spec.moc"
