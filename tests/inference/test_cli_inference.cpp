// folio run / chat / perplexity / bench as a user runs them: greedy output on
// stdout only, clear errors with exit code 1, the PPL line, bench's JSON.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_runner.h"
#include "folio/backend.h"
#include "folio_test.h"

using folio_test::run_folio;
using folio_test::shell_quote;

namespace {

std::string temp_file(const std::string& name, const std::string& content) {
    const auto path = std::filesystem::temp_directory_path() / ("folio_inference_" + name);
    std::ofstream(path, std::ios::binary) << content;
    return path.string();
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

class InferenceCliTest : public QObject {
    Q_OBJECT
private slots:
    void runStreamsOnlyTheGeneratedText() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        auto r = run_folio("run -m " + shell_quote(path) + " -p 'The capital of France is' -n 8 --temp 0 -t 2");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        QVERIFY2(r.out.rfind(" Paris.", 0) == 0, r.out.c_str());  // no prompt echo, greedy answer
        QVERIFY(r.out.find("capital") == std::string::npos);
        QVERIFY(r.err.find("tok/s") != std::string::npos);
    }

    // --f32-activations reaches the backend: Gemma's 4-bit file then continues
    // as llama.cpp does its dequantized F32 copy (gemma3_q4_k_m_f32.json,
    // prompt "capital"), where the default 8-bit activations part from it
    // after "France." (" It is the capital of the country ...").
    void runWithF32Activations() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kGemma3);
        auto r = run_folio("run -m " + shell_quote(path) +
                           " -p 'The capital of France is' -n 12 --temp 0 -t 2 --f32-activations");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        QVERIFY2(r.err.find("F32 activations") != std::string::npos, r.err.c_str());
        QVERIFY2(r.out.rfind(" the capital of the country of France. It is the largest", 0) == 0, r.out.c_str());
    }

    void runChatOnGemmaUsesTheBuiltInTemplate() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kGemma3);
        auto r = run_folio("run -m " + shell_quote(path) + " -p 'What is the capital of France?' -n 4 --temp 0 --chat");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        QVERIFY2(r.err.find("built-in Gemma template") != std::string::npos, r.err.c_str());
        QVERIFY(!r.out.empty());
    }

    void badPromptsAreClearErrors() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        auto empty = run_folio("run -m " + shell_quote(path) + " -p ''");
        QCOMPARE(empty.exit_code, 1);
        QVERIFY2(empty.err.find("prompt is empty") != std::string::npos, empty.err.c_str());
        std::string long_prompt;
        for (int i = 0; i < 100; ++i) long_prompt += "hello ";
        auto too_long = run_folio("run -m " + shell_quote(path) + " -c 32 -p " + shell_quote(long_prompt));
        QCOMPARE(too_long.exit_code, 1);
        QVERIFY2(too_long.err.find("the context holds 32") != std::string::npos, too_long.err.c_str());
        auto no_model = run_folio("run -p hello");
        QCOMPARE(no_model.exit_code, 1);
        auto bad_temp = run_folio("run -m " + shell_quote(path) + " -p hi --temp x");
        QCOMPARE(bad_temp.exit_code, 1);
        QVERIFY(bad_temp.err.find("--temp") != std::string::npos);
    }

    void perplexityPrintsThePplLine() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        std::string text;
        for (int i = 0; i < 20; ++i)
            text += "The quick brown fox jumps over the lazy dog. A journey of a thousand miles begins with one step. ";
        const std::string file = temp_file("ppl.txt", text);
        auto r = run_folio("perplexity -m " + shell_quote(path) + " -f " + shell_quote(file) + " -c 64 -t 2");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        const size_t at = r.out.rfind("PPL = ");
        QVERIFY2(at != std::string::npos, r.out.c_str());
        const double ppl = std::atof(r.out.c_str() + at + 6);
        // Repeated text: the second half of each chunk is predictable.
        QVERIFY2(ppl > 1.0 && ppl < 20.0, r.out.c_str());
        auto too_short = run_folio("perplexity -m " + shell_quote(path) + " -f " + shell_quote(file) + " -c 4096");
        QCOMPARE(too_short.exit_code, 1);
        // One stream through a context a quarter of the text's: it slides in
        // place (sink-window) or recomputes (rolling), and the repeated text
        // stays predictable either way.
        for (const char* mode : {"sink-window", "rolling"}) {
            auto stream = run_folio("perplexity -m " + shell_quote(path) + " -f " + shell_quote(file) +
                                    " -c 128 -t 2 --stream " + mode);
            QVERIFY2(stream.exit_code == 0, stream.err.c_str());
            QVERIFY2(stream.out.find("overflows 0") == std::string::npos, stream.out.c_str());
            const size_t p = stream.out.rfind("PPL = ");
            QVERIFY2(p != std::string::npos, stream.out.c_str());
            QVERIFY2(std::atof(stream.out.c_str() + p + 6) > 1.0 && std::atof(stream.out.c_str() + p + 6) < 20.0,
                     stream.out.c_str());
        }
    }

    // --overflow sink-window: a generation 4x the context goes on to its end.
    void runGoesPastTheContextWithASinkWindow() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        auto r = run_folio("run -m " + shell_quote(path) +
                           " -p 'Once upon a time' -n 512 -c 128 --temp 0 --ignore-eos -t 2 --overflow sink-window");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        QVERIFY2(r.err.find("generated 512 tokens") != std::string::npos, r.err.c_str());
        auto stopped = run_folio("run -m " + shell_quote(path) + " -p 'Once upon a time' -n 512 -c 128 --temp 0 --ignore-eos -t 2");
        QVERIFY2(stopped.exit_code == 0, stopped.err.c_str());
        QVERIFY2(stopped.err.find("stop: length") != std::string::npos && stopped.err.find("generated 512") == std::string::npos,
                 stopped.err.c_str());
    }

    // --device: a GPU that is not there is said so and the CPU runs; a
    // device that does not exist is an error.
    void deviceFallsBackOrFailsClearly() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        auto bad = run_folio("run -m " + shell_quote(path) + " -p Hi -n 2 --device tpu");
        QVERIFY2(bad.exit_code != 0 && bad.err.find("unknown device 'tpu'") != std::string::npos, bad.err.c_str());
        if (folio::cuda_device_count() > 0) return;  // a GPU machine runs it there
        auto r = run_folio("run -m " + shell_quote(path) + " -p 'The capital of France is' -n 4 --temp 0 --device cuda");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        QVERIFY2(r.err.find("running on the CPU") != std::string::npos, r.err.c_str());
        QVERIFY2(r.out.rfind(" Paris", 0) == 0, r.out.c_str());
    }

    // --load-format dummy: a named shape with random weights runs (on the
    // CPU, generated in memory); an unknown shape or type is a clear error.
    void dummyModelsRunAndBadOnesFail() {
        auto r = run_folio("bench -m tiny-llama --load-format dummy --dummy-type q8_0 -p 32 -n 8 -r 1 --json");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        const auto j = nlohmann::json::parse(r.out);
        QVERIFY2(j["tg"]["mean_tps"].get<double>() > 0, r.out.c_str());
        auto shape = run_folio("run -m llama-9000 --load-format dummy -p Hi -n 1");
        QVERIFY2(shape.exit_code != 0 && shape.err.find("llama-3-8b") != std::string::npos, shape.err.c_str());
        auto type = run_folio("run -m tiny-llama --load-format dummy --dummy-type q3_x -p Hi -n 1");
        QVERIFY2(type.exit_code != 0 && type.err.find("unknown weight type") != std::string::npos, type.err.c_str());
        auto blocks = run_folio("run -m smollm2-135m --load-format dummy --dummy-type q4_k -p Hi -n 1");
        QVERIFY2(blocks.exit_code != 0 && blocks.err.find("256-element blocks") != std::string::npos, blocks.err.c_str());
    }

    void benchJson() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        auto r = run_folio("bench -m " + shell_quote(path) + " -p 32 -n 4 -r 1 -t 2 --json");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        const auto j = nlohmann::json::parse(r.out, nullptr, false);
        QVERIFY2(!j.is_discarded(), r.out.c_str());
        QCOMPARE(j["threads"].get<int>(), 2);
        QCOMPARE(j["pp"]["n_tokens"].get<int>(), 32);
        QCOMPARE(j["tg"]["n_tokens"].get<int>(), 4);
        QVERIFY(j["pp"]["mean_tps"].get<double>() > 0 && j["tg"]["mean_tps"].get<double>() > 0);
    }

    void runParallelBatchesSeveralPrompts() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        // Greedy copies of one prompt, batched, all continue as the prompt alone does.
        auto r = run_folio("run -m " + shell_quote(path) + " -p 'The capital of France is' -n 8 --temp 0 -t 2 --parallel 3");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        for (const char* header : {"--- [1] length\n Paris.", "--- [2] length\n Paris.", "--- [3] length\n Paris."})
            QVERIFY2(r.out.find(header) != std::string::npos, r.out.c_str());
        QVERIFY2(r.err.find("3 sequences") != std::string::npos, r.err.c_str());
        const std::string prompts = temp_file("prompts.txt", "The capital of France is\n\nOne, two, three,\n");
        auto f = run_folio("run -m " + shell_quote(path) + " -f " + shell_quote(prompts) + " -n 4 --temp 0 -t 2");
        QVERIFY2(f.exit_code == 0, f.err.c_str());
        QVERIFY2(f.out.find("--- [1]") != std::string::npos && f.out.find("--- [2]") != std::string::npos &&
                     f.out.find("--- [3]") == std::string::npos,
                 f.out.c_str());
        auto budget = run_folio("run -m " + shell_quote(path) + " -p Hi -n 2 -t 2 --kv-fraction 0.01");
        QVERIFY2(budget.exit_code == 0 && budget.err.find("KV cache") != std::string::npos, budget.err.c_str());
        auto greedy_budget = run_folio("run -m " + shell_quote(path) + " -p Hi -n 2 --kv-fraction 2");
        QCOMPARE(greedy_budget.exit_code, 1);
        QVERIFY2(greedy_budget.err.find("--kv-fraction") != std::string::npos, greedy_budget.err.c_str());
        auto bad_swap = run_folio("run -m " + shell_quote(path) + " -p Hi -n 2 --swap-space lots");
        QCOMPARE(bad_swap.exit_code, 1);
        QVERIFY2(bad_swap.err.find("--swap-space wants a number") != std::string::npos, bad_swap.err.c_str());
        auto bad_penalty = run_folio("run -m " + shell_quote(path) + " -p Hi -n 2 --presence-penalty 3");
        QCOMPARE(bad_penalty.exit_code, 1);
        QVERIFY2(bad_penalty.err.find("--presence-penalty wants a number between -2 and 2") != std::string::npos,
                 bad_penalty.err.c_str());
        // The penalties reach the sampler: greedy counting stops repeating its digits' tokens.
        auto counted = run_folio("run -m " + shell_quote(path) + " -p 'Count: 1, 2, 3,' -n 8 --temp 0 -t 2");
        auto penalized = run_folio("run -m " + shell_quote(path) +
                                   " -p 'Count: 1, 2, 3,' -n 8 --temp 0 -t 2 --frequency-penalty 1.5");
        QVERIFY2(counted.exit_code == 0 && penalized.exit_code == 0, penalized.err.c_str());
        QVERIFY2(counted.out != penalized.out, counted.out.c_str());
        auto tiny = run_folio("run -m " + shell_quote(path) + " -p Hi -n 2 --kv-budget 0");
        QCOMPARE(tiny.exit_code, 1);
        auto missing = run_folio("run -m " + shell_quote(path) + " -f /nonexistent/prompts.txt");
        QCOMPARE(missing.exit_code, 1);
        QVERIFY2(missing.err.find("cannot open") != std::string::npos, missing.err.c_str());
    }

    void benchWorkloadComparesTheModes() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        auto r = run_folio("bench -m " + shell_quote(path) +
                           " --workload synthetic --requests 6 --rate inf --prompt-len 8:16 --output-len 4:8 -t 2 --json");
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        const auto j = nlohmann::json::parse(r.out);
        QCOMPARE(j["modes"].size(), size_t{3});
        for (const auto& mode : j["modes"]) {
            QCOMPARE(mode["failures"].get<int>(), 0);
            QVERIFY(mode["output_tokens"].get<int>() >= 6 * 4);
            QVERIFY(mode["kv_holding"].get<double>() > 0.0);
        }
        // Reserving whole contexts leaves most of the reserved KV empty.
        QVERIFY(j["modes"][0]["kv_holding"].get<double>() > j["modes"][2]["kv_holding"].get<double>());
        auto bad = run_folio("bench -m " + shell_quote(path) + " --workload synthetic --modes paged,fast");
        QCOMPARE(bad.exit_code, 1);
        QVERIFY2(bad.err.find("unknown mode 'fast'") != std::string::npos, bad.err.c_str());
        const std::string trace = temp_file("trace.jsonl", "{\"prompt\": \"Hello\", \"output_tokens\": 3}\n{oops\n");
        auto broken = run_folio("bench -m " + shell_quote(path) + " --workload " + shell_quote(trace));
        QCOMPARE(broken.exit_code, 1);
        QVERIFY2(broken.err.find(":2:") != std::string::npos, broken.err.c_str());
    }

    void chatTakesTurnsFromAPipe() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        const std::string input = temp_file("chat_in.txt", "What is 2+2?\n/reset\nWhat is 2+2?\n/exit\n");
        const std::string out = input + ".out", err = input + ".err";
        const std::string cmd = shell_quote(FOLIO_CLI_PATH) + " chat -m " + shell_quote(path) +
                                " --temp 0 -n 16 -t 2 <" + shell_quote(input) + " >" + shell_quote(out) + " 2>" +
                                shell_quote(err);
        QCOMPARE(std::system(cmd.c_str()), 0);
        const std::string reply = read_file(out);
        // Two answers, the same after /reset (greedy from the same start).
        QVERIFY2(reply.size() > 2 && reply.size() % 2 == 0, reply.c_str());
        QCOMPARE(reply.substr(0, reply.size() / 2), reply.substr(reply.size() / 2));
        QVERIFY(read_file(err).find("conversation cleared") != std::string::npos);
    }
};

FOLIO_TEST_MAIN(InferenceCliTest)
#include "test_cli_inference.moc"
