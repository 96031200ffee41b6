// Token text -> id for vocabularies of a few hundred thousand entries. An
// open-addressing table of (hash, id) pairs: one probe touches one cache line
// and compares text only on a full hash match, which keeps building a
// SentencePiece tokenizer (millions of lookups) and encoding fast.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace folio::tokenizer_detail {

class VocabIndex {
public:
    // Indexes `tokens` (kept by reference: it must outlive the index). A text
    // that occurs twice maps to its last id, as a Python dict built from the
    // list would.
    void build(const std::vector<std::string>& tokens);
    int32_t find(std::string_view text) const;

private:
    static uint64_t hash(std::string_view text);
    struct Slot {
        uint32_t hash_tag = 0;
        int32_t id = -1;
    };
    const std::vector<std::string>* tokens_ = nullptr;
    std::vector<Slot> slots_;
    uint64_t mask_ = 0;
};

}  // namespace folio::tokenizer_detail
