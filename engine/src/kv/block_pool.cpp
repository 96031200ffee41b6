#include "folio/block_pool.h"

#include <algorithm>
#include <cassert>

namespace folio {

BlockPool::BlockPool(uint32_t n_blocks, uint32_t block_size)
    : block_size_(block_size), blocks_(n_blocks), tokens_(size_t{n_blocks} * block_size) {
    for (uint32_t i = 0; i < n_blocks; ++i) push_free_tail(static_cast<int32_t>(i));
}

void BlockPool::unlink_free(int32_t id) {
    KvBlock& b = blocks_[static_cast<size_t>(id)];
    assert(b.in_free_queue);
    if (b.prev_free >= 0) blocks_[static_cast<size_t>(b.prev_free)].next_free = b.next_free;
    else free_head_ = b.next_free;
    if (b.next_free >= 0) blocks_[static_cast<size_t>(b.next_free)].prev_free = b.prev_free;
    else free_tail_ = b.prev_free;
    b.prev_free = b.next_free = -1;
    b.in_free_queue = false;
    --num_free_;
}

void BlockPool::push_free_tail(int32_t id) {
    KvBlock& b = blocks_[static_cast<size_t>(id)];
    b.prev_free = free_tail_;
    b.next_free = -1;
    if (free_tail_ >= 0) blocks_[static_cast<size_t>(free_tail_)].next_free = id;
    else free_head_ = id;
    free_tail_ = id;
    b.in_free_queue = true;
    ++num_free_;
}

void BlockPool::evict(int32_t id) {
    KvBlock& b = blocks_[static_cast<size_t>(id)];
    if (!b.cached) return;
    by_hash_.erase(b.hash);
    b.cached = false;
    b.hash = 0;
    b.parent = -1;
}

bool BlockPool::allocate(uint32_t n, std::vector<int32_t>& out) {
    if (n > num_free_) return false;
    for (uint32_t i = 0; i < n; ++i) {
        const int32_t id = free_head_;
        unlink_free(id);
        evict(id);
        blocks_[static_cast<size_t>(id)].ref_count = 1;
        out.push_back(id);
    }
    return true;
}

void BlockPool::retain(int32_t id) {
    KvBlock& b = blocks_[static_cast<size_t>(id)];
    if (b.ref_count == 0) unlink_free(id);
    ++b.ref_count;
}

void BlockPool::release(std::span<const int32_t> ids) {
    for (int32_t id : ids) {
        KvBlock& b = blocks_[static_cast<size_t>(id)];
        assert(b.ref_count > 0);
        if (--b.ref_count == 0) push_free_tail(id);
    }
}

void BlockPool::cache(int32_t id, BlockHash hash, int32_t parent, std::span<const int32_t> tokens) {
    KvBlock& b = blocks_[static_cast<size_t>(id)];
    if (b.cached || tokens.size() != block_size_ || by_hash_.contains(hash)) return;
    // A chain is only findable from its start: below an uncached parent
    // (another copy of the same prefix won the hash) nothing is registered.
    if (parent >= 0 && !blocks_[static_cast<size_t>(parent)].cached) return;
    b.cached = true;
    b.hash = hash;
    b.parent = parent;
    b.parent_generation = parent >= 0 ? blocks_[static_cast<size_t>(parent)].generation : 0;
    ++b.generation;
    std::copy(tokens.begin(), tokens.end(), tokens_.begin() + static_cast<ptrdiff_t>(size_t(id) * block_size_));
    by_hash_.emplace(hash, id);
}

int32_t BlockPool::lookup(BlockHash hash, int32_t parent, std::span<const int32_t> tokens) const {
    const auto it = by_hash_.find(hash);
    if (it == by_hash_.end()) return -1;
    const KvBlock& b = blocks_[static_cast<size_t>(it->second)];
    if (b.parent != parent) return -1;
    if (parent >= 0) {
        const KvBlock& p = blocks_[static_cast<size_t>(parent)];
        if (!p.cached || p.generation != b.parent_generation) return -1;
    }
    const std::span<const int32_t> held = cached_tokens(it->second);
    if (!std::equal(held.begin(), held.end(), tokens.begin(), tokens.end())) return -1;
    return it->second;
}

void BlockPool::clear_cache() {
    for (size_t i = 0; i < blocks_.size(); ++i) evict(static_cast<int32_t>(i));
}

std::span<const int32_t> BlockPool::cached_tokens(int32_t id) const {
    return std::span<const int32_t>(tokens_).subspan(size_t(id) * block_size_, block_size_);
}

std::string BlockPool::check_invariants() const {
    uint32_t walked = 0;
    int32_t prev = -1;
    for (int32_t id = free_head_; id >= 0; id = blocks_[static_cast<size_t>(id)].next_free) {
        const KvBlock& b = blocks_[static_cast<size_t>(id)];
        if (!b.in_free_queue || b.ref_count != 0) return "block " + std::to_string(id) + " is queued but in use";
        if (b.prev_free != prev) return "free queue link broken at block " + std::to_string(id);
        if (++walked > blocks_.size()) return "free queue has a cycle";
        prev = id;
    }
    if (prev != free_tail_) return "free queue tail is wrong";
    if (walked != num_free_) return "free count " + std::to_string(num_free_) + " but " + std::to_string(walked) + " queued";
    for (size_t i = 0; i < blocks_.size(); ++i) {
        const KvBlock& b = blocks_[i];
        if (b.ref_count < 0) return "block " + std::to_string(i) + " has a negative reference count";
        if ((b.ref_count == 0) != b.in_free_queue) return "block " + std::to_string(i) + " is neither used nor free";
        if (b.cached) {
            const auto it = by_hash_.find(b.hash);
            if (it == by_hash_.end() || it->second != static_cast<int32_t>(i))
                return "cached block " + std::to_string(i) + " is not in the hash map";
        }
    }
    for (const auto& [hash, id] : by_hash_)
        if (!blocks_[static_cast<size_t>(id)].cached || blocks_[static_cast<size_t>(id)].hash != hash)
            return "hash map entry for block " + std::to_string(id) + " is stale";
    return {};
}

}  // namespace folio
