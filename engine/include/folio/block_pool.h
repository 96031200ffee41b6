// The physical KV blocks of one cache and who holds them: vLLM's BlockPool.
// Every block is either referenced by one or more sequences' block tables or
// sits in the free queue. The free queue is a doubly linked list threaded
// through the blocks themselves, so allocating (from the head), freeing (to
// the tail) and taking a block out of the middle (a prefix-cache hit on a
// block nobody references) are all O(1).
//
// A block that holds a full, verified run of tokens may also be registered
// in the prefix cache under its chained hash. Freeing it keeps that entry:
// the block waits in the free queue, still findable, until allocate() hands
// it out again and evicts it — least recently freed first, which is LRU over
// unreferenced cached blocks.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace folio {

using BlockHash = uint64_t;

struct KvBlock {
    int32_t ref_count = 0;
    bool cached = false;           // registered in the prefix cache under `hash`
    BlockHash hash = 0;
    int32_t parent = -1;           // the cached block before it in its chain (-1: first block)
    uint32_t parent_generation = 0;
    uint32_t generation = 0;       // bumped each time the block is cached: tells stale parent links
    int32_t prev_free = -1;        // free-queue links; -1 at the ends
    int32_t next_free = -1;
    bool in_free_queue = false;
};

class BlockPool {
public:
    BlockPool(uint32_t n_blocks, uint32_t block_size);

    uint32_t n_blocks() const { return static_cast<uint32_t>(blocks_.size()); }
    uint32_t block_size() const { return block_size_; }
    uint32_t num_free() const { return num_free_; }         // allocatable now (cached ones included)
    uint32_t num_cached() const { return static_cast<uint32_t>(by_hash_.size()); }
    // vLLM's kv_cache_usage_perc: the share of blocks referenced by a sequence.
    double usage() const { return n_blocks() ? 1.0 - double(num_free_) / n_blocks() : 0.0; }

    // Takes n blocks from the head of the free queue, each with one reference,
    // evicting their prefix-cache entries. All or nothing: false (and no
    // change) when fewer than n are free.
    bool allocate(uint32_t n, std::vector<int32_t>& out);
    // One more reference; a free (cached) block leaves the free queue.
    void retain(int32_t block);
    // One reference fewer for each block, in order; a block that reaches zero
    // joins the tail of the free queue. Pass a table tail-first so that a
    // sequence's last blocks, the least likely to be shared, are evicted first.
    void release(std::span<const int32_t> blocks);

    // Prefix cache. `tokens` are the block's block_size token ids; `parent`
    // the cached block before it in the sequence (-1 for the first).
    // Registers nothing when the hash is already taken (the first copy wins)
    // or the parent is not cached itself.
    void cache(int32_t block, BlockHash hash, int32_t parent, std::span<const int32_t> tokens);
    // The cached block with this hash whose tokens and parent are exactly
    // these (a hash collision never returns a wrong block), or -1.
    int32_t lookup(BlockHash hash, int32_t parent, std::span<const int32_t> tokens) const;
    // Forgets the block's entry, if it has one (its contents are about to
    // change in place: attention-sink windows re-rotate their keys).
    void uncache(int32_t block) { evict(block); }
    // Forgets every cached entry (blocks in use stay in use).
    void clear_cache();

    const KvBlock& block(int32_t id) const { return blocks_[static_cast<size_t>(id)]; }
    std::span<const int32_t> cached_tokens(int32_t id) const;

    // Walks the free queue and the counts; an empty string when consistent,
    // else what is wrong (tests and debug builds).
    std::string check_invariants() const;

private:
    void unlink_free(int32_t id);
    void push_free_tail(int32_t id);
    void evict(int32_t id);

    uint32_t block_size_;
    std::vector<KvBlock> blocks_;
    std::vector<int32_t> tokens_;  // [n_blocks * block_size]: a cached block's tokens, for exact confirmation
    std::unordered_map<BlockHash, int32_t> by_hash_;
    int32_t free_head_ = -1, free_tail_ = -1;
    uint32_t num_free_ = 0;
};

}  // namespace folio
