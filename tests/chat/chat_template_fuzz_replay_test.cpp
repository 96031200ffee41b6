// Replays saved fuzzer finds (tests/data/chat/fuzz/) through the fuzzer's
// entry point, so a fixed crash stays fixed in every build; under the "fuzz"
// preset the sanitizers watch each replay.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "folio_test.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

class ChatTemplateFuzzReplayTest : public QObject {
    Q_OBJECT

private slots:
    void savedInputsRunCleanly() {
        const std::filesystem::path dir = folio_test::data_path("chat/fuzz");
        std::vector<std::filesystem::path> files;
        for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path());
        std::sort(files.begin(), files.end());
        QVERIFY2(files.size() >= 3, "tests/data/chat/fuzz holds the saved fuzzer inputs");
        for (const auto& file : files) {
            std::ifstream in(file, std::ios::binary);
            std::stringstream bytes;
            bytes << in.rdbuf();
            const std::string data = bytes.str();
            QCOMPARE(LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size()), 0);
        }
    }
};

FOLIO_TEST_MAIN(ChatTemplateFuzzReplayTest)
#include "chat_template_fuzz_replay_test.moc"
