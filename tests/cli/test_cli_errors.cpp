// The CLI's contract on bad input: a clear message on stderr, a non-zero exit
// code, nothing on stdout, never a crash (exit codes >= 128 are signals).
#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "folio_test.h"

using folio_test::run_folio;
using folio_test::shell_quote;

class CliErrorsTest : public QObject {
    Q_OBJECT

private slots:
    void no_verb_prints_help_and_fails() {
        auto r = run_folio("");
        QCOMPARE(r.exit_code, 1);
        QVERIFY(r.out.find("verbs:") != std::string::npos);
    }

    void help_and_version_succeed() {
        auto r = run_folio("--help");
        QCOMPARE(r.exit_code, 0);
        QVERIFY(r.out.find("inspect") != std::string::npos);
        QVERIFY(r.out.find("tokenize") != std::string::npos);
        r = run_folio("--version");
        QCOMPARE(r.exit_code, 0);
        QVERIFY(r.out.rfind("folio ", 0) == 0);
        r = run_folio("inspect --help");
        QCOMPARE(r.exit_code, 0);
        QVERIFY(r.out.find("--ctx-size") != std::string::npos);
    }

    void unknown_verb_and_flag_are_named() {
        auto r = run_folio("frobnicate");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("unknown verb 'frobnicate'") != std::string::npos, r.err.c_str());
        r = run_folio("inspect --frob");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("unknown option '--frob'") != std::string::npos, r.err.c_str());
        r = run_folio("inspect -m");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("needs a value") != std::string::npos, r.err.c_str());
        r = run_folio("inspect -m x -c abc");
        QCOMPARE(r.exit_code, 1);
    }

    void missing_model_is_named() {
        auto r = run_folio("inspect -m /nonexistent/model.gguf");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("/nonexistent/model.gguf") != std::string::npos, r.err.c_str());
        QVERIFY(r.out.empty());
        r = run_folio("inspect");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("-m") != std::string::npos, r.err.c_str());
    }

    void corrupt_file_is_an_error_not_a_crash() {
        const auto path = std::filesystem::temp_directory_path() / "folio_cli_corrupt.gguf";
        {
            std::ofstream out(path, std::ios::binary);
            out << "GGUF\x03\x00\x00\x00" << std::string(40, '\xff');  // v3, absurd counts, truncated
        }
        auto r = run_folio("inspect -m " + shell_quote(path.string()));
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(!r.err.empty(), "expected an error message");
        r = run_folio("tokenize -m " + shell_quote(path.string()) + " -p hi");
        QCOMPARE(r.exit_code, 1);
        {
            std::ofstream out(path, std::ios::binary);
            out << "not a model at all";
        }
        r = run_folio("inspect -m " + shell_quote(path.string()));
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("GGUF") != std::string::npos || r.err.find("gguf") != std::string::npos, r.err.c_str());
        std::filesystem::remove(path);
    }

    void every_verb_answers_version() {
        for (const char* verb : {"run", "chat", "bench", "inspect", "tokenize", "perplexity"}) {
            auto r = run_folio(std::string(verb) + " --version");
            QVERIFY2(r.exit_code == 0, verb);
            QVERIFY2(r.out.rfind("folio ", 0) == 0, (std::string(verb) + ": " + r.out).c_str());
        }
        // A value that happens to read "--version" is still a value.
        auto r = run_folio("tokenize -m /nonexistent/model.gguf -p --version");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("/nonexistent/model.gguf") != std::string::npos, r.err.c_str());
    }

    // Bad values are refused before the model loads (a missing model would be the error otherwise),
    // in the spelling the user typed.
    void bad_values_are_named_before_the_model_loads() {
        const std::string missing = " -m /nonexistent/model.gguf";
        auto r = run_folio("chat" + missing + " -n 0");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("-n (--n-predict) must be between 1 and") != std::string::npos, r.err.c_str());
        r = run_folio("run" + missing + " -p hi -n 0");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("-n (--n-predict) must be at least 1") != std::string::npos, r.err.c_str());
        r = run_folio("run" + missing + " -p hi --n-predict=-5");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("option --n-predict must be between -1 and") != std::string::npos, r.err.c_str());
        r = run_folio("run" + missing + " -p hi -c 0");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("-c (--ctx-size)") != std::string::npos, r.err.c_str());
        r = run_folio("run" + missing + " -p hi --kv-fraction 3");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("--kv-fraction wants a number") != std::string::npos, r.err.c_str());
        r = run_folio("run" + missing + " -p hi --swap-space -1");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("--swap-space wants a number") != std::string::npos, r.err.c_str());
        r = run_folio("chat" + missing + " --overflow sideways");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("--overflow wants") != std::string::npos, r.err.c_str());
        r = run_folio("run" + missing + " -p hi --overflow drop-oldest");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("--overflow wants stop, truncate, rolling or sink-window") != std::string::npos, r.err.c_str());
        r = run_folio("run" + missing + " -p hi --overflow sink-window --sinks -1");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("--sinks") != std::string::npos, r.err.c_str());
        r = run_folio("perplexity" + missing + " -f x --stream sideways");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("--stream wants sink-window or rolling") != std::string::npos, r.err.c_str());
        r = run_folio("chat" + missing + " -s -3");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("-s (--seed)") != std::string::npos, r.err.c_str());
    }

    void chat_help_lists_its_commands_and_the_shared_temperature() {
        auto r = run_folio("chat --help");
        QCOMPARE(r.exit_code, 0);
        for (const char* needle : {"/help", "/reset", "/exit", "Ctrl+C", "--overflow", "(default 0.8, as in the studio)"})
            QVERIFY2(r.out.find(needle) != std::string::npos, needle);
    }

    void tokenize_needs_exactly_one_text_source() {
        auto r = run_folio("tokenize -m x");
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.find("-p TEXT or -f FILE") != std::string::npos, r.err.c_str());
        r = run_folio("tokenize -m x -p a -f b");
        QCOMPARE(r.exit_code, 1);
    }
};

FOLIO_TEST_MAIN(CliErrorsTest)
#include "test_cli_errors.moc"
