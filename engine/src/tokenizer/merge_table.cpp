#include "tokenizer/merge_table.h"

#include <queue>

namespace folio::tokenizer_detail {

void MergeTable::add(int32_t left, int32_t right, int32_t merged, uint32_t rank) {
    pairs_.try_emplace(key(left, right), Merge{rank, merged});
}

const MergeTable::Merge* MergeTable::find(int32_t left, int32_t right) const {
    const auto it = pairs_.find(key(left, right));
    return it == pairs_.end() ? nullptr : &it->second;
}

void MergeTable::apply(std::vector<int32_t>& symbols) const {
    const size_t n = symbols.size();
    if (n < 2) return;
    // Symbols form a linked list; a merged-away symbol has id -1.
    std::vector<int32_t> prev(n), next(n);
    for (size_t i = 0; i < n; ++i) {
        prev[i] = static_cast<int32_t>(i) - 1;
        next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
    }
    struct Candidate {
        uint32_t rank;
        int32_t pos;
        int32_t merged;
        bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    const auto consider = [&](int32_t pos) {
        if (pos < 0 || next[pos] < 0) return;
        if (const Merge* m = find(symbols[pos], symbols[next[pos]])) queue.push({m->rank, pos, m->merged});
    };
    for (size_t i = 0; i + 1 < n; ++i) consider(static_cast<int32_t>(i));

    while (!queue.empty()) {
        const Candidate top = queue.top();
        queue.pop();
        const int32_t right = next[top.pos];
        // Entries go stale when a neighbour merged first; the pair must still
        // be there and still make the same token.
        if (symbols[top.pos] < 0 || right < 0) continue;
        const Merge* m = find(symbols[top.pos], symbols[right]);
        if (!m || m->merged != top.merged) continue;
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
