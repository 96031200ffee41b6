// StopChecker: a stop string is never shown, whether it arrives whole, in the
// middle of a delta, or split over many; text that only looks like the start
// of one is held back and then let through; flush() returns the rest.
#include <folio_test.h>

#include <string>
#include <vector>

#include "folio/sampling.h"

using folio::FinishReason;
using folio::StopChecker;

namespace {

struct Outcome {
    std::string shown;
    bool stopped = false;
    std::string matched;
    size_t stopped_at = 0;  // index of the delta that stopped it
};

// Pushes every delta (also after a stop, which must show nothing), then flushes.
Outcome stream(StopChecker& checker, const std::vector<std::string>& deltas) {
    Outcome outcome;
    for (size_t i = 0; i < deltas.size(); ++i) {
        const auto update = checker.push(deltas[i]);
        outcome.shown += update.text;
        if (update.stopped && !outcome.stopped) {
            outcome.stopped = true;
            outcome.stopped_at = i;
            outcome.matched = update.matched;
            if (update.reason != FinishReason::StopString) outcome.matched = "<wrong reason>";
        }
    }
    outcome.shown += checker.flush();
    return outcome;
}

}  // namespace

class StopCheckerTest : public QObject {
    Q_OBJECT

private slots:
    void stopStringSplitOverManyDeltas() {
        StopChecker checker({}, {"</s>"});
        const auto first = checker.push("Hello <");
        QCOMPARE(first.text, std::string("Hello "));  // "<" could start "</s>"
        QVERIFY(!first.stopped);
        QCOMPARE(checker.push("/").text, std::string());
        QCOMPARE(checker.push("s").text, std::string());
        const auto last = checker.push("> world");
        QVERIFY(last.stopped);
        QCOMPARE(last.text, std::string());
        QCOMPARE(last.matched, std::string("</s>"));
        QVERIFY(checker.stopped());
        QCOMPARE(checker.push("more").text, std::string());
        QCOMPARE(checker.flush(), std::string());
    }

    void stopStringInTheMiddleOfADelta() {
        StopChecker checker({}, {"STOP"});
        const auto outcome = stream(checker, {"foo ", "bar STOP baz", "qux"});
        QCOMPARE(outcome.shown, std::string("foo bar "));
        QVERIFY(outcome.stopped);
        QCOMPARE(outcome.stopped_at, size_t(1));
    }

    void overlappingPrefixes() {
        {
            StopChecker checker({}, {"ab"});
            const auto outcome = stream(checker, {"a", "a", "b", "c"});
            QCOMPARE(outcome.shown, std::string("a"));
            QCOMPARE(outcome.stopped_at, size_t(2));
        }
        {
            StopChecker checker({}, {"ab"});
            QCOMPARE(stream(checker, {"aab"}).shown, std::string("a"));
        }
        {
            // "aaa" holds "aa" (it could still become "aab"), then "b" ends it.
            StopChecker checker({}, {"aab"});
            const auto held = checker.push("aaa");
            QCOMPARE(held.text, std::string("a"));
            const auto done = checker.push("b");
            QVERIFY(done.stopped);
            QCOMPARE(done.text, std::string());
        }
    }

    void heldTextIsReleasedWhenItStopsMatching() {
        StopChecker checker({}, {"abc"});
        QCOMPARE(checker.push("xab").text, std::string("x"));
        QCOMPARE(checker.push("d").text, std::string("abd"));
        QCOMPARE(checker.push("ab").text, std::string());
        QCOMPARE(checker.flush(), std::string("ab"));  // generation ended another way
        QVERIFY(!checker.stopped());
    }

    void theEarliestOfSeveralStopStringsWins() {
        StopChecker checker({}, {"world", "lo w", "zzz"});
        const auto outcome = stream(checker, {"hel", "lo world"});
        QCOMPARE(outcome.shown, std::string("hel"));
        QCOMPARE(outcome.matched, std::string("lo w"));
        // Same start: the first listed.
        StopChecker same_start({}, {"ab", "abc"});
        QCOMPARE(stream(same_start, {"xabc"}).matched, std::string("ab"));
    }

    void unicodeStopStringsSplitAcrossBytes() {
        const std::string stop = "終わり";  // 9 bytes
        StopChecker checker({}, {stop});
        std::vector<std::string> deltas{"これで"};
        for (const char byte : stop) deltas.emplace_back(1, byte);
        deltas.emplace_back("です");
        const auto outcome = stream(checker, deltas);
        QCOMPARE(outcome.shown, std::string("これで"));
        QVERIFY(outcome.stopped);
        // A character that shares only a first byte with the stop string is let through.
        StopChecker partial({}, {stop});
        QCOMPARE(stream(partial, {"これで終", "点です"}).shown, std::string("これで終点です"));
    }

    void withoutStopStringsEverythingPasses() {
        StopChecker checker({2, 7}, {"", ""});
        QCOMPARE(stream(checker, {"a", "", "b</s>"}).shown, std::string("ab</s>"));
        QVERIFY(checker.is_stop_token(7));
        QVERIFY(checker.is_stop_token(2));
        QVERIFY(!checker.is_stop_token(3));
        QVERIFY(!StopChecker().is_stop_token(0));
    }
};

FOLIO_TEST_MAIN(StopCheckerTest)
#include "stop_checker_test.moc"
