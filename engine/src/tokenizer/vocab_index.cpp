#include "tokenizer/vocab_index.h"

namespace folio::tokenizer_detail {

uint64_t VocabIndex::hash(std::string_view text) {
    // FNV-1a, then a final mix so that the low bits (the slot) depend on every byte.
    uint64_t h = 1469598103934665603ull;
    for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    h ^= h >> 32;
    h *= 0xD6E8FEB86659FD93ull;
    h ^= h >> 32;
    return h;
}

void VocabIndex::build(const std::vector<std::string>& tokens) {
    tokens_ = &tokens;
    size_t capacity = 16;
    while (capacity < tokens.size() * 2) capacity *= 2;
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    for (size_t id = 0; id < tokens.size(); ++id) {
        const uint64_t h = hash(tokens[id]);
        const auto tag = static_cast<uint32_t>(h >> 32);
        for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
            Slot& slot = slots_[i];
            if (slot.id < 0) {
                slot = {tag, static_cast<int32_t>(id)};
                break;
            }
            if (slot.hash_tag == tag && tokens[static_cast<size_t>(slot.id)] == tokens[id]) {
                slot.id = static_cast<int32_t>(id);
                break;
            }
        }
    }
}

int32_t VocabIndex::find(std::string_view text) const {
    if (slots_.empty()) return -1;
    const uint64_t h = hash(text);
    const auto tag = static_cast<uint32_t>(h >> 32);
    for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
        const Slot& slot = slots_[i];
        if (slot.id < 0) return -1;
        if (slot.hash_tag == tag && (*tokens_)[static_cast<size_t>(slot.id)] == text) return slot.id;
    }
}

}  // namespace folio::tokenizer_detail
