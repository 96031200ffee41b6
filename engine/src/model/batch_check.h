// Every backend checks a batch against its KV cache before any kernel sees
// it, so a scheduler bug becomes an Error, not a stray write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "folio/batch.h"
#include "folio/error.h"
#include "model/ops.h"

namespace folio::model {

// Checks token ids against n_vocab, slots and block tables against a cache of
// n_blocks blocks of block_size tokens, sequence lengths against
// max_context, row ranges and logits rows against the batch, and the
// output's size (a logits row or an id per logits row); fills row_sequence
// with each row's sequence index.
Status check_batch(const Batch& batch, const StepOutput& out, int32_t n_vocab, uint32_t n_blocks, uint32_t block_size,
                   uint32_t max_context, std::vector<int32_t>& row_sequence);

// Every copy's source and destination inside a cache of n_blocks blocks.
Status check_block_copies(std::span<const BlockCopy> copies, uint32_t n_blocks);
// The same between two pools (a swap: device blocks and host slots); `what` names the operation.
Status check_block_copies(std::span<const BlockCopy> copies, uint32_t n_src, uint32_t n_dst, const char* what);

// Every block id inside a cache of n_blocks blocks; `what` names the operation.
Status check_blocks(std::span<const int32_t> blocks, uint32_t n_blocks, const char* what);

// RowSums fit for n_rows rows: empty, or every span that long, with
// temperatures above 0.
Status check_row_sums(const RowSums& sums, int64_t n_rows);

}  // namespace folio::model
