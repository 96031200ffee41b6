// The one token-choice pipeline (see token_choice.h): plan, forward, choose.
#include "runtime/token_choice.h"

#include <algorithm>
#include <cstdio>

#include "cpu/thread_pool.h"

namespace folio {

TokenChooser::TokenChooser(Backend& backend, int sampling_threads)
    : backend_(backend), sampling_threads_(sampling_threads) {}

TokenChooser::~TokenChooser() = default;

ChoicePlan TokenChooser::plan(std::span<const TokenDraw> draws, size_t n_rows) const {
    // Where a GPU backend can, the logits stay on it: a step whose rows are
    // all greedy gets only the chosen ids back; one whose rows can all draw
    // from their best few entries (top-k plus the penalty window, top-p or
    // min-p, logprobs; Sampler::candidates_needed) gets each row's k best
    // (k = the most any row needs), with sums over each whole row where a
    // row needs them. A step whose rows are all greedy or drawn by
    // temperature alone or by top-p or min-p without top-k, penalties or
    // not, and want no logprobs, gets each row's token drawn there; where
    // top-p rows could take the top-k path, that path is cheaper (no sort of
    // whole rows). Anything else (penalties that raise logits under a top-k,
    // penalties with logprobs and no top-k) gets whole rows.
    const size_t n_vocab = static_cast<size_t>(backend_.n_vocab());
    bool device_greedy = backend_.can_argmax();
    bool device_draw = backend_.can_draw();
    const int32_t max_top_k = backend_.max_top_k(n_rows);
    ChoicePlan plan;
    int32_t top_k = max_top_k > 0 ? 1 : 0;
    bool sums = false;
    for (const TokenDraw& d : draws) {
        const Sampler& s = *d.sampler;
        const SamplingParams& sp = s.params();
        const bool greedy = sp.temperature == 0.0f && !sp.has_penalties() && sp.n_logprobs == 0;
        if (!d.distribution.empty()) device_greedy = device_draw = false, top_k = 0;
        if (!greedy || d.repeated) device_greedy = false;
        const bool by_top_p = s.draws_by_top_p() && sp.n_logprobs == 0;
        if (!(s.draws_by_temperature() || by_top_p) || d.repeated) device_draw = false;
        plan.any_top_p = plan.any_top_p || by_top_p;
        if (top_k == 0 || greedy) continue;
        const int32_t needed = s.candidates_needed(d.history.size());
        if (needed > 0 && needed <= max_top_k && static_cast<size_t>(needed) < n_vocab) {
            top_k = std::max(top_k, needed);
            sums = sums || s.needs_row_sums();
        } else {
            top_k = 0;
        }
    }
    if (device_draw && plan.any_top_p && top_k > 0) device_draw = false;
    if (device_greedy) {
        plan.form = ChoiceForm::DeviceArgmax;
    } else if (device_draw) {
        plan.form = ChoiceForm::DeviceDraw;
    } else if (top_k > 0) {
        plan.form = ChoiceForm::BestEntries;
        plan.top_k = top_k;
        plan.row_sums = sums;
    }
    return plan;
}

Status TokenChooser::forward(const Batch& batch, const ChoicePlan& plan, std::span<const TokenDraw> draws) {
    const size_t n_rows = batch.logits_rows.size();
    n_device_top_p_ = 0;
    switch (plan.form) {
        case ChoiceForm::DeviceArgmax:
            chosen_ids_.resize(n_rows);
            return backend_.forward_argmax(batch, chosen_ids_);
        case ChoiceForm::DeviceDraw: return forward_draw(batch, plan, draws);
        case ChoiceForm::BestEntries: {
            const auto k = static_cast<size_t>(plan.top_k);
            logits_.resize(n_rows * k);
            chosen_ids_.resize(logits_.size());
            RowSums sums;
            if (plan.row_sums) {
                row_temperatures_.assign(n_rows, 1.0f);
                for (const TokenDraw& d : draws) {
                    const float t = d.sampler->params().temperature;
                    row_temperatures_[d.row] = t > 0.0f ? t : 1.0f;
                }
                row_softmax_sums_.resize(n_rows);
                row_log_normalizers_.resize(n_rows);
                sums = {row_temperatures_, row_softmax_sums_, row_log_normalizers_};
            }
            return backend_.forward_top_k(batch, plan.top_k, logits_, chosen_ids_, sums);
        }
        case ChoiceForm::WholeRows:
            logits_.resize(n_rows * static_cast<size_t>(backend_.n_vocab()));
            return backend_.forward(batch, logits_);
    }
    return make_error("token choice: unknown form");
}

Status TokenChooser::forward_draw(const Batch& batch, const ChoicePlan& plan, std::span<const TokenDraw> draws) {
    // Each row's temperature (0: greedy), top-p cut, penalty window counts and
    // the uniform value its Sampler takes now, as its own draw would.
    const size_t n_rows = batch.logits_rows.size();
    chosen_ids_.resize(n_rows);
    row_temperatures_.resize(n_rows);
    row_uniforms_.clear();
    row_top_p_.clear();
    row_min_p_.clear();
    DrawPenalties& p = draw_penalties_;
    p.offsets.clear();
    p.ids.clear();
    p.counts.clear();
    p.params.clear();
    for (const TokenDraw& d : draws) {  // one per row, in row order
        const SamplingParams& sp = d.sampler->params();
        const bool greedy = sp.temperature == 0.0f;
        row_temperatures_[d.row] = greedy ? 0.0f : sp.temperature;
        const bool top_p = d.sampler->draws_by_top_p();
        row_top_p_.push_back(top_p ? sp.top_p : 1.0f);
        row_min_p_.push_back(top_p ? sp.min_p : 0.0f);
        n_device_top_p_ += top_p;
        row_uniforms_.push_back(greedy ? 0.0 : d.sampler->take_uniform());
        p.offsets.push_back(static_cast<int32_t>(p.ids.size()));
        penalty_counts(d.history, sp, p.scratch, p.ids, p.counts);
        p.params.insert(p.params.end(), {sp.repetition_penalty, sp.frequency_penalty, sp.presence_penalty});
    }
    p.offsets.push_back(static_cast<int32_t>(p.ids.size()));
    RowDraws row_draws{row_temperatures_, row_uniforms_, {}, {}, {}, {}, {}, {}};
    if (!p.ids.empty()) {
        row_draws.penalty_offsets = p.offsets;
        row_draws.penalty_ids = p.ids;
        row_draws.penalty_counts = p.counts;
        row_draws.penalty_params = p.params;
    }
    if (plan.any_top_p) {
        row_draws.top_p = row_top_p_;
        row_draws.min_p = row_min_p_;
    }
    return backend_.forward_draw(batch, row_draws, chosen_ids_);
}

void TokenChooser::choose(const ChoicePlan& plan, std::span<const TokenDraw> draws, std::span<int32_t> tokens) {
    n_whole_rows_ = 0;
    if (plan.form == ChoiceForm::DeviceArgmax || plan.form == ChoiceForm::DeviceDraw) {
        for (size_t i = 0; i < draws.size(); ++i) tokens[i] = chosen_ids_[draws[i].row];
        return;
    }
    const size_t n_vocab = static_cast<size_t>(backend_.n_vocab());
    std::vector<size_t> whole;             // draws from a whole row
    std::vector<const float*> whole_rows;  // and that row
    if (plan.form == ChoiceForm::WholeRows) {
        for (size_t i = 0; i < draws.size(); ++i) {
            whole.push_back(i);
            whole_rows.push_back(logits_.data() + draws[i].row * n_vocab);
        }
    } else {
        // A row whose best entries cannot decide (top-p's set reaches past
        // them: a flat distribution) is drawn on the backend where it can,
        // else comes down in one download of all such rows.
        std::vector<size_t> undecided;
        choose_from_entries(plan, draws, tokens, undecided);
        if (!undecided.empty() && backend_.can_draw_last_rows() && !device_draws_failed_)
            draw_on_backend(plan, draws, undecided, tokens);
        if (!undecided.empty()) {
            std::vector<size_t> rows;
            for (size_t i : undecided) rows.push_back(draws[i].row);
            whole_row_.resize(undecided.size() * n_vocab);
            const Status fetched = backend_.last_logits_rows(rows, whole_row_);
            if (!fetched)
                std::fprintf(stderr, "folio: %s; sampling the best entries\n", fetched.error().message.c_str());
            for (size_t j = 0; j < undecided.size(); ++j) {
                const size_t i = undecided[j];
                if (fetched) {
                    whole.push_back(i);
                    whole_rows.push_back(whole_row_.data() + j * n_vocab);
                } else {
                    tokens[i] = chosen_ids_[draws[i].row * static_cast<size_t>(plan.top_k)];
                }
            }
        }
    }
    n_whole_rows_ = whole.size();
    draw_whole_rows(draws, whole, whole_rows, tokens);
}

void TokenChooser::choose_from_entries(const ChoicePlan& plan, std::span<const TokenDraw> draws,
                                       std::span<int32_t> tokens, std::vector<size_t>& undecided) {
    const auto k = static_cast<size_t>(plan.top_k);
    for (size_t i = 0; i < draws.size(); ++i) {
        const TokenDraw& d = draws[i];
        const size_t at = d.row * k;
        const RowSum sum =
            plan.row_sums ? RowSum{row_softmax_sums_[d.row], row_log_normalizers_[d.row]} : RowSum{};
        tokens[i] = d.sampler->sample_top_k(std::span<const float>(logits_.data() + at, k),
                                            std::span<const int32_t>(chosen_ids_.data() + at, k), d.history,
                                            plan.row_sums ? &sum : nullptr,
                                            d.sampler->params().n_logprobs > 0 ? d.info : nullptr);
        if (tokens[i] == Sampler::kNeedsWholeRow) undecided.push_back(i);
    }
}

void TokenChooser::draw_on_backend(const ChoicePlan& plan, std::span<const TokenDraw> draws,
                                   std::vector<size_t>& undecided, std::span<int32_t> tokens) {
    // Rows drawn from the whole row (temperature alone, top-p, min-p) without
    // penalties (penalties never get here without top-k: their steps bring
    // whole rows). Each Sampler takes its uniform value as its own draw
    // would; a row that wants logprobs gets them from the best entries and
    // RowSum it already has, with the drawn token's logit.
    std::vector<size_t> drawn, drawn_rows, left;
    std::vector<WholeRowDraw> row_draws;
    for (size_t i : undecided) {
        Sampler& s = *draws[i].sampler;
        const SamplingParams& p = s.params();
        if (!s.draws_from_whole_row() || p.has_penalties()) {
            left.push_back(i);
            continue;
        }
        drawn.push_back(i), drawn_rows.push_back(draws[i].row);
        row_draws.push_back({p.temperature, p.top_p, p.min_p, s.take_uniform()});
    }
    if (drawn.empty()) return;
    std::vector<DrawnToken> out(drawn.size());
    if (const Status st = backend_.draw_last_rows(drawn_rows, row_draws, out); !st) {
        // The rows come down whole instead, from now on (their Samplers have
        // taken a value: the draws are still the Sampler's, from the next value
        // of their streams).
        std::fprintf(stderr, "folio: %s; drawing those rows on the host from now on\n", st.error().message.c_str());
        device_draws_failed_ = true;
        return;
    }
    const auto k = static_cast<size_t>(plan.top_k);
    for (size_t j = 0; j < drawn.size(); ++j) {
        const TokenDraw& d = draws[drawn[j]];
        tokens[drawn[j]] = out[j].id;
        n_device_top_p_ += d.sampler->draws_by_top_p();
        if (d.sampler->params().n_logprobs == 0 || !d.info) continue;
        const size_t at = d.row * k;
        d.sampler->report_drawn(std::span<const float>(logits_.data() + at, k),
                                std::span<const int32_t>(chosen_ids_.data() + at, k),
                                {row_softmax_sums_[d.row], row_log_normalizers_[d.row]}, out[j].logit,
                                out[j].n_candidates, *d.info);
    }
    undecided = std::move(left);
}

void TokenChooser::draw_whole_rows(std::span<const TokenDraw> draws, std::span<const size_t> which,
                                   std::span<const float* const> rows, std::span<int32_t> tokens) {
    const size_t n_vocab = static_cast<size_t>(backend_.n_vocab());
    auto draw = [&](int64_t j, int) {
        const TokenDraw& d = draws[which[static_cast<size_t>(j)]];
        const std::span<const float> row(rows[static_cast<size_t>(j)], n_vocab);
        SampleInfo* info = d.sampler->params().n_logprobs > 0 ? d.info : nullptr;
        tokens[which[static_cast<size_t>(j)]] = d.distribution.empty()
                                                    ? d.sampler->sample(row, d.history, info)
                                                    : d.sampler->sample_with_distribution(row, d.history, d.distribution, info);
    };
    // One row (a lone chat) is drawn here: waking the pool would only leave
    // its workers spinning beside the next step's compute. Each sequence's
    // Sampler is its own, so different sequences' rows are drawn at once;
    // the rows of one sequence (a verified draft's K + 1, next to each other)
    // share it and are drawn in order, as one task.
    if (which.empty()) return;
    std::vector<size_t> group_start{0};
    for (size_t j = 1; j < which.size(); ++j)
        if (draws[which[j]].sampler != draws[which[j - 1]].sampler) group_start.push_back(j);
    group_start.push_back(which.size());
    const auto n_groups = static_cast<int64_t>(group_start.size() - 1);
    auto draw_group = [&](int64_t g, int) {
        for (size_t j = group_start[static_cast<size_t>(g)]; j < group_start[static_cast<size_t>(g) + 1]; ++j)
            draw(static_cast<int64_t>(j), 0);
    };
    if (n_groups == 1) {
        draw_group(0, 0);
        return;
    }
    if (!sampling_pool_) {  // the first step that needs it: greedy or GPU-only use never starts it
        int threads = sampling_threads_;
        if (threads <= 0)
            threads = backend_.n_threads() > 1 ? backend_.n_threads() : std::min(cpu::physical_core_count(), 8);
        sampling_pool_ = std::make_unique<cpu::ThreadPool>(threads);
    }
    sampling_pool_->parallel_for(n_groups, draw_group);
}

}  // namespace folio
