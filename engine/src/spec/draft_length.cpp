// Adaptive K (folio/spec.h, DraftLengthTuner): expected tokens per unit of
// step time, from a per-request acceptance estimate and a measured cost model.
#include <algorithm>
#include <cmath>

#include "folio/spec.h"

namespace folio {

DraftLengthTuner::DraftLengthTuner(int32_t draft_max) : draft_max_(std::max(1, draft_max)) {}

void DraftLengthTuner::CostFit::observe(int32_t n_rows, double seconds) {
    if (n_rows <= 0 || !(seconds > 0)) return;
    // Recent passes count most (the machine's load changes), old ones fade.
    constexpr double kKeep = 0.98;
    const double n = n_rows;
    w_ = kKeep * w_ + 1;
    sn_ = kKeep * sn_ + n;
    st_ = kKeep * st_ + seconds;
    snn_ = kKeep * snn_ + n * n;
    snt_ = kKeep * snt_ + n * seconds;
    const double det = w_ * snn_ - sn_ * sn_;
    if (det > 1e-9 * w_ * w_) {
        per_row_s_ = std::max(0.0, (w_ * snt_ - sn_ * st_) / det);
        fixed_s_ = std::max(0.0, (st_ - per_row_s_ * sn_) / w_);
    } else {
        // One row count so far: all of it fixed cost until rows vary (a lone
        // sequence's first speculative step shows what rows cost).
        fixed_s_ = st_ / w_;
        per_row_s_ = 0;
    }
}

void DraftLengthTuner::observe_step(int32_t n_rows, double forward_s) { step_.observe(n_rows, forward_s); }

void DraftLengthTuner::observe_draft_pass(int32_t n_rows, double seconds) { draft_.observe(n_rows, seconds); }

void DraftLengthTuner::observe_verdict(Acceptance& a, int32_t n_drafted, int32_t n_accepted) {
    // A decaying count: the estimate follows the text (a quoted passage
    // repeats, free text does not).
    constexpr double kKeep = 0.9;
    a.drafted = kKeep * a.drafted + n_drafted;
    a.accepted = kKeep * a.accepted + n_accepted;
    if (n_accepted > 0) {
        a.probe_every = kProbeEvery;
        a.failed_probes = 0;
    } else if (a.probing) {
        a.probe_every = std::min(a.probe_every * 2, 1 << 12);
        ++a.failed_probes;
    }
    a.probing = false;
}

double DraftLengthTuner::alpha(const Acceptance& a) {
    // A prior of 0.5 worth two draft tokens: a new request tries speculating.
    return std::clamp((a.accepted + 1.0) / (a.drafted + 2.0), 0.0, 0.999);
}

double DraftLengthTuner::expected_tokens(double alpha, int32_t k) {
    return (1.0 - std::pow(alpha, k + 1)) / (1.0 - alpha);
}

int32_t DraftLengthTuner::choose(const Acceptance& a, int32_t other_rows) const {
    // No measurements yet: K = draft_max.
    return !step_.known() ? draft_max_ : best_k(alpha(a), other_rows);
}

int32_t DraftLengthTuner::best_k(double al, int32_t other_rows) const {
    // The step's tokens per second: the other rows' tokens (one each) and
    // this sequence's E(K), over the step's time with its K more rows and K
    // draft tokens, against the step without them. Where rows cost as much
    // as the step (a compute-bound batch), K rows must beat the batch's own
    // rate, and K falls to 0.
    const double fixed_s = step_.fixed_s(), per_row_s = step_.per_row_s(), draft_s = draft_s_per_token();
    const double base = fixed_s + per_row_s * (other_rows + 1);
    int32_t best = 0;
    double best_rate = (other_rows + 1.0) / std::max(base, 1e-9);
    for (int32_t k = 1; k <= draft_max_; ++k) {
        const double t = base + k * (per_row_s + draft_s);
        const double rate = (other_rows + expected_tokens(al, k)) / std::max(t, 1e-9);
        if (rate > best_rate * 1.02) best = k, best_rate = rate;  // a margin: speculate only for a clear gain
    }
    return best;
}

int32_t DraftLengthTuner::plan(Acceptance& a, int32_t other_rows) const {
    if (a.paused) return 0;
    const int32_t k = choose(a, other_rows);
    if (k > 0) {
        a.steps_without = 0;
        return k;
    }
    // Not even drafts that are always accepted would pay at these costs:
    // nothing to probe for.
    if (best_k(0.999, other_rows) == 0) return 0;
    if (++a.steps_without < a.probe_every) return 0;
    // A draft whose catching up costs a few % of a step, rejected probe
    // after probe: the request stops drafting.
    if (a.failed_probes >= kPauseAfter && draft_s_per_token() > 0.05 * (fixed_s() + per_row_s())) {
        a.paused = true;
        return 0;
    }
    a.steps_without = 0;
    a.probing = true;
    return 1;
}

}  // namespace folio
