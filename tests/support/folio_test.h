// Test suites are Qt Test classes. In builds without Qt (FOLIO_WITH_QT=OFF,
// the GPU machine) the same sources compile against the small subset below,
// and cmake/FolioTests.cmake generates the "<file>.moc" that lists the
// private slots and runs them. Use only: QVERIFY, QVERIFY2, QCOMPARE, QSKIP,
// QFAIL, initTestCase/cleanupTestCase, no data-driven (_data) slots.
//
// Every test file ends with:
//   FOLIO_TEST_MAIN(ClassName)
//   #include "file_name.moc"
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#if FOLIO_TEST_WITH_QT

#include <QtTest/QtTest>
#define FOLIO_TEST_MAIN(Class) QTEST_APPLESS_MAIN(Class)

#else  // ---- lite runner ------------------------------------------------------

#include <cstdio>
#include <sstream>
#include <type_traits>
#include <utility>
#include <vector>

class QObject {
public:
    virtual ~QObject() = default;
};
// The generated main() calls the private slots, as QTest does through moc.
#define Q_OBJECT friend int main();
#define slots

namespace folio_test_lite {

enum class Outcome { Pass, Fail, Skip };
inline Outcome& current() {
    static Outcome outcome = Outcome::Pass;
    return outcome;
}

template <typename T, typename = void>
struct Printable : std::false_type {};
template <typename T>
struct Printable<T, std::void_t<decltype(std::declval<std::ostream&>() << std::declval<const T&>())>>
    : std::true_type {};

template <typename T>
std::string show(const T& v) {
    if constexpr (Printable<T>::value) {
        std::ostringstream out;
        out << v;
        return out.str();
    } else {
        return "<value>";
    }
}

template <typename A, typename B>
bool compare(const A& actual, const B& expected, const char* actual_expr, const char* expected_expr,
             const char* file, int line) {
    if (actual == expected) return true;
    std::fprintf(stderr, "FAIL!  : Compared values are not the same\n   Actual   (%s): %s\n   Expected (%s): %s\n   Loc: [%s(%d)]\n",
                 actual_expr, show(actual).c_str(), expected_expr, show(expected).c_str(), file, line);
    current() = Outcome::Fail;
    return false;
}

inline void fail(const char* message, const char* file, int line) {
    std::fprintf(stderr, "FAIL!  : %s\n   Loc: [%s(%d)]\n", message, file, line);
    current() = Outcome::Fail;
}

template <typename Class>
struct Slot {
    const char* name;
    void (Class::*method)();
};

template <typename Class, size_t N>
int run(const char* class_name, const Slot<Class> (&slots_)[N]) {
    Class suite;
    int failed = 0, passed = 0, skipped = 0;
    std::printf("********* Start testing of %s *********\n", class_name);
    for (const auto& slot : slots_) {
        current() = Outcome::Pass;
        (suite.*slot.method)();
        switch (current()) {
            case Outcome::Pass: ++passed; std::printf("PASS   : %s::%s()\n", class_name, slot.name); break;
            case Outcome::Skip: ++skipped; std::printf("SKIP   : %s::%s()\n", class_name, slot.name); break;
            case Outcome::Fail: ++failed; std::printf("FAIL!  : %s::%s()\n", class_name, slot.name); break;
        }
        std::fflush(stdout);
    }
    std::printf("Totals: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed == 0 ? 0 : 1;
}

}  // namespace folio_test_lite

#define QVERIFY(cond)                                                              \
    do {                                                                           \
        if (!(cond)) {                                                             \
            folio_test_lite::fail("'" #cond "' returned FALSE.", __FILE__, __LINE__); \
            return;                                                                \
        }                                                                          \
    } while (0)
#define QVERIFY2(cond, message)                                                        \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            std::string folio_msg_ = std::string("'" #cond "' returned FALSE. (") + (message) + ")"; \
            folio_test_lite::fail(folio_msg_.c_str(), __FILE__, __LINE__);             \
            return;                                                                    \
        }                                                                              \
    } while (0)
#define QCOMPARE(actual, expected)                                                                   \
    do {                                                                                             \
        if (!folio_test_lite::compare((actual), (expected), #actual, #expected, __FILE__, __LINE__)) \
            return;                                                                                  \
    } while (0)
#define QFAIL(message)                                          \
    do {                                                        \
        folio_test_lite::fail((message), __FILE__, __LINE__);   \
        return;                                                 \
    } while (0)
#define QSKIP(message)                                                   \
    do {                                                                 \
        std::printf("SKIP   : %s\n", static_cast<const char*>(message)); \
        folio_test_lite::current() = folio_test_lite::Outcome::Skip;     \
        return;                                                          \
    } while (0)
#define FOLIO_TEST_MAIN(Class)

#endif  // FOLIO_TEST_WITH_QT

// ---- shared helpers ------------------------------------------------------------
namespace folio_test {

inline std::string source_dir() { return FOLIO_SOURCE_DIR; }
inline std::string data_path(const std::string& relative) { return source_dir() + "/tests/data/" + relative; }

// Path of a test model in models/ (FOLIO_MODELS_DIR overrides), or "" when it
// is absent. Callers QSKIP on "", unless FOLIO_REQUIRE_MODELS=1 (CI), where
// a missing model is a failure.
inline std::string model_path(const std::string& file_name) {
    const char* dir = std::getenv("FOLIO_MODELS_DIR");
    std::string path = std::string(dir ? dir : FOLIO_SOURCE_DIR "/models") + "/" + file_name;
    return std::filesystem::exists(path) ? path : std::string();
}
inline bool models_required() {
    const char* v = std::getenv("FOLIO_REQUIRE_MODELS");
    return v && std::string(v) == "1";
}

inline const char* kSmolLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf";
inline const char* kGemma3 = "gemma-3-270m-q4_k_m.gguf";
inline const char* kSmolLM2Folder = "SmolLM2-135M-Instruct-hf";  // made by tools/gguf_to_hf.py

// n floats uniform in [-scale, scale] from a fixed seed.
inline std::vector<float> random_vector(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

}  // namespace folio_test

// Resolves a test model into `var`, or skips (fails in CI) the slot.
#define FOLIO_REQUIRE_MODEL(var, file_name)                                              \
    const std::string var = folio_test::model_path(file_name);                          \
    do {                                                                                 \
        if (var.empty()) {                                                               \
            if (folio_test::models_required()) QFAIL("test model missing: run scripts/setup.sh"); \
            QSKIP("test model missing: run scripts/setup.sh");                           \
        }                                                                                \
    } while (0)
