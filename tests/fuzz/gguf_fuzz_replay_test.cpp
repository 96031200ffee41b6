// Replays the GGUF fuzzer's seed corpus and every input that once crashed it
// (tests/fuzz/regressions/gguf/) through the same entry point, in ordinary
// builds without libFuzzer.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "folio_test.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

size_t replay_directory(const std::string& dir) {
    size_t n = 0;
    if (!std::filesystem::is_directory(dir)) return 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (!entry.is_regular_file() || entry.path().filename().string().front() == '.') continue;
        std::ifstream in(entry.path(), std::ios::binary);
        std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        (void)LLVMFuzzerTestOneInput(bytes.data(), bytes.size());  // must return, not crash
        ++n;
    }
    return n;
}

}  // namespace

class GgufFuzzReplayTest : public QObject {
    Q_OBJECT
private slots:
    void seedCorpusReplays() {
        const size_t n = replay_directory(folio_test::source_dir() + "/tests/fuzz/corpus/gguf");
        QVERIFY2(n >= 4, "expected the seed corpus in tests/fuzz/corpus/gguf");
    }

    void regressionsReplay() {
        (void)replay_directory(folio_test::source_dir() + "/tests/fuzz/regressions/gguf");
        QVERIFY(true);  // reaching here means none crashed
    }

    void truncatedSeedsReplay() {
        // Every prefix of each seed: the cheap half of what the fuzzer explores.
        const std::string dir = folio_test::source_dir() + "/tests/fuzz/corpus/gguf";
        size_t inputs = 0;
        for (const auto& entry : std::filesystem::directory_iterator(dir)) {
            std::ifstream in(entry.path(), std::ios::binary);
            std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            for (size_t n = 0; n < bytes.size(); n += 1 + n / 64) {
                std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + std::ptrdiff_t(n));
                (void)LLVMFuzzerTestOneInput(prefix.data(), prefix.size());
                ++inputs;
            }
        }
        QVERIFY(inputs > 0);
    }
};

FOLIO_TEST_MAIN(GgufFuzzReplayTest)
#include "gguf_fuzz_replay_test.moc"
