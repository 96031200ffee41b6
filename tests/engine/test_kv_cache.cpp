// BlockPool and KvCacheManager: the free queue's order and O(1) moves,
// reference counts, prefix-cache chains confirmed token by token, eviction
// of the least recently freed cached block, forks and copy-on-write.
#include <numeric>
#include <vector>

#include "folio/block_pool.h"
#include "folio/kv_cache_manager.h"
#include "folio_test.h"

namespace {

std::vector<int32_t> iota_tokens(int n, int start = 100) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    std::iota(t.begin(), t.end(), start);
    return t;
}

}  // namespace

class KvCacheTest : public QObject {
    Q_OBJECT
private slots:
    void poolAllocatesFromTheHeadAndFreesToTheTail() {
        folio::BlockPool pool(4, 16);
        std::vector<int32_t> got;
        QVERIFY(pool.allocate(3, got));
        QCOMPARE(got, (std::vector<int32_t>{0, 1, 2}));
        QCOMPARE(pool.num_free(), 1u);
        QVERIFY(!pool.allocate(2, got));  // all or nothing
        QCOMPARE(got.size(), size_t{3});
        const int32_t freed[] = {1, 0};
        pool.release(freed);
        got.clear();
        QVERIFY(pool.allocate(3, got));
        QCOMPARE(got, (std::vector<int32_t>{3, 1, 0}));  // oldest free first
        QCOMPARE(pool.check_invariants(), std::string());
    }

    void retainTakesAFreeCachedBlockOutOfTheMiddle() {
        folio::BlockPool pool(4, 2);
        std::vector<int32_t> got;
        QVERIFY(pool.allocate(4, got));
        const int32_t tokens[] = {7, 8};
        pool.cache(2, 42, -1, tokens);
        pool.release(got);  // queue: 0 1 2 3
        QCOMPARE(pool.lookup(42, -1, tokens), 2);
        pool.retain(2);
        QCOMPARE(pool.num_free(), 3u);
        QCOMPARE(pool.check_invariants(), std::string());
        got.clear();
        QVERIFY(pool.allocate(3, got));
        QCOMPARE(got, (std::vector<int32_t>{0, 1, 3}));
        QCOMPARE(pool.lookup(42, -1, tokens), 2);  // held, still cached
    }

    void lookupConfirmsTokensAndParent() {
        folio::BlockPool pool(3, 2);
        std::vector<int32_t> got;
        QVERIFY(pool.allocate(3, got));
        const int32_t a[] = {1, 2}, b[] = {3, 4}, other[] = {1, 3};
        pool.cache(0, 10, -1, a);
        pool.cache(1, 11, 0, b);
        QCOMPARE(pool.lookup(10, -1, a), 0);
        QCOMPARE(pool.lookup(10, -1, other), -1);  // same hash, other tokens: a collision is not a hit
        QCOMPARE(pool.lookup(11, 0, b), 1);
        QCOMPARE(pool.lookup(11, 2, b), -1);  // another parent
        // An uncached parent cannot have cached children.
        pool.cache(2, 12, 2, b);
        QCOMPARE(pool.lookup(12, 2, b), -1);
    }

    void evictionIsLeastRecentlyFreedFirstAndUnlinksChildren() {
        folio::BlockPool pool(2, 2);
        std::vector<int32_t> got;
        QVERIFY(pool.allocate(2, got));
        const int32_t a[] = {1, 2}, b[] = {3, 4};
        pool.cache(0, 10, -1, a);
        pool.cache(1, 11, 0, b);
        const int32_t order[] = {1, 0};  // tail first
        pool.release(order);
        got.clear();
        QVERIFY(pool.allocate(1, got));
        QCOMPARE(got[0], 1);  // the child went first
        QCOMPARE(pool.lookup(11, 0, b), -1);
        QCOMPARE(pool.lookup(10, -1, a), 0);
        QCOMPARE(pool.num_cached(), 1u);
        // Block 0 evicted and recached with other content: a stale child link never matches.
        got.clear();
        QVERIFY(pool.allocate(1, got));
        QCOMPARE(pool.num_cached(), 0u);
        QCOMPARE(pool.check_invariants(), std::string());
    }

    void managerFindsTheLongestCachedPrefixButLeavesTheLastToken() {
        folio::KvCacheManager kv(16, 4, true, 1234);
        const std::vector<int32_t> prompt = iota_tokens(10);
        QVERIFY(kv.allocate(1, 10, kv.find_prefix(prompt)));
        kv.cache_blocks(1, prompt, 10);  // two full blocks
        kv.free(1);
        const folio::PrefixHit hit = kv.find_prefix(prompt);
        QCOMPARE(hit.tokens, 8);
        QCOMPARE(hit.blocks.size(), size_t{2});
        // A prompt of exactly two blocks computes its last block again.
        const std::vector<int32_t> eight(prompt.begin(), prompt.begin() + 8);
        QCOMPARE(kv.find_prefix(eight).tokens, 4);
        // Other salt (another model): nothing.
        folio::KvCacheManager other(16, 4, true, 99);
        QCOMPARE(other.find_prefix(prompt).tokens, 0);
        // Same second block after another first block: no hit past the first difference.
        std::vector<int32_t> changed = prompt;
        changed[0] = 7;
        QCOMPARE(kv.find_prefix(changed).tokens, 0);
        QVERIFY(kv.allocate(2, 10, hit));
        QCOMPARE(kv.table(2)[0], hit.blocks[0]);
        QCOMPARE(kv.pool().block(hit.blocks[0]).ref_count, 1);
        QCOMPARE(kv.check_invariants(), std::string());
    }

    void prefixCachingCanBeSwitchedOff() {
        folio::KvCacheManager kv(8, 4, false, 1);
        const std::vector<int32_t> prompt = iota_tokens(9);
        QVERIFY(kv.allocate(1, 9));
        kv.cache_blocks(1, prompt, 9);
        kv.free(1);
        QCOMPARE(kv.find_prefix(prompt).tokens, 0);
        QCOMPARE(kv.pool().num_cached(), 0u);
    }

    void forkSharesBlocksAndCopiesOnWrite() {
        folio::KvCacheManager kv(8, 4, true, 1);
        QVERIFY(kv.allocate(1, 6));  // blocks 0 (full) and 1 (2 of 4)
        kv.fork(1, 2);
        QCOMPARE(kv.pool().block(kv.table(1)[1]).ref_count, 2);
        std::vector<folio::BlockCopy> copies;
        QVERIFY(kv.prepare_write(2, 6, 7, copies));  // the child writes into the shared partial block
        QCOMPARE(copies.size(), size_t{1});
        QCOMPARE(copies[0].src, kv.table(1)[1]);
        QCOMPARE(copies[0].dst, kv.table(2)[1]);
        QVERIFY(kv.table(1)[1] != kv.table(2)[1]);
        QCOMPARE(kv.table(1)[0], kv.table(2)[0]);  // the full block stays shared
        copies.clear();
        QVERIFY(kv.prepare_write(1, 6, 7, copies));  // the parent now holds its block alone
        QVERIFY(copies.empty());
        QCOMPARE(kv.check_invariants(), std::string());
        kv.free(1);
        kv.free(2);
        QCOMPARE(kv.pool().num_free(), 8u);
    }

    void allocationIsAllOrNothing() {
        folio::KvCacheManager kv(4, 4, true, 1);
        QVERIFY(kv.allocate(1, 12));
        QVERIFY(!kv.allocate(2, 8));
        QVERIFY(!kv.has(2));
        QVERIFY(kv.table(2).empty());
        QVERIFY(!kv.allocate(1, 20));
        QCOMPARE(kv.table(1).size(), size_t{3});
        QCOMPARE(kv.check_invariants(), std::string());
    }
};

FOLIO_TEST_MAIN(KvCacheTest)
#include "test_kv_cache.moc"
