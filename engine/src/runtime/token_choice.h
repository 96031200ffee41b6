// Token choice as one pipeline: a step's logits rows each get one or more
// draws (a sequence's Sampler over its history), and one plan says what the
// backend hands back so that every draw is the Sampler's own, bit for bit:
//
//   plan()    from the rows' sampling options, the cheapest form that decides
//             every draw: ids alone (all greedy: forward_argmax), tokens drawn
//             where the logits are (temperature / top-p / min-p, penalties or
//             not: forward_draw), each row's k best entries (+ RowSums) for the
//             Sampler to draw from (forward_top_k), or whole rows (forward);
//   forward() asks the backend for that, taking each drawing row's uniform
//             value from its Sampler where the device draws;
//   choose()  turns what came back into one token per draw: from the entries
//             (rows they cannot decide drawn on the backend, Backend::
//             draw_last_rows, or fetched whole), or from whole rows on the
//             sampling pool.
//
// The CPU backend only ever gets whole rows: the Sampler there is the
// reference that every other form reproduces. Speculative verification is
// this same pipeline over a sequence's K + 1 rows (each with its own
// draft-extended history) followed by the acceptance rule (spec/verifier.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "folio/backend.h"
#include "folio/batch.h"
#include "folio/sampling.h"

namespace folio {

namespace cpu {
class ThreadPool;
}

// One draw from a logits row.
struct TokenDraw {
    size_t row = 0;                    // index into Batch::logits_rows
    Sampler* sampler = nullptr;        // the sequence's (its random state is taken in draw order)
    std::span<const int32_t> history;  // the tokens before the one drawn, for the penalties
    SampleInfo* info = nullptr;        // filled with the logprobs when the sampler reports them
    bool repeated = false;             // the row is drawn again by another draw (n > 1 forking):
                                       // only a form that keeps the row can serve it
    std::span<float> distribution{};   // non-empty (n_vocab): also the distribution drawn from
                                       // (speculative sampling's p); whole rows serve it
};

enum class ChoiceForm {
    DeviceArgmax,  // ids only: every row greedy
    DeviceDraw,    // tokens drawn where the logits are (RowDraws)
    BestEntries,   // each row's top_k best entries (+ RowSums), drawn here
    WholeRows,     // whole rows, drawn here
};

struct ChoicePlan {
    ChoiceForm form = ChoiceForm::WholeRows;
    int32_t top_k = 0;       // BestEntries: entries per row
    bool row_sums = false;   // BestEntries: with RowSums (top-p without top-k, logprobs)
    bool any_top_p = false;  // DeviceDraw: some row draws by top-p or min-p
};

class TokenChooser {
public:
    // sampling_threads: EngineConfig::sampling_threads.
    TokenChooser(Backend& backend, int sampling_threads);
    ~TokenChooser();
    TokenChooser(const TokenChooser&) = delete;
    TokenChooser& operator=(const TokenChooser&) = delete;

    // The form for a step whose rows are drawn by `draws` (one per row here,
    // in row order; repeated ones marked).
    ChoicePlan plan(std::span<const TokenDraw> draws, size_t n_rows) const;
    // The forward pass in that form.
    Status forward(const Batch& batch, const ChoicePlan& plan, std::span<const TokenDraw> draws);
    // tokens[i] for draws[i], after forward(); draws may name a row more than
    // once (the forks of n > 1, appended after the rows' own draws).
    void choose(const ChoicePlan& plan, std::span<const TokenDraw> draws, std::span<int32_t> tokens);

    // Of the last choose(): draws made from whole rows on the host, and
    // top-p / min-p draws made on the device.
    size_t n_whole_rows() const { return n_whole_rows_; }
    size_t n_device_top_p() const { return n_device_top_p_; }

private:
    Status forward_draw(const Batch& batch, const ChoicePlan& plan, std::span<const TokenDraw> draws);
    // Draws from the best entries; those they cannot decide go to `undecided`.
    void choose_from_entries(const ChoicePlan& plan, std::span<const TokenDraw> draws, std::span<int32_t> tokens,
                             std::vector<size_t>& undecided);
    // Of `undecided` (draws), those the backend can draw where the logits are
    // (no penalties, no top-k) are drawn there and leave the list.
    void draw_on_backend(const ChoicePlan& plan, std::span<const TokenDraw> draws, std::vector<size_t>& undecided,
                         std::span<int32_t> tokens);
    void draw_whole_rows(std::span<const TokenDraw> draws, std::span<const size_t> which,
                         std::span<const float* const> rows, std::span<int32_t> tokens);

    Backend& backend_;
    int sampling_threads_;
    std::vector<float> logits_;        // whole rows, or a top-k step's values [rows][k]
    std::vector<int32_t> chosen_ids_;  // a device step's tokens, or a top-k step's ids [rows][k]
    std::vector<float> row_temperatures_, row_log_normalizers_;  // a top-k step's RowSums [rows]
    std::vector<double> row_softmax_sums_;
    std::vector<double> row_uniforms_;          // a drawing step's RowDraws [rows]
    std::vector<float> row_top_p_, row_min_p_;  // and its rows' top-p cuts
    struct DrawPenalties {                      // and its rows' penalties (RowDraws::penalty_*)
        std::vector<int32_t> offsets, ids, scratch;
        std::vector<float> counts, params;
    } draw_penalties_;
    std::vector<float> whole_row_;      // rows a top-k step's entries could not decide
    bool device_draws_failed_ = false;  // draw_last_rows failed once: those rows come down whole
    std::unique_ptr<cpu::ThreadPool> sampling_pool_;  // draws from whole rows, in parallel
    size_t n_whole_rows_ = 0, n_device_top_p_ = 0;
};

}  // namespace folio
