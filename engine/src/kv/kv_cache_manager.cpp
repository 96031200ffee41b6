#include "folio/kv_cache_manager.h"

#include <algorithm>
#include <cassert>

namespace folio {
namespace {

uint64_t mix64(uint64_t x) {  // splitmix64's finaliser
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

int32_t blocks_for(int64_t n_tokens, uint32_t block_size) {
    return static_cast<int32_t>((n_tokens + block_size - 1) / block_size);
}

const std::vector<int32_t> kNoTable;

}  // namespace

KvCacheManager::KvCacheManager(uint32_t n_blocks, uint32_t block_size, bool enable_prefix_caching, BlockHash salt)
    : pool_(n_blocks, block_size), prefix_caching_(enable_prefix_caching), salt_(salt) {}

BlockHash KvCacheManager::hash_block(BlockHash parent, std::span<const int32_t> tokens) const {
    uint64_t h = mix64(parent ^ mix64(salt_ + 0x9e3779b97f4a7c15ULL));
    for (int32_t t : tokens) h = mix64(h ^ static_cast<uint32_t>(t));
    return h;
}

void KvCacheManager::set_prefix_caching(bool on) {
    prefix_caching_ = on;
    if (!on) pool_.clear_cache();
}

PrefixHit KvCacheManager::find_prefix(std::span<const int32_t> tokens) const {
    PrefixHit hit;
    if (!prefix_caching_ || tokens.empty()) return hit;
    const uint32_t bs = pool_.block_size();
    const size_t max_blocks = (tokens.size() - 1) / bs;  // the last token is always computed
    BlockHash parent_hash = 0;
    int32_t parent = -1;
    for (size_t b = 0; b < max_blocks; ++b) {
        const auto block_tokens = tokens.subspan(b * bs, bs);
        const BlockHash h = hash_block(parent_hash, block_tokens);
        const int32_t id = pool_.lookup(h, parent, block_tokens);
        if (id < 0) break;
        hit.blocks.push_back(id);
        hit.hashes.push_back(h);
        parent_hash = h;
        parent = id;
    }
    hit.tokens = static_cast<int32_t>(hit.blocks.size() * bs);
    return hit;
}

uint32_t KvCacheManager::blocks_needed(SeqId seq, int32_t n_tokens, const PrefixHit& hit) const {
    const auto it = tables_.find(seq);
    const int32_t have = it != tables_.end() ? static_cast<int32_t>(it->second.size())
                                             : static_cast<int32_t>(hit.blocks.size());
    const int32_t fresh = std::max(0, blocks_for(n_tokens, pool_.block_size()) - have);
    // Hit blocks nobody holds leave the free queue too.
    uint32_t revived = 0;
    if (it == tables_.end())
        for (int32_t b : hit.blocks) revived += pool_.block(b).ref_count == 0;
    return static_cast<uint32_t>(fresh) + revived;
}

bool KvCacheManager::allocate(SeqId seq, int32_t n_tokens, const PrefixHit& hit) {
    if (blocks_needed(seq, n_tokens, hit) > pool_.num_free()) return false;
    auto [it, is_new] = tables_.try_emplace(seq);
    std::vector<int32_t>& table = it->second;
    if (is_new) {
        for (int32_t b : hit.blocks) pool_.retain(b);
        table = hit.blocks;
        seqs_[seq].hashes = hit.hashes;
    }
    const int32_t fresh = blocks_for(n_tokens, pool_.block_size()) - static_cast<int32_t>(table.size());
    if (fresh > 0) {
        [[maybe_unused]] const bool ok = pool_.allocate(static_cast<uint32_t>(fresh), table);
        assert(ok);
    }
    return true;
}

bool KvCacheManager::prepare_write(SeqId seq, int32_t from, int32_t to, std::vector<BlockCopy>& copies) {
    auto it = tables_.find(seq);
    if (it == tables_.end() || from >= to) return true;
    std::vector<int32_t>& table = it->second;
    const uint32_t bs = pool_.block_size();
    const auto first = static_cast<size_t>(from / static_cast<int32_t>(bs));
    const auto last = std::min(table.size(), static_cast<size_t>(blocks_for(to, bs)));
    uint32_t shared = 0;
    for (size_t b = first; b < last; ++b) shared += pool_.block(table[b]).ref_count > 1;
    if (shared > pool_.num_free()) return false;
    for (size_t b = first; b < last; ++b)
        if (pool_.block(table[b]).ref_count > 1) make_private(table, b, copies);
    return true;
}

void KvCacheManager::make_private(std::vector<int32_t>& table, size_t b, std::vector<BlockCopy>& copies) {
    const int32_t old = table[b];
    scratch_.clear();
    pool_.allocate(1, scratch_);  // the caller counted the free blocks
    copies.push_back({old, scratch_[0]});
    table[b] = scratch_[0];
    pool_.release(std::span<const int32_t>(&old, 1));
}

bool KvCacheManager::slide(SeqId seq, int32_t keep, int32_t drop, std::vector<BlockCopy>& copies) {
    auto it = tables_.find(seq);
    if (it == tables_.end() || keep < 0 || drop < 1) return false;
    std::vector<int32_t>& table = it->second;
    const auto first = static_cast<size_t>(keep), moved = first + static_cast<size_t>(drop);
    if (moved >= table.size()) return false;
    // Dropped blocks held only here come free before the copies are taken.
    uint32_t shared = 0, freed = 0;
    for (size_t b = first; b < moved; ++b) freed += pool_.block(table[b]).ref_count == 1;
    for (size_t b = moved; b < table.size(); ++b) shared += pool_.block(table[b]).ref_count > 1;
    if (shared > pool_.num_free() + freed) return false;
    std::vector<int32_t> dropped(table.begin() + static_cast<std::ptrdiff_t>(first),
                                 table.begin() + static_cast<std::ptrdiff_t>(moved));
    std::reverse(dropped.begin(), dropped.end());
    pool_.release(dropped);  // their K/V still match their tokens: cached ones stay findable
    table.erase(table.begin() + static_cast<std::ptrdiff_t>(first), table.begin() + static_cast<std::ptrdiff_t>(moved));
    for (size_t b = first; b < table.size(); ++b) {
        if (pool_.block(table[b]).ref_count > 1) make_private(table, b, copies);
        else pool_.uncache(table[b]);
    }
    SeqState& state = seqs_[seq];
    if (state.hashes.size() > first) state.hashes.resize(first);
    return true;
}

void KvCacheManager::cache_blocks(SeqId seq, std::span<const int32_t> tokens, int32_t n_verified) {
    if (!prefix_caching_) return;
    auto it = tables_.find(seq);
    if (it == tables_.end()) return;
    const std::vector<int32_t>& table = it->second;
    SeqState& state = seqs_[seq];
    const uint32_t bs = pool_.block_size();
    const size_t full = std::min(table.size(), static_cast<size_t>(std::max(0, n_verified)) / bs);
    for (size_t b = state.hashes.size(); b < full; ++b) {
        const auto block_tokens = tokens.subspan(b * bs, bs);
        const BlockHash parent_hash = b ? state.hashes[b - 1] : 0;
        const BlockHash h = hash_block(parent_hash, block_tokens);
        state.hashes.push_back(h);
        pool_.cache(table[b], h, b ? table[b - 1] : -1, block_tokens);
    }
}

void KvCacheManager::fork(SeqId parent, SeqId child) {
    const std::vector<int32_t>& table = this->table(parent);
    for (int32_t b : table) pool_.retain(b);
    tables_[child] = table;
    seqs_[child] = seqs_[parent];
}

void KvCacheManager::free(SeqId seq) {
    auto it = tables_.find(seq);
    if (it != tables_.end()) {
        std::vector<int32_t>& table = it->second;
        std::reverse(table.begin(), table.end());  // tail blocks are evicted first
        pool_.release(table);
        tables_.erase(it);
    }
    seqs_.erase(seq);
}

const std::vector<int32_t>& KvCacheManager::table(SeqId seq) const {
    const auto it = tables_.find(seq);
    return it != tables_.end() ? it->second : kNoTable;
}

std::string KvCacheManager::check_invariants() const {
    if (std::string e = pool_.check_invariants(); !e.empty()) return e;
    std::vector<int32_t> refs(pool_.n_blocks(), 0);
    for (const auto& [seq, table] : tables_)
        for (int32_t b : table) {
            if (b < 0 || static_cast<uint32_t>(b) >= pool_.n_blocks())
                return "sequence " + std::to_string(seq) + " holds block " + std::to_string(b) + " outside the pool";
            ++refs[static_cast<size_t>(b)];
        }
    for (uint32_t b = 0; b < pool_.n_blocks(); ++b)
        if (refs[b] != pool_.block(static_cast<int32_t>(b)).ref_count)
            return "block " + std::to_string(b) + " has reference count " +
                   std::to_string(pool_.block(static_cast<int32_t>(b)).ref_count) + " but " + std::to_string(refs[b]) +
                   " tables hold it";
    return {};
}

}  // namespace folio
