// read_workload_jsonl(): every accepted field spelling, blank lines, sorting
// by arrival; each kind of malformed line is refused with FILE:LINE.
#include <folio_test.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "folio/workload.h"

namespace {

// A trace file in a fresh temporary folder, removed with the object.
class TraceFile {
public:
    explicit TraceFile(const std::string& content) {
        dir_ = std::filesystem::temp_directory_path() /
               ("folio_workload_test_" + std::to_string(reinterpret_cast<uintptr_t>(this)) + "_" +
                std::to_string(counter()++));
        std::filesystem::create_directories(dir_);
        path_ = (dir_ / "trace.jsonl").string();
        std::ofstream(path_, std::ios::binary) << content;
    }
    ~TraceFile() {
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
    }
    TraceFile(const TraceFile&) = delete;
    TraceFile& operator=(const TraceFile&) = delete;
    const std::string& path() const { return path_; }

private:
    static int& counter() {
        static int value = 0;
        return value;
    }
    std::filesystem::path dir_;
    std::string path_;
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

class WorkloadJsonlTest : public QObject {
    Q_OBJECT

private slots:
    void readsEveryFieldSpelling() {
        const TraceFile file(
            "{\"arrival_s\": 0.5, \"prompt_tokens\": 128, \"output_tokens\": 64}\n"
            "\n"
            "   \t\n"
            "{\"timestamp\": 1.25, \"prompt\": \"Tell me a story.\", \"max_tokens\": 32, \"id\": \"extra\"}\r\n"
            "{\"prompt\": \"Hi\", \"prompt_tokens\": 3, \"output_tokens\": 16.0}\n"
            "{\"arrival_s\": 2, \"prompt_tokens\": 7, \"output_tokens\": 1}");  // no final newline
        const auto trace = folio::read_workload_jsonl(file.path());
        QVERIFY2(trace.ok(), trace.ok() ? "" : trace.error().message.c_str());
        QCOMPARE(trace->size(), size_t{4});
        // Sorted by arrival: the line without one (0) comes first.
        const auto& r = *trace;
        QCOMPARE(r[0].arrival_s, 0.0);
        QCOMPARE(r[0].prompt, std::string("Hi"));
        QCOMPARE(r[0].prompt_tokens, 3);
        QCOMPARE(r[0].output_tokens, 16);
        QCOMPARE(r[1].arrival_s, 0.5);
        QCOMPARE(r[1].prompt_tokens, 128);
        QCOMPARE(r[1].output_tokens, 64);
        QVERIFY(r[1].prompt.empty());
        QCOMPARE(r[2].arrival_s, 1.25);
        QCOMPARE(r[2].prompt, std::string("Tell me a story."));
        QCOMPARE(r[2].prompt_tokens, 0);  // text only: the bench tokenizes it
        QCOMPARE(r[2].output_tokens, 32);
        QCOMPARE(r[3].arrival_s, 2.0);
        QCOMPARE(r[3].output_tokens, 1);
    }

    void sortingKeepsFileOrderForEqualArrivals() {
        const TraceFile file(
            "{\"arrival_s\": 1, \"prompt_tokens\": 1, \"output_tokens\": 1}\n"
            "{\"arrival_s\": 0, \"prompt_tokens\": 2, \"output_tokens\": 1}\n"
            "{\"arrival_s\": 1, \"prompt_tokens\": 3, \"output_tokens\": 1}\n"
            "{\"arrival_s\": 0, \"prompt_tokens\": 4, \"output_tokens\": 1}\n");
        const auto trace = folio::read_workload_jsonl(file.path());
        QVERIFY(trace.ok());
        const std::vector<int32_t> order = {(*trace)[0].prompt_tokens, (*trace)[1].prompt_tokens,
                                            (*trace)[2].prompt_tokens, (*trace)[3].prompt_tokens};
        QVERIFY(order == (std::vector<int32_t>{2, 4, 1, 3}));
    }

    void malformedLinesNameFileAndLine() {
        struct Case {
            std::string bad_line;
            std::string says;
        };
        const std::vector<Case> cases = {
            {"{\"prompt_tokens\": 5, \"output_tokens\": ", "not valid JSON"},
            {"{prompt_tokens: 5}", "not valid JSON"},
            {"{\"prompt_tokens\": 5, \"output_tokens\": 5} {}", "not valid JSON"},
            {"[1, 2]", "expected a JSON object"},
            {"\"text\"", "expected a JSON object"},
            {"{\"prompt_tokens\": 5}", "needs \"output_tokens\""},
            {"{\"output_tokens\": 5}", "needs \"prompt\""},
            {"{\"prompt_tokens\": -5, \"output_tokens\": 5}", "\"prompt_tokens\" must be an integer >= 1, got -5"},
            {"{\"prompt_tokens\": 0, \"output_tokens\": 5}", "\"prompt_tokens\" must be an integer >= 1"},
            {"{\"prompt_tokens\": 1.5, \"output_tokens\": 5}", "\"prompt_tokens\" must be an integer >= 1, got 1.5"},
            {"{\"prompt_tokens\": 5000000000, \"output_tokens\": 5}", "\"prompt_tokens\" must be an integer"},
            {"{\"prompt_tokens\": 5, \"max_tokens\": \"lots\"}", "\"max_tokens\" must be an integer >= 1, got \"lots\""},
            {"{\"prompt\": 42, \"output_tokens\": 5}", "\"prompt\" must be a string"},
            {"{\"prompt\": \"\", \"output_tokens\": 5}", "\"prompt\" is empty"},
            {"{\"timestamp\": -1, \"prompt_tokens\": 5, \"output_tokens\": 5}", "\"timestamp\" must be a number of seconds >= 0"},
            {"{\"arrival_s\": \"soon\", \"prompt_tokens\": 5, \"output_tokens\": 5}", "\"arrival_s\" must be a number"},
        };
        for (const Case& c : cases) {
            // Line 1 good, 2 blank, 3 good, 4 bad, 5 good: the error names line 4.
            const TraceFile file("{\"prompt_tokens\": 5, \"output_tokens\": 5}\n\n"
                                 "{\"prompt_tokens\": 6, \"output_tokens\": 6}\n" +
                                 c.bad_line + "\n{\"prompt_tokens\": 7, \"output_tokens\": 7}\n");
            const auto trace = folio::read_workload_jsonl(file.path());
            QVERIFY2(!trace.ok(), c.bad_line.c_str());
            const std::string& message = trace.error().message;
            QVERIFY2(message.starts_with("workload: " + file.path() + ":4: "), message.c_str());
            QVERIFY2(contains(message, c.says), (message + "  -- wanted: " + c.says).c_str());
        }
    }

    void missingFileIsAnError() {
        const auto trace = folio::read_workload_jsonl("/nonexistent/folio/trace.jsonl");
        QVERIFY(!trace.ok());
        QVERIFY2(contains(trace.error().message, "workload: /nonexistent/folio/trace.jsonl: cannot open"),
                 trace.error().message.c_str());
    }

    void folderIsAnError() {
        const TraceFile file("{}\n");
        const std::string folder = std::filesystem::path(file.path()).parent_path().string();
        const auto trace = folio::read_workload_jsonl(folder);
        QVERIFY(!trace.ok());
        QVERIFY2(contains(trace.error().message, "workload: " + folder + ": is a folder"), trace.error().message.c_str());
    }

    void fileWithoutRequestsIsAnError() {
        const TraceFile file("\n  \n\n");
        const auto trace = folio::read_workload_jsonl(file.path());
        QVERIFY(!trace.ok());
        QVERIFY2(contains(trace.error().message, "no requests"), trace.error().message.c_str());
    }
};

FOLIO_TEST_MAIN(WorkloadJsonlTest)
#include "workload_jsonl_test.moc"
