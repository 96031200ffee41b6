// folio chat (and run's and bench's everyday output) as a user meets them,
// on SmolLM2: a conversation longer than the context loses its oldest turns
// and says so (a tiny -c), or fails with advice under --overflow stop;
// /help lists the commands instead of going to the model; a reply cut at -n
// says so; Ctrl+C stops the reply and a second one (or one at the prompt)
// ends the program; a long prompt's prefill shows its progress; bench names
// a context a user would choose.
#include <regex>

#include "chat_process.h"
#include "cli_runner.h"
#include "folio_test.h"

using folio_test::ChatProcess;
using folio_test::run_folio;
using folio_test::shell_quote;

namespace {

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

size_t count(const std::string& haystack, const std::string& needle) {
    size_t n = 0;
    for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
    return n;
}

}  // namespace

class CliChatTest : public QObject {
    Q_OBJECT

private slots:
    void long_conversation_drops_its_oldest_turns() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        // 160 tokens of context: the third turn no longer fits with the first two.
        ChatProcess chat({"-m", path, "-c", "160", "--temp", "0", "-n", "24", "-t", "2"});
        QVERIFY(chat.started());
        const char* turns[] = {"Tell me a fact about the ocean, in one sentence please.",
                               "Now tell me a fact about mountains, in one sentence please.",
                               "And one fact about deserts, in one sentence please.",
                               "Finally one fact about forests, in one sentence please."};
        for (size_t i = 0; i < 4; ++i) {
            chat.type(std::string(turns[i]) + "\n");
            QVERIFY2(chat.wait_for([&] { return count(chat.err(), "tok/s") == i + 1 || contains(chat.err(), "/reset starts over"); }, 120),
                     chat.err().c_str());
        }
        QVERIFY2(!contains(chat.err(), "no longer fits"), chat.err().c_str());
        QVERIFY2(contains(chat.err(), "oldest messages are left out"), chat.err().c_str());
        QVERIFY2(contains(chat.err(), "context of 160"), chat.err().c_str());
        QCOMPARE(count(chat.err(), "tok/s"), size_t(4));  // every turn got a reply
        chat.type("/exit\n");
        QCOMPARE(chat.wait_exit(30), 0);
    }

    void overflow_stop_fails_with_advice() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        ChatProcess chat({"-m", path, "-c", "64", "--temp", "0", "-n", "8", "-t", "2", "--overflow", "stop"});
        chat.type("Please write out, in full and with every detail you know, the history of the city of Rome from "
                  "its founding to the present day, with dates, names and places.\n");
        QVERIFY2(chat.wait_for([&] { return contains(chat.err(), "/reset starts over"); }, 60), chat.err().c_str());
        QVERIFY2(contains(chat.err(), "the context holds 64"), chat.err().c_str());
        QVERIFY2(contains(chat.err(), "--overflow drop-oldest"), chat.err().c_str());
        chat.type("/exit\n");
        QCOMPARE(chat.wait_exit(30), 0);
        auto bad = run_folio("chat -m " + shell_quote(path) + " --overflow sideways");
        QCOMPARE(bad.exit_code, 1);
        QVERIFY2(contains(bad.err, "--overflow wants drop-oldest, stop, truncate, rolling or sink-window"), bad.err.c_str());
    }

    void help_lists_commands_and_a_cut_reply_says_so() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        ChatProcess chat({"-m", path, "--temp", "0", "-n", "5", "-t", "2"});
        chat.type("/help\n/frobnicate\n");
        QVERIFY2(chat.wait_for([&] { return contains(chat.err(), "unknown command '/frobnicate'"); }, 60), chat.err().c_str());
        QVERIFY2(contains(chat.err(), "/reset") && contains(chat.err(), "/exit") && contains(chat.err(), "Ctrl+C"),
                 chat.err().c_str());
        QVERIFY2(chat.out().empty(), chat.out().c_str());  // nothing went to the model
        chat.type("Count from one to one hundred in words, please.\n");
        QVERIFY2(chat.wait_for([&] { return contains(chat.err(), "tok/s"); }, 60), chat.err().c_str());
        QVERIFY2(contains(chat.err(), "cut at -n 5 tokens"), chat.err().c_str());
        chat.close_stdin();  // Ctrl+D
        QCOMPARE(chat.wait_exit(30), 0);
    }

    void ctrl_c_stops_the_reply_then_ends_the_program() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        ChatProcess real({"-m", path, "--temp", "0", "-n", "4000", "-t", "2"});
        real.type("Write a very long story about a dragon.\n");
        QVERIFY2(real.wait_for([&] { return real.out().size() >= 40; }, 90), real.err().c_str());
        real.signal(SIGINT);
        QVERIFY2(real.wait_for([&] { return contains(real.err(), "stopped (Ctrl+C)"); }, 30), real.err().c_str());
        // Still running: it takes the next line.
        real.type("/help\n");
        QVERIFY2(real.wait_for([&] { return contains(real.err(), "commands:"); }, 30), real.err().c_str());
        // At the prompt, Ctrl+C ends the program (130: killed by SIGINT, as a shell says).
        real.signal(SIGINT);
        QCOMPARE(real.wait_exit(30), 130);

        // Twice during a reply: the first stops it, the second ends the program.
        ChatProcess twice({"-m", path, "--temp", "0", "-n", "4000", "-t", "2"});
        twice.type("Write a very long story about a dragon.\n");
        QVERIFY2(twice.wait_for([&] { return twice.out().size() >= 40; }, 90), twice.err().c_str());
        twice.signal(SIGINT);
        ::usleep(20000);  // two signals at once would be delivered as one
        twice.signal(SIGINT);
        QCOMPARE(twice.wait_exit(30), 130);
    }

    void long_prompt_shows_prefill_progress() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        std::string prompt;
        for (int i = 0; i < 150; ++i) prompt += "The quick brown fox jumps over the lazy dog. ";
        // Small steps on one thread: the prefill takes seconds, long enough to be shown.
        auto r = run_folio("run -m " + shell_quote(path) + " -n 1 --temp 0 -t 1 -b 16 -p " + shell_quote(prompt));
        QCOMPARE(r.exit_code, 0);
        const std::regex line(R"(folio: prompt (\d+)/(\d+) tokens \()");
        std::vector<std::pair<int, int>> seen;
        for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), line); it != std::sregex_iterator(); ++it)
            seen.push_back({std::stoi((*it)[1]), std::stoi((*it)[2])});
        QVERIFY2(seen.size() >= 2, r.err.c_str());
        QVERIFY2(seen.front().first < seen.front().second, r.err.c_str());   // part way
        QCOMPARE(seen.back().first, seen.back().second);                      // then all of it
        QVERIFY2(seen.back().second > 1000, r.err.c_str());
        // A short prompt stays quiet.
        auto quiet = run_folio("run -m " + shell_quote(path) + " -n 1 --temp 0 -p Hi");
        QCOMPARE(quiet.exit_code, 0);
        QVERIFY2(!contains(quiet.err, "folio: prompt 1/"), quiet.err.c_str());
        QVERIFY2(!std::regex_search(quiet.err, line), quiet.err.c_str());
    }

    void bench_names_a_round_context() {
        FOLIO_REQUIRE_MODEL(path, folio_test::kSmolLM2);
        // pp512 + tg1 needs 514 tokens: the load line says the context it runs in, 4096.
        auto r = run_folio("bench -m " + shell_quote(path) + " -p 512 -n 1 -r 1 -t 2");
        QCOMPARE(r.exit_code, 0);
        QVERIFY2(!contains(r.err, "context 514"), r.err.c_str());
        QVERIFY2(contains(r.err, "context 4096"), r.err.c_str());
    }
};

FOLIO_TEST_MAIN(CliChatTest)
#include "test_cli_chat.moc"
