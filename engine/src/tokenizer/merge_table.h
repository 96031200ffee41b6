// BPE merges: which two adjacent symbols fuse into which token, with what
// priority, and the loop that applies them to a word. Byte-level BPE and
// tokenizer.json files list their merges (MergeTable); SentencePiece GGUF
// files only rank pieces, and the merge of two symbols is the piece their
// texts join into (found through the vocabulary at encode time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <queue>
#include <vector>

namespace folio::tokenizer_detail {

struct MergeCandidate {
    uint64_t rank = 0;    // lower merges first
    int32_t merged = -1;  // the token the pair becomes; -1: the pair does not merge
};

// Listed merges in an open-addressing table keyed by the (left, right) ids:
// hundreds of thousands of pairs, looked up for every adjacent pair of every
// word, so one probe should be one cache line.
class MergeTable {
public:
    // Keeps the first (best) rank when a pair is added twice.
    void add(int32_t left, int32_t right, int32_t merged, uint32_t rank) {
        if ((count_ + 1) * 2 > slots_.size()) grow();
        Slot& slot = probe(key(left, right));
        if (slot.merged >= 0) return;
        slot = {key(left, right), rank, merged};
        ++count_;
    }
    void reserve(size_t n) {
        while (slots_.size() < n * 2) grow();
    }
    size_t size() const { return count_; }

    MergeCandidate operator()(int32_t left, int32_t right) const {
        if (slots_.empty()) return {};
        const uint64_t k = key(left, right);
        for (uint64_t i = mix(k) & mask_;; i = (i + 1) & mask_) {
            const Slot& slot = slots_[i];
            if (slot.merged < 0) return {};
            if (slot.key == k) return {slot.rank, slot.merged};
        }
    }

private:
    struct Slot {
        uint64_t key = 0;
        uint32_t rank = 0;
        int32_t merged = -1;  // -1: empty
    };
    static uint64_t key(int32_t left, int32_t right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }
    static uint64_t mix(uint64_t k) {
        k ^= k >> 33;
        k *= 0xFF51AFD7ED558CCDull;
        k ^= k >> 33;
        return k;
    }
    Slot& probe(uint64_t k) {
        for (uint64_t i = mix(k) & mask_;; i = (i + 1) & mask_) {
            if (slots_[i].merged < 0 || slots_[i].key == k) return slots_[i];
        }
    }
    void grow() {
        std::vector<Slot> old = std::move(slots_);
        slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
        mask_ = slots_.size() - 1;
        for (const Slot& slot : old) {
            if (slot.merged >= 0) probe(slot.key) = slot;
        }
    }
    std::vector<Slot> slots_;
    uint64_t mask_ = 0;
    size_t count_ = 0;
};

// Applies merges to `symbols` (token ids) in place: always the pair of lowest
// rank, the leftmost one on ties, until none applies; the order Hugging
// Face's BPE model merges in. `find(left, right)` gives a MergeCandidate.
template <typename FindMerge>
void apply_merges(std::vector<int32_t>& symbols, const FindMerge& find) {
    const size_t n = symbols.size();
    if (n < 2) return;
    // Symbols form a linked list; a merged-away symbol has id -1.
    std::vector<int32_t> prev(n), next(n);
    for (size_t i = 0; i < n; ++i) {
        prev[i] = static_cast<int32_t>(i) - 1;
        next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
    }
    struct Entry {
        uint64_t rank;
        int32_t pos;
        int32_t merged;
        bool operator>(const Entry& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
    const auto consider = [&](int32_t pos) {
        if (pos < 0 || next[pos] < 0) return;
        const MergeCandidate m = find(symbols[pos], symbols[next[pos]]);
        if (m.merged >= 0) queue.push({m.rank, pos, m.merged});
    };
    for (size_t i = 0; i + 1 < n; ++i) consider(static_cast<int32_t>(i));

    while (!queue.empty()) {
        const Entry top = queue.top();
        queue.pop();
        const int32_t right = next[top.pos];
        // Entries go stale when a neighbour merged first; the pair must still
        // be there and still make the same token.
        if (symbols[top.pos] < 0 || right < 0) continue;
        if (find(symbols[top.pos], symbols[right]).merged != top.merged) continue;
        symbols[top.pos] = top.merged;
        symbols[right] = -1;
        next[top.pos] = next[right];
        if (next[right] >= 0) prev[next[right]] = top.pos;
        consider(prev[top.pos]);
        consider(top.pos);
    }
    size_t out = 0;
    for (size_t i = 0; i < n; ++i) {
        if (symbols[i] >= 0) symbols[out++] = symbols[i];
    }
    symbols.resize(out);
}

}  // namespace folio::tokenizer_detail
