// The facade the scheduler talks to about KV memory (vLLM's KVCacheManager):
// a block table per sequence carved from one BlockPool, prefix-cache lookups
// on admission, registration of full blocks once their tokens are verified,
// forks that share blocks, and copy-on-write when a sequence is about to
// write into a block it shares.
//
// Prefix-cache keys are chained: a full block's hash covers its parent's
// hash, its token ids and a salt naming the model (and, later, adapter), so
// equal tokens after different prefixes never match. The BlockPool confirms
// every hit token by token.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "folio/batch.h"
#include "folio/block_pool.h"

namespace folio {

using SeqId = int64_t;

// The cached full blocks found at the start of a token sequence.
struct PrefixHit {
    std::vector<int32_t> blocks;
    std::vector<BlockHash> hashes;
    int32_t tokens = 0;  // blocks.size() * block size
};

class KvCacheManager {
public:
    KvCacheManager(uint32_t n_blocks, uint32_t block_size, bool enable_prefix_caching, BlockHash salt);

    // The longest run of cached full blocks at the start of `tokens`, leaving
    // at least one token to compute (its logits are needed).
    PrefixHit find_prefix(std::span<const int32_t> tokens) const;
    // Counts an admitted sequence's lookup for the prefix-cache metrics.
    void count_query(int32_t n_tokens, int32_t n_hit) {
        queries_ += static_cast<uint64_t>(n_tokens);
        hits_ += static_cast<uint64_t>(n_hit);
    }

    // Makes the sequence's table cover `n_tokens` tokens: a new sequence
    // first takes the blocks of `hit` (which must come from find_prefix just
    // now), then fresh ones. All or nothing: false, and no change, when the
    // pool has too few free blocks.
    bool allocate(SeqId seq, int32_t n_tokens, const PrefixHit& hit = {});
    // Blocks allocate() would have to take from the free queue.
    uint32_t blocks_needed(SeqId seq, int32_t n_tokens, const PrefixHit& hit = {}) const;

    // Before writing tokens [from, to) of the sequence: any block in that
    // range that is shared (reference count > 1) is replaced by a fresh copy,
    // appended to `copies` for the backend to carry out first. False (no
    // change) when there are not enough free blocks.
    bool prepare_write(SeqId seq, int32_t from, int32_t to, std::vector<BlockCopy>& copies);

    // Slides a sequence's window over its cache (StreamingLLM): the table
    // keeps its first `keep` blocks (the attention sinks), loses the `drop`
    // blocks after them, and the blocks after those move up. Their keys are
    // then re-rotated in place by the caller (Backend::shift_keys), so every
    // moved block becomes private: a shared one is replaced by a fresh copy
    // (appended to `copies`, to carry out first) and a prefix-cached one
    // leaves the cache: their K/V no longer follow from the tokens alone, so
    // the caller must not cache them again (Sequence::n_cacheable). All or
    // nothing: false (no change) when the table is too short or the copies
    // do not fit.
    bool slide(SeqId seq, int32_t keep, int32_t drop, std::vector<BlockCopy>& copies);

    // Registers the sequence's full blocks within its first `n_verified`
    // tokens in the prefix cache (tokens = the sequence's ids so far). Draft
    // tokens of speculative decoding are not verified: pass what is.
    void cache_blocks(SeqId seq, std::span<const int32_t> tokens, int32_t n_verified);

    // The child gets the parent's table; every block gains a reference.
    void fork(SeqId parent, SeqId child);
    // Releases the sequence's blocks (cached ones stay findable until evicted).
    void free(SeqId seq);

    bool has(SeqId seq) const { return seqs_.contains(seq); }
    const std::vector<int32_t>& table(SeqId seq) const;
    const std::unordered_map<SeqId, std::vector<int32_t>>& tables() const { return tables_; }

    BlockPool& pool() { return pool_; }
    const BlockPool& pool() const { return pool_; }
    uint32_t block_size() const { return pool_.block_size(); }
    bool prefix_caching() const { return prefix_caching_; }
    void set_prefix_caching(bool on);

    // vLLM's prefix_cache_queries / prefix_cache_hits, in tokens.
    uint64_t prefix_queries() const { return queries_; }
    uint64_t prefix_hits() const { return hits_; }

    // Pool invariants plus: reference counts equal the tables' references.
    std::string check_invariants() const;

private:
    struct SeqState {
        std::vector<BlockHash> hashes;  // chained hashes of its cached-or-hashed full blocks
    };
    BlockHash hash_block(BlockHash parent, std::span<const int32_t> tokens) const;
    // Copy-on-write of table[b]: a fresh block (one must be free) takes its
    // place, the copy is appended to `copies`, the shared one loses a reference.
    void make_private(std::vector<int32_t>& table, size_t b, std::vector<BlockCopy>& copies);

    BlockPool pool_;
    bool prefix_caching_;
    BlockHash salt_;
    std::unordered_map<SeqId, std::vector<int32_t>> tables_;
    std::unordered_map<SeqId, SeqState> seqs_;
    uint64_t queries_ = 0, hits_ = 0;
    std::vector<int32_t> scratch_;
};

}  // namespace folio
