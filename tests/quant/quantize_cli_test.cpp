// folio quantize / imatrix / perplexity --kl-divergence as a user runs them:
// bad input gets a message and exit code 1 (never a signal), a run prints
// plain progress lines when stderr is not a terminal and a summary on stdout,
// and the three verbs chain: imatrix -> quantize --imatrix -> KLD vs the base.
#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "folio_test.h"
#include "quant_fixture.h"

using folio_test::run_folio;
using folio_test::shell_quote;
using quant_fixture::temp_path;

class QuantizeCliTest : public QObject {
    Q_OBJECT
private:
    std::string source_ = temp_path("cli-tiny-llama.gguf");
    std::string text_ = temp_path("cli-text.txt");

private slots:
    void initTestCase() {
        QVERIFY(quant_fixture::write_dummy_gguf("tiny-llama", source_).ok());
        std::ofstream out(text_);
        for (int i = 0; i < 300; ++i) out << "Some calibration and evaluation words, number " << i << ". ";
    }
    void cleanupTestCase() {
        std::filesystem::remove(source_);
        std::filesystem::remove(text_);
    }

    void badInputIsNamed() {
        auto r = run_folio("quantize -m " + shell_quote(source_) + " -o /tmp/x.gguf --type Q3_XYZ");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("unknown --type 'Q3_XYZ'") != std::string::npos && r.err.find("Q4_K_M") != std::string::npos,
                 r.err.c_str());
        r = run_folio("quantize -m " + shell_quote(source_));
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("-o OUT.gguf") != std::string::npos, r.err.c_str());
        r = run_folio("quantize -m /no/such/model.gguf -o " + shell_quote(temp_path("never.gguf")));
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("does not exist") != std::string::npos, r.err.c_str());
        QVERIFY(!std::filesystem::exists(temp_path("never.gguf")));
        r = run_folio("quantize -m " + shell_quote(source_) + " -o /tmp/x.gguf --imatrix a --calibrate b");
        QCOMPARE(r.exit_code, 1);
        r = run_folio("quantize -m " + shell_quote(source_) + " -o /tmp/x.gguf --awq");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("--awq searches its scales on calibration activations: give --calibrate TEXT") != std::string::npos,
                 r.err.c_str());
        r = run_folio("quantize -m " + shell_quote(source_) + " -o /tmp/x.gguf --imatrix a.gguf --awq");
        QCOMPARE(r.exit_code, 1);
        r = run_folio("quantize -m " + shell_quote(source_) + " -o /tmp/x.gguf --calibrate default --awq --awq-rows 0");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("--awq-rows must be between 1 and") != std::string::npos, r.err.c_str());
        r = run_folio("quantize -m " + shell_quote(source_) + " -o /tmp/x.gguf --calibrate default --awq --awq-grid many");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("--awq-grid expects an integer, got 'many'") != std::string::npos, r.err.c_str());
        r = run_folio("quantize -m " + shell_quote(source_) + " -o /tmp/x.gguf --calibrate default --awq-grid 5");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("give --awq too") != std::string::npos, r.err.c_str());
        r = run_folio("quantize -m " + shell_quote(source_) + " -o /tmp/x.gguf --calibrate " + shell_quote(text_) +
                      " --awq --awq-groups qkv,mlp");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("unknown AWQ group 'mlp'") != std::string::npos, r.err.c_str());
        r = run_folio("imatrix -m " + shell_quote(source_) + " -o /tmp/x.gguf --awq-rows 9");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("give --awq too") != std::string::npos, r.err.c_str());
        r = run_folio("imatrix -m " + shell_quote(source_));
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("-o FILE") != std::string::npos, r.err.c_str());
        r = run_folio("perplexity -m " + shell_quote(source_) + " --kl-divergence");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("--kl-divergence-base") != std::string::npos, r.err.c_str());
        r = run_folio("perplexity -m " + shell_quote(source_) + " --kl-divergence --kl-divergence-base " + shell_quote(text_));
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("not a base-logits file") != std::string::npos, r.err.c_str());
    }

    void imatrixQuantizeAndKlDivergenceChain() {
        const std::string imatrix = temp_path("cli.imatrix.gguf"), out = temp_path("cli.Q4_K_M.gguf"),
                          base = temp_path("cli.base.kld");
        auto r = run_folio("imatrix -m " + shell_quote(source_) + " -f " + shell_quote(text_) + " -o " + shell_quote(imatrix) +
                           " -c 128 --chunks 2 -t 2");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        QVERIFY2(r.out.find("14 matrices, 2 chunks of 128 tokens") != std::string::npos, r.out.c_str());

        r = run_folio("quantize -m " + shell_quote(source_) + " -o " + shell_quote(out) + " --imatrix " + shell_quote(imatrix) +
                      " --validate " + shell_quote(text_) + " --validate-chunks 1 -t 2");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        QVERIFY2(r.err.find("folio quantize: quantizing 100%") != std::string::npos ||
                     r.err.find("folio quantize: done 100%") != std::string::npos, r.err.c_str());
        QVERIFY(r.err.find('\r') == std::string::npos);  // no terminal: plain lines
        for (const char* part : {"bits per weight", "quality", "mean KLD", "report"})
            QVERIFY2(r.out.find(part) != std::string::npos, r.out.c_str());
        QVERIFY(std::filesystem::exists(out) && std::filesystem::exists(out + ".quality.json"));

        r = run_folio("perplexity -m " + shell_quote(source_) + " -f " + shell_quote(text_) + " -c 128 --chunks 2 -t 2 "
                      "--kl-divergence-base " + shell_quote(base));
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        r = run_folio("perplexity -m " + shell_quote(out) + " -c 128 -t 2 --kl-divergence-base " + shell_quote(base) +
                      " --kl-divergence");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        for (const char* part : {"Mean PPL(Q)", "Mean PPL(base)", "Mean    KLD", "99.0%   KLD", "Same top p"})
            QVERIFY2(r.out.find(part) != std::string::npos, r.out.c_str());
        for (const std::string& p : {imatrix, out, out + ".quality.json", base}) std::filesystem::remove(p);
    }

    void awqRunReportsItsGroups() {
        const std::string out = temp_path("cli.awq.gguf");
        auto r = run_folio("quantize -m " + shell_quote(source_) + " -o " + shell_quote(out) + " --calibrate " +
                           shell_quote(text_) + " --calibrate-chunks 2 --awq --awq-rows 64 --awq-grid 4 --validate-chunks 0 -t 2");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        QVERIFY2(r.out.find("groups scaled (mean alpha") != std::string::npos, r.out.c_str());
        QVERIFY2(r.err.find("AWQ group 8/8") != std::string::npos, r.err.c_str());

        // imatrix --awq keeps the sample in the imatrix file; quantize --imatrix FILE --awq uses it.
        const std::string imatrix = temp_path("cli.awq.imatrix.gguf");
        r = run_folio("imatrix -m " + shell_quote(source_) + " -f " + shell_quote(text_) + " -o " + shell_quote(imatrix) +
                      " -c 128 --chunks 2 -t 2 --awq --awq-rows 32");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        QVERIFY2(r.out.find("AWQ activations of 8 inputs (up to 32 rows each)") != std::string::npos, r.out.c_str());
        r = run_folio("quantize -m " + shell_quote(source_) + " -o " + shell_quote(out) + " --imatrix " + shell_quote(imatrix) +
                      " --awq --awq-grid 4 --awq-clip --validate-chunks 0 -t 2");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        QVERIFY2(r.out.find("groups scaled (mean alpha") != std::string::npos, r.out.c_str());
        for (const std::string& p : {out, out + ".quality.json", imatrix}) std::filesystem::remove(p);
    }
};

FOLIO_TEST_MAIN(QuantizeCliTest)
#include "quantize_cli_test.moc"
