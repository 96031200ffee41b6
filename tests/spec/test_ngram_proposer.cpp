// Prompt lookup: the continuation of the latest earlier match of the last
// n tokens, the longest n first; nothing when nothing matches.
#include <vector>

#include "folio/spec.h"
#include "folio_test.h"

using Tokens = std::vector<int32_t>;

class NgramProposerTest : public QObject {
    Q_OBJECT
private slots:
    void continuesTheLatestMatch() {
        // ... 1 2 3 [4 5 6] ... 1 2 3 [7 8] ... 1 2 3: the latest match continues with 7 8.
        const Tokens t = {1, 2, 3, 4, 5, 6, 9, 1, 2, 3, 7, 8, 9, 1, 2, 3};
        QCOMPARE(folio::ngram_lookup(t, 2, 3, 2), (Tokens{7, 8}));
        QCOMPARE(folio::ngram_lookup(t, 2, 3, 5), (Tokens{7, 8, 9, 1, 2}));
    }
    void longerMatchesWin() {
        // The last 3 tokens (5 1 2) occur once, followed by 8; the last 2 (1 2) later, followed by 9.
        const Tokens t = {5, 1, 2, 8, 0, 1, 2, 9, 0, 5, 1, 2};
        QCOMPARE(folio::ngram_lookup(t, 1, 3, 1), (Tokens{8}));
        QCOMPARE(folio::ngram_lookup(t, 1, 2, 1), (Tokens{9}));
    }
    void stopsAtTheEndOfTheSequence() {
        const Tokens t = {4, 4, 4};  // the match at 0 (4 4) is followed by one token only
        QCOMPARE(folio::ngram_lookup(t, 2, 2, 4), (Tokens{4}));
    }
    void aShortPeriodDraftsInFull() {
        // The latest matches of (1 2) are followed by 1 and by 1 2 only; the
        // latest with four tokens after it is the one to continue.
        QCOMPARE(folio::ngram_lookup(Tokens{1, 2, 1, 2, 1, 2, 1, 2}, 2, 2, 4), (Tokens{1, 2, 1, 2}));
        QCOMPARE(folio::ngram_lookup(Tokens(9, 4), 2, 3, 4), (Tokens{4, 4, 4, 4}));
        QCOMPARE(folio::ngram_lookup(Tokens{3, 1, 2, 1, 2}, 2, 2, 4), (Tokens{1, 2}));  // the longest there is
    }
    void nothingWithoutAMatch() {
        const Tokens t = {1, 2, 3, 4, 5};
        QVERIFY(folio::ngram_lookup(t, 1, 3, 4).empty());
        QVERIFY(folio::ngram_lookup(Tokens{7}, 1, 3, 4).empty());
        QVERIFY(folio::ngram_lookup(Tokens{1, 2, 1, 2}, 1, 3, 0).empty());
    }
    void proposerBatchesAndValidates() {
        folio::SpecConfig config;
        config.method = folio::SpecMethod::Ngram;
        config.draft_max = 2;
        auto proposer = folio::make_proposer(config);
        QVERIFY(proposer && *proposer);
        const Tokens a = {1, 2, 3, 1, 2}, b = {9, 8, 7};
        const folio::DraftRequest asks[] = {{1, a, 5}, {2, b, 5}};
        std::vector<Tokens> out;
        (*proposer)->propose(asks, out);
        QCOMPARE(out.size(), size_t{2});
        QCOMPARE(out[0], (Tokens{3, 1}));  // draft_max caps the ask
        QVERIFY(out[1].empty());
        config.ngram_min = 5;
        config.ngram_max = 3;
        auto bad = folio::make_proposer(config);
        QVERIFY(!bad);
        QVERIFY(bad.error().message.find("--ngram-max") != std::string::npos);
        QVERIFY(!folio::parse_spec_method("eagle"));
        QVERIFY(folio::parse_spec_method("eagle").error().message.find("ngram") != std::string::npos);
    }
};

FOLIO_TEST_MAIN(NgramProposerTest)
#include "test_ngram_proposer.moc"
