#include "folio/generate.h"

#include <algorithm>

namespace folio {

SequenceRunner::SequenceRunner(Backend& backend, int32_t max_chunk)
    : backend_(backend), max_chunk_(std::max(1, max_chunk)) {
    for (int32_t b = static_cast<int32_t>(backend.n_blocks()) - 1; b >= 0; --b) free_blocks_.push_back(b);
}

int32_t SequenceRunner::capacity() const {
    const uint64_t cache_tokens = uint64_t{backend_.n_blocks()} * backend_.block_size();
    return static_cast<int32_t>(std::min<uint64_t>(cache_tokens, backend_.max_context()));
}

void SequenceRunner::truncate(int32_t n) {
    n = std::clamp(n, 0, length());
    tokens_.resize(static_cast<size_t>(n));
    const auto blocks_needed = static_cast<size_t>((n + backend_.block_size() - 1) / backend_.block_size());
    while (block_table_.size() > blocks_needed) {
        free_blocks_.push_back(block_table_.back());
        block_table_.pop_back();
    }
}

Status SequenceRunner::slide(int32_t keep, int32_t drop) {
    const auto block = static_cast<int32_t>(backend_.block_size());
    if (keep < 0 || drop < 1 || keep % block || drop % block || keep + drop >= length())
        return make_error("slide: keep " + std::to_string(keep) + " and drop " + std::to_string(drop) +
                          " must be whole blocks of " + std::to_string(block) + " inside the " +
                          std::to_string(length()) + " tokens");
    if (!backend_.can_shift_keys()) return make_error("backend " + backend_.name() + " cannot shift cached keys");
    const auto first = block_table_.begin() + keep / block, last = first + drop / block;
    const std::vector<int32_t> moved(last, block_table_.end());
    if (Status s = backend_.shift_keys(moved, drop); !s) return s;
    free_blocks_.insert(free_blocks_.end(), first, last);
    block_table_.erase(first, last);
    tokens_.erase(tokens_.begin() + keep, tokens_.begin() + keep + drop);
    return {};
}

Status SequenceRunner::append_from(std::span<const int32_t> tokens, int32_t first_logit_row,
                                   std::vector<float>& logits) {
    if (tokens.empty()) return make_error("nothing to run: no tokens");
    const auto n_tokens = static_cast<int64_t>(tokens.size());
    if (first_logit_row < 0 || first_logit_row >= n_tokens) return make_error("logits asked for a row outside the tokens");
    const int64_t new_length = int64_t{length()} + static_cast<int64_t>(tokens.size());
    if (new_length > capacity())
        return make_error("the sequence would be " + std::to_string(new_length) + " tokens; the context holds " +
                          std::to_string(capacity()));
    const int32_t n_vocab = backend_.n_vocab();
    const int32_t block = static_cast<int32_t>(backend_.block_size());
    logits.resize(static_cast<size_t>(n_tokens - first_logit_row) * static_cast<size_t>(n_vocab));
    const int32_t start_length = length();

    for (size_t done = 0; done < tokens.size();) {
        const auto n = static_cast<int32_t>(std::min<size_t>(static_cast<size_t>(max_chunk_), tokens.size() - done));
        const int32_t past = length();
        while (static_cast<int64_t>(block_table_.size()) * block < past + n) {
            block_table_.push_back(free_blocks_.back());
            free_blocks_.pop_back();
        }
        batch_.clear();
        for (int32_t i = 0; i < n; ++i) {
            const int32_t pos = past + i;
            batch_.token_ids.push_back(tokens[done + static_cast<size_t>(i)]);
            batch_.positions.push_back(pos);
            batch_.slot_mapping.push_back(int64_t{block_table_[static_cast<size_t>(pos / block)]} * block + pos % block);
        }
        batch_.sequences.push_back(BatchSequence{0, n, past + n, block_table_});
        const int64_t first_row = std::max<int64_t>(first_logit_row, static_cast<int64_t>(done));
        for (int64_t row = first_row; row < static_cast<int64_t>(done) + n; ++row)
            batch_.logits_rows.push_back(static_cast<int32_t>(row - static_cast<int64_t>(done)));
        std::span<float> out;
        if (!batch_.logits_rows.empty())
            out = std::span<float>(logits).subspan(static_cast<size_t>(first_row - first_logit_row) *
                                                   static_cast<size_t>(n_vocab));
        if (Status s = backend_.forward(batch_, out); !s) {
            truncate(start_length);
            return s;
        }
        tokens_.insert(tokens_.end(), batch_.token_ids.begin(), batch_.token_ids.end());
        done += static_cast<size_t>(n);
    }
    return {};
}

}  // namespace folio
