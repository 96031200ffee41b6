// BPE merges by rank: which two adjacent symbols fuse into which token, and
// the loop that applies them to a word. Both tokenizer kinds use it: byte-
// level BPE with the merges listed in the file, SentencePiece with merges
// derived from the vocabulary (as Hugging Face's converters do).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace folio::tokenizer_detail {

class MergeTable {
public:
    // Keeps the first (best) rank when a pair is added twice.
    void add(int32_t left, int32_t right, int32_t merged, uint32_t rank);
    size_t size() const { return pairs_.size(); }
    void reserve(size_t n) { pairs_.reserve(n); }

    // Applies merges to `symbols` (token ids) in place: always the pair of
    // lowest rank, the leftmost one on ties, until none applies. This is the
    // order Hugging Face's BPE model merges in.
    void apply(std::vector<int32_t>& symbols) const;

private:
    struct Merge {
        uint32_t rank;
        int32_t merged;
    };
    static uint64_t key(int32_t left, int32_t right) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }
    const Merge* find(int32_t left, int32_t right) const;
    std::unordered_map<uint64_t, Merge> pairs_;
};

}  // namespace folio::tokenizer_detail
