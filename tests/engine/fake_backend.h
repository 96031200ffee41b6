// A Backend for engine tests that computes nothing heavy but depends on
// everything the real one does: each KV slot holds the token written there,
// and a row's logits are a one-hot vector at a hash of the tokens its
// sequence's block table makes it read (positions 0..its own). A wrong block
// table, a stale prefix-cache hit or a missed copy-on-write changes what it
// generates, so "same output" tests mean something. Batch-invariant by
// construction; ~2 % of continuations are the tokenizer's EOS.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "folio/backend.h"
#include "folio/sampling.h"

class FakeBackend final : public folio::Backend {
public:
    FakeBackend(int32_t n_vocab, int32_t eos, uint32_t n_blocks, uint32_t block_size = 4, uint32_t max_context = 256)
        : n_vocab_(n_vocab), eos_(eos), n_blocks_(n_blocks), block_size_(block_size), max_context_(max_context),
          slots_(size_t{n_blocks} * block_size, -1) {}

    folio::Status forward(const folio::Batch& batch, std::span<float> logits) override {
        ++steps;
        if (forward_delay.count() > 0) std::this_thread::sleep_for(forward_delay);
        if (row_delay.count() > 0) std::this_thread::sleep_for(row_delay * batch.n_tokens());
        rows += static_cast<uint64_t>(batch.n_tokens());
        step_rows.push_back(batch.n_tokens());
        for (int32_t r = 0; r < batch.n_tokens(); ++r)
            slots_[static_cast<size_t>(batch.slot_mapping[static_cast<size_t>(r)])] = batch.token_ids[static_cast<size_t>(r)];
        std::fill(logits.begin(), logits.end(), 0.0f);
        for (size_t i = 0; i < batch.logits_rows.size(); ++i) {
            const int32_t row = batch.logits_rows[i];
            const folio::BatchSequence* seq = nullptr;
            for (const auto& s : batch.sequences)
                if (row >= s.query_start && row < s.query_start + s.n_query) seq = &s;
            if (!seq) return folio::make_error("fake: logits row without a sequence");
            const int32_t pos = batch.positions[static_cast<size_t>(row)];
            uint64_t h = 1469598103934665603ULL;
            for (int32_t p = 0; p <= pos; ++p) {
                const int64_t slot = int64_t{seq->block_table[static_cast<size_t>(p) / block_size_]} * block_size_ +
                                     p % static_cast<int32_t>(block_size_);
                h = (h ^ static_cast<uint32_t>(slots_[static_cast<size_t>(slot)] + 1)) * 1099511628211ULL;
            }
            h ^= h >> 29;
            int32_t next = h % 50 == 0 ? eos_ : static_cast<int32_t>('a' + (h >> 8) % 26);
            if (copy_period > 0 && pos + 1 >= copy_period && (h >> 40) % 4 != 0) {
                // Mostly a copy of the token copy_period back (read through
                // the block table too): text that repeats, as n-gram
                // drafts like it, with a novel token a quarter of the time.
                const int32_t p = pos + 1 - copy_period;
                next = slots_[static_cast<size_t>(int64_t{seq->block_table[static_cast<size_t>(p) / block_size_]} *
                                                      block_size_ + p % static_cast<int32_t>(block_size_))];
            }
            logits[i * static_cast<size_t>(n_vocab_) + static_cast<size_t>(next)] = 5.0f;  // ~36 % at temperature 1
        }
        return {};
    }
    // As a GPU backend does: greedy steps choose their tokens here (the
    // first highest logit), when `chooses_tokens` is set.
    bool can_argmax() const override { return chooses_tokens; }
    folio::Status forward_argmax(const folio::Batch& batch, std::span<int32_t> ids) override {
        ++argmax_steps;
        std::vector<float> logits(batch.logits_rows.size() * static_cast<size_t>(n_vocab_));
        if (folio::Status s = forward(batch, logits); !s) return s;
        for (size_t i = 0; i < batch.logits_rows.size(); ++i) {
            const float* row = logits.data() + i * static_cast<size_t>(n_vocab_);
            ids[i] = static_cast<int32_t>(std::max_element(row, row + n_vocab_) - row);
        }
        return {};
    }
    bool chooses_tokens = false;
    uint64_t argmax_steps = 0;
    // As a GPU backend does for draws at a plain temperature (or greedy):
    // each row's token drawn here with the uniform value its Sampler took,
    // when `draws_tokens` is set.
    bool can_draw() const override { return draws_tokens; }
    folio::Status forward_draw(const folio::Batch& batch, const folio::RowDraws& draws,
                               std::span<int32_t> ids) override {
        ++draw_steps;
        const auto vocab = static_cast<size_t>(n_vocab_);
        std::vector<float> logits(batch.logits_rows.size() * vocab);
        if (folio::Status s = forward(batch, logits); !s) return s;
        for (size_t i = 0; i < batch.logits_rows.size(); ++i) {
            float* row = logits.data() + i * vocab;
            if (!draws.penalty_ids.empty()) {
                folio::SamplingParams p;
                p.repetition_penalty = draws.penalty_params[3 * i];
                p.frequency_penalty = draws.penalty_params[3 * i + 1];
                p.presence_penalty = draws.penalty_params[3 * i + 2];
                for (auto k = draws.penalty_offsets[i]; k < draws.penalty_offsets[i + 1]; ++k) {
                    const int32_t id = draws.penalty_ids[static_cast<size_t>(k)];
                    if (id >= 0 && id < n_vocab_)
                        row[id] = folio::penalized_logit(row[id], draws.penalty_counts[static_cast<size_t>(k)], p);
                }
                ++penalized_draw_rows;
            }
            folio::SamplingParams p;
            p.temperature = draws.temperatures[i], p.top_k = 0, p.top_p = 1.0f, p.min_p = 0.0f;
            if (!draws.top_p.empty() && (draws.top_p[i] < 1.0f || draws.min_p[i] > 0.0f) && p.temperature > 0.0f) {
                p.top_p = draws.top_p[i], p.min_p = draws.min_p[i];
                ++top_p_draw_rows;
            }
            ids[i] = folio::draw_with_uniform(std::span<const float>(row, vocab), p, draws.uniforms[i]);
        }
        return {};
    }
    bool draws_tokens = false;
    uint64_t draw_steps = 0, penalized_draw_rows = 0, top_p_draw_rows = 0;
    // As a GPU backend does for top-k sampling: each row's k best entries,
    // selected here, when `selects_top_k` is set.
    // With RowSums asked for, the sums too; the step's rows stay readable
    // (last_logits_rows) until the next step.
    int32_t max_top_k(size_t) const override { return selects_top_k ? max_k : 0; }
    folio::Status forward_top_k(const folio::Batch& batch, int32_t k, std::span<float> values,
                                std::span<int32_t> ids, const folio::RowSums& sums) override {
        ++top_k_steps;
        if (!sums.empty()) ++sums_steps;
        const auto vocab = static_cast<size_t>(n_vocab_), kk = static_cast<size_t>(k);
        last_logits_.assign(batch.logits_rows.size() * vocab, 0.0f);
        if (folio::Status s = forward(batch, last_logits_); !s) return s;
        std::vector<folio::sampling_detail::Candidate> top;
        for (size_t i = 0; i < batch.logits_rows.size(); ++i) {
            const std::span<const float> row(last_logits_.data() + i * vocab, vocab);
            folio::select_top_k(row, kk, top);
            for (size_t j = 0; j < kk; ++j) values[i * kk + j] = top[j].logit, ids[i * kk + j] = top[j].id;
            if (!sums.empty()) {
                const folio::RowSum sum = folio::row_sums(row, sums.temperatures[i]);
                sums.softmax_sums[i] = sum.softmax_sum;
                sums.log_normalizers[i] = sum.log_normalizer;
            }
        }
        return {};
    }
    folio::Status last_logits_rows(std::span<const size_t> wanted, std::span<float> out) override {
        const auto vocab = static_cast<size_t>(n_vocab_);
        if (out.size() < wanted.size() * vocab) return folio::make_error("fake: too small a buffer");
        for (size_t i = 0; i < wanted.size(); ++i) {
            if ((wanted[i] + 1) * vocab > last_logits_.size()) return folio::make_error("fake: no such row");
            ++whole_rows_fetched;
            std::copy_n(last_logits_.begin() + static_cast<std::ptrdiff_t>(wanted[i] * vocab), vocab,
                        out.begin() + static_cast<std::ptrdiff_t>(i * vocab));
        }
        return {};
    }
    // As a GPU backend does for rows whose best entries could not decide:
    // each drawn from the step's row with the uniform value its Sampler took
    // (the Sampler's own reference draw), when `draws_last_rows` is set.
    bool can_draw_last_rows() const override { return draws_last_rows; }
    folio::Status draw_last_rows(std::span<const size_t> wanted, std::span<const folio::WholeRowDraw> draws,
                                 std::span<folio::DrawnToken> out) override {
        const auto vocab = static_cast<size_t>(n_vocab_);
        for (size_t i = 0; i < wanted.size(); ++i) {
            if ((wanted[i] + 1) * vocab > last_logits_.size()) return folio::make_error("fake: no such row");
            const std::span<const float> row(last_logits_.data() + wanted[i] * vocab, vocab);
            folio::SamplingParams p;
            p.temperature = draws[i].temperature, p.top_k = 0, p.top_p = draws[i].top_p, p.min_p = draws[i].min_p;
            folio::SampleInfo info;
            const int32_t id = folio::draw_with_uniform(row, p, draws[i].uniform, &info);
            out[i] = {id, info.n_candidates, row[static_cast<size_t>(id)]};  // (the fake's logits are finite)
            ++last_rows_drawn;
        }
        return {};
    }
    bool selects_top_k = false, draws_last_rows = false;
    int32_t max_k = 128;
    uint64_t top_k_steps = 0, sums_steps = 0, whole_rows_fetched = 0, last_rows_drawn = 0;
    struct Counters {
        uint64_t sums_steps = 0, whole_rows_fetched = 0, last_rows_drawn = 0;
    };
    Counters counters() const { return {sums_steps, whole_rows_fetched, last_rows_drawn}; }

    folio::Status copy_blocks(std::span<const folio::BlockCopy> copies) override {
        for (const auto& c : copies)
            std::copy_n(slots_.begin() + c.src * static_cast<int64_t>(block_size_), block_size_,
                        slots_.begin() + c.dst * static_cast<int64_t>(block_size_));
        return {};
    }
    // Host swap space as a GPU backend has it: `swap_slots` blocks (set
    // before the engine starts), taken at the first swap. cannot_pin: taking
    // it fails (nothing copied, no swap space from then on). skip_swap_in is a
    // mutation check: resumed sequences then read whatever their new blocks held.
    uint32_t n_swap_blocks() const override { return swap_slots; }
    folio::Status swap_blocks(std::span<const folio::BlockCopy> out, std::span<const folio::BlockCopy> in) override {
        if (!out.empty() && cannot_pin) {
            swap_slots = 0;
            return folio::make_error("fake: cannot pin the swap space");
        }
        swap_space_.resize(size_t{swap_slots} * block_size_, -1);
        for (const auto& c : out)
            std::copy_n(slots_.begin() + c.src * static_cast<int64_t>(block_size_), block_size_,
                        swap_space_.begin() + c.dst * static_cast<int64_t>(block_size_));
        for (const auto& c : in)
            if (!skip_swap_in)
                std::copy_n(swap_space_.begin() + c.src * static_cast<int64_t>(block_size_), block_size_,
                            slots_.begin() + c.dst * static_cast<int64_t>(block_size_));
        swapped_out += out.size();
        swapped_in += in.size();
        return {};
    }
    uint32_t swap_slots = 0;
    bool cannot_pin = false;
    bool skip_swap_in = false;
    uint64_t swapped_out = 0, swapped_in = 0;

    int32_t n_vocab() const override { return n_vocab_; }
    uint32_t block_size() const override { return block_size_; }
    uint32_t n_blocks() const override { return n_blocks_; }
    uint32_t max_context() const override { return max_context_; }
    uint64_t kv_cache_bytes() const override { return slots_.size() * sizeof(int32_t); }
    uint64_t kv_bytes_per_block() const override { return block_size_ * sizeof(int32_t); }
    int n_threads() const override { return 1; }
    std::string name() const override { return "fake"; }

    uint64_t steps = 0, rows = 0;
    std::vector<int32_t> step_rows;  // each forward pass's rows
    int32_t copy_period = 0;  // > 0: continuations mostly repeat the token this far back
    std::chrono::microseconds forward_delay{0};  // as a device's work would take
    std::chrono::microseconds row_delay{0};      // per row of a pass: a compute-bound prefill

private:
    int32_t n_vocab_, eos_;
    uint32_t n_blocks_, block_size_, max_context_;
    std::vector<int32_t> slots_;
    std::vector<int32_t> swap_space_;
    std::vector<float> last_logits_;
};
