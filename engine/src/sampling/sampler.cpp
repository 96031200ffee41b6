// The Sampler's pipeline (the order is documented in folio/sampling.h).
//
// Cost on a 262144-entry vocabulary: top-k keeps a heap of k while scanning
// the logits once, so most entries cost one comparison; without top-k, top-p
// first drops the tokens too light to matter, then sorts only as much of the
// highest-first order as it needs, growing the sorted prefix by nth_element
// chunks; with no truncation nothing is sorted. The passes over the whole
// vocabulary are vectorized (softmax_math.h). Every buffer lives in the
// Sampler and stops growing after the first call at a given vocabulary size.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>

#include "folio/sampling.h"
#include "sampling/softmax_math.h"

namespace folio {

using sampling_detail::Candidate;

namespace {

using sampling_math::clean;
using sampling_math::kLanes;
using sampling_math::kMinusInfinity;
using sampling_math::max_logit;
using sampling_math::weight;

// Higher logit first, then the lower id: a total order, so every selection
// and every tie is decided the same way by any standard library.
bool better(const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Greedy: the first highest logit, so ties go to the lowest id (+inf ties
// with the largest float); all NaN or -inf gives id 0.
int32_t argmax(std::span<const float> scores) {
    const float best = max_logit(scores);
    size_t i = 0;
    for (; i + kLanes <= scores.size(); i += kLanes) {
        int hits = 0;  // a count, not a bool: this form vectorizes
        for (size_t j = 0; j < kLanes; ++j) hits += scores[i + j] >= best;
        if (hits > 0) break;
    }
    for (; i < scores.size(); ++i) {
        if (scores[i] >= best) return static_cast<int32_t>(i);
    }
    return 0;
}

}  // namespace

// The k best entries of `scores` into out[0..k), best first. The heap's front
// is the worst of the k kept so far; a later entry enters only by beating its
// logit (a tie loses: the later id is the higher one), so almost every entry
// costs one comparison.
size_t select_top_k(std::span<const float> scores, size_t k, std::vector<Candidate>& out) {
    k = std::min(k, scores.size());
    if (k == 0) return 0;  // (the heap below needs an entry)
    if (out.size() < k) out.resize(k);
    Candidate* heap = out.data();
    for (size_t i = 0; i < k; ++i) {
        heap[i] = {clean(scores[i]), static_cast<int32_t>(i)};
        std::push_heap(heap, heap + i + 1, better);
    }
    auto offer = [&](size_t i) {
        if (!(scores[i] > heap[0].logit)) return;  // NaN never enters
        std::pop_heap(heap, heap + k, better);
        heap[k - 1] = {clean(scores[i]), static_cast<int32_t>(i)};
        std::push_heap(heap, heap + k, better);
    };
    size_t i = k;
    for (; i + kLanes <= scores.size(); i += kLanes) {
        // One vectorized test per block: usually nothing in it can enter.
        const float worst = heap[0].logit;
        int entering = 0;  // a count, not a bool: this form vectorizes
        for (size_t j = 0; j < kLanes; ++j) entering += scores[i + j] > worst;
        if (entering == 0) continue;
        for (size_t j = 0; j < kLanes; ++j) offer(i + j);
    }
    for (; i < scores.size(); ++i) offer(i);
    std::sort_heap(heap, heap + k, better);
    return k;
}

RowSum row_sums(std::span<const float> logits, float temperature) {
    const float max = max_logit(logits);
    if (max == kMinusInfinity) return {0.0, kMinusInfinity};
    const double at_t = sampling_math::sum_weights(logits, max, temperature);
    const double at_1 = temperature == 1.0f ? at_t : sampling_math::sum_weights(logits, max, 1.0f);
    return {at_t, max + static_cast<float>(std::log(at_1))};
}

Result<Sampler> Sampler::create(const SamplingParams& params) {
    if (auto status = params.validate(); !status) return status.error();
    uint64_t seed = params.seed;
    if (seed == kRandomSeed) {
        try {
            std::random_device device;
            seed = (static_cast<uint64_t>(device()) << 32) ^ device();
        } catch (const std::exception&) {
            // No entropy source: the clock still differs from run to run.
            seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
        }
    }
    return Sampler(params, seed);
}

Sampler::Sampler(const SamplingParams& params, uint64_t seed) : params_(params), seed_(seed), rng_(seed) {}

// 53 random bits -> [0, 1): the same double from the same seed everywhere.
double Sampler::uniform() {
    if (fixed_uniform_ >= 0.0) {
        const double u = fixed_uniform_;
        fixed_uniform_ = -1.0;
        return u;
    }
    return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

int32_t draw_with_uniform(std::span<const float> logits, const SamplingParams& params, double u, SampleInfo* info) {
    Sampler sampler(params, 0);
    sampler.fixed_uniform_ = u;
    return sampler.sample(logits, {}, info);
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> recent_tokens, SampleInfo* info) {
    if (logits.empty()) return -1;
    std::span<const float> scores = logits;
    if (params_.has_penalties() && !recent_tokens.empty()) {
        penalized_.assign(logits.begin(), logits.end());
        apply_penalties(penalized_, recent_tokens, params_, penalty_counts_);
        scores = penalized_;
    }

    int32_t chosen = 0;
    int32_t n_candidates = 1;
    if (params_.temperature == 0.0f) {
        chosen = argmax(scores);
    } else {
        chosen = sample_truncated(scores, n_candidates);
    }
    if (info) {
        info->n_candidates = n_candidates;
        report_logprobs(logits, chosen, *info);
    }
    return chosen;
}

int32_t Sampler::sample_with_distribution(std::span<const float> logits, std::span<const int32_t> recent_tokens,
                                          std::span<float> probs, SampleInfo* info) {
    if (probs.size() != logits.size()) return -1;
    capture_ = probs;
    captured_ = false;
    const int32_t chosen = sample(logits, recent_tokens, info);
    capture_ = {};
    if (!captured_) {  // greedy, or a row without a finite logit: all of it on the chosen token
        std::fill(probs.begin(), probs.end(), 0.0f);
        if (chosen >= 0) probs[static_cast<size_t>(chosen)] = 1.0f;
    }
    return chosen;
}

size_t Sampler::penalty_window(size_t n_recent) const {
    if (!params_.has_penalties()) return 0;
    return params_.penalty_last_n > 0 ? std::min(n_recent, static_cast<size_t>(params_.penalty_last_n)) : n_recent;
}

int32_t Sampler::candidates_needed(size_t n_recent) const {
    if (params_.has_penalties() && (params_.repetition_penalty < 1.0f || params_.frequency_penalty < 0.0f ||
                                    params_.presence_penalty < 0.0f))
        return 0;  // a raised logit may come from anywhere in the row
    const bool greedy = params_.temperature == 0.0f;
    if (!greedy && params_.top_k <= 0) {
        // Top-p's mass is over the penalized row, which only the host has.
        if (params_.has_penalties()) return 0;
        // By temperature alone the draw is from the whole row (made where the
        // logits are, or from the row fetched whole); the best entries give
        // the logprobs.
        if (params_.top_p >= 1.0f && params_.min_p <= 0.0f) return std::max(1, params_.n_logprobs);
        return std::max(kTopPCandidates, params_.n_logprobs);
    }
    const int32_t kept = greedy ? 1 : params_.top_k;
    const size_t window = penalty_window(n_recent);
    if (window > static_cast<size_t>(std::numeric_limits<int32_t>::max() - kept)) return 0;
    return std::max(kept + static_cast<int32_t>(window), params_.n_logprobs);
}

bool Sampler::draws_by_temperature() const {
    return params_.n_logprobs == 0 && (params_.temperature == 0.0f || (params_.top_k <= 0 && params_.top_p >= 1.0f &&
                                                                        params_.min_p <= 0.0f));
}

bool Sampler::draws_from_whole_row() const { return params_.temperature != 0.0f && params_.top_k <= 0; }

bool Sampler::draws_by_top_p() const {
    return draws_from_whole_row() && (params_.top_p < 1.0f || params_.min_p > 0.0f);
}

bool Sampler::needs_row_sums() const {
    return params_.n_logprobs > 0 || (params_.temperature != 0.0f && params_.top_k <= 0 && params_.top_p < 1.0f);
}

int32_t Sampler::sample_top_k(std::span<const float> logits, std::span<const int32_t> ids,
                              std::span<const int32_t> recent_tokens, const RowSum* sums, SampleInfo* info) {
    const size_t given = std::min(logits.size(), ids.size());
    if (given == 0) return -1;
    if (info && !sums) return kNeedsWholeRow;
    const bool greedy = params_.temperature == 0.0f;
    int32_t chosen = 0;
    int32_t n_candidates = 1;
    if (!greedy && params_.top_k <= 0) {
        if (!recent_tokens.empty() && params_.has_penalties()) return kNeedsWholeRow;
        if (params_.top_p >= 1.0f && params_.min_p <= 0.0f) return kNeedsWholeRow;  // temperature alone
        chosen = sample_best(logits, ids, given, sums, n_candidates);
        if (chosen == kNeedsWholeRow) return chosen;
    } else {
        chosen = sample_k_best(logits, ids, given, recent_tokens, n_candidates);
    }
    if (info) {
        // The chosen token is among the given entries, its logit as they hold it.
        float chosen_logit = kMinusInfinity;
        for (size_t j = 0; j < given; ++j)
            if (ids[j] == chosen) chosen_logit = logits[j];
        report_drawn(logits.first(given), ids.first(given), *sums, chosen_logit, n_candidates, *info);
    }
    return chosen;
}

void Sampler::report_drawn(std::span<const float> logits, std::span<const int32_t> ids, const RowSum& sums,
                           float chosen_logit, int32_t n_candidates, SampleInfo& info) {
    // The logprobs, as report_logprobs gives them from the whole row.
    info.n_candidates = n_candidates;
    const size_t n_top = std::min({logits.size(), ids.size(), static_cast<size_t>(params_.n_logprobs)});
    if (top_logprobs_.size() < n_top) top_logprobs_.resize(n_top);
    for (size_t j = 0; j < n_top; ++j) top_logprobs_[j] = {logits[j], ids[j]};
    fill_logprobs(sums.log_normalizer, chosen_logit, n_top, info);
}

int32_t Sampler::sample_best(std::span<const float> logits, std::span<const int32_t> ids, size_t given,
                             const RowSum* sums, int32_t& n_candidates) {
    // sample_truncated keeps a highest-first prefix: min-p's (weights at or
    // above min_p, and above 0) cut by top-p's (the first whose mass reaches
    // top_p of the row's softmax sum). Both must end within the given
    // entries; then the draw is draw()'s over the same entries in the same
    // order (highest first after top-p; by id when only min-p cut).
    const float max = logits[0];
    const float temperature = params_.temperature;
    const bool top_p_on = params_.top_p < 1.0f;
    if (max == kMinusInfinity || (top_p_on && !sums)) return kNeedsWholeRow;
    const double mass = top_p_on ? static_cast<double>(params_.top_p) * sums->softmax_sum : 0.0;
    double cumulative = 0.0;
    size_t n = 0;
    bool decided = false;
    for (; n < given && !decided; ++n) {
        const float w = weight(logits[n], max, temperature);
        if (!(w > 0.0f && w >= params_.min_p)) {
            decided = true;
            break;
        }
        cumulative += w;
        decided = top_p_on && cumulative >= mass;
    }
    if (!decided) return kNeedsWholeRow;
    if (candidates_.size() < n) candidates_.resize(n);
    for (size_t i = 0; i < n; ++i) candidates_[i] = {logits[i], ids[i]};
    if (!top_p_on) std::sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(n),
                             [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
    const int32_t chosen = draw(n, top_p_on ? sums->softmax_sum : 0.0, max, top_p_on, n_candidates);
    return chosen >= 0 ? chosen : ids[0];
}

int32_t Sampler::sample_k_best(std::span<const float> logits, std::span<const int32_t> ids, size_t given,
                               std::span<const int32_t> recent_tokens, int32_t& n_candidates) {
    const bool greedy = params_.temperature == 0.0f;
    const size_t kept = std::min(given, static_cast<size_t>(greedy ? 1 : std::max(params_.top_k, 1)));
    // With penalties, the row's k best after them are among the k + window
    // best before them (they only lower the logits of the window's tokens):
    // penalize those, then keep the k best again.
    const size_t window = recent_tokens.empty() ? 0 : penalty_window(recent_tokens.size());
    const size_t n = window > 0 ? std::min(given, kept + window) : kept;
    if (candidates_.size() < n) candidates_.resize(n);
    for (size_t i = 0; i < n; ++i) candidates_[i] = {logits[i], ids[i]};
    if (window > 0) {
        penalize_candidates(n, recent_tokens.last(window));
        std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(kept),
                          candidates_.begin() + static_cast<std::ptrdiff_t>(n), better);
    }
    if (greedy) return candidates_[0].id;
    return sample_sorted(kept, n_candidates);
}

void Sampler::penalize_candidates(size_t n, std::span<const int32_t> window) {
    // The window's counts (sorted, as apply_penalties counts them), then the
    // same arithmetic on each candidate that occurs in it.
    penalty_counts_.assign(window.begin(), window.end());
    std::sort(penalty_counts_.begin(), penalty_counts_.end());
    for (size_t i = 0; i < n; ++i) {
        const auto [first, last] = std::equal_range(penalty_counts_.begin(), penalty_counts_.end(), candidates_[i].id);
        if (first == last) continue;
        candidates_[i].logit = penalized_logit(candidates_[i].logit, static_cast<float>(last - first), params_);
    }
}

int32_t Sampler::sample_truncated(std::span<const float> scores, int32_t& n_candidates) {
    const size_t vocab = scores.size();
    const float temperature = params_.temperature;
    const bool top_k_on = params_.top_k > 0 && static_cast<size_t>(params_.top_k) < vocab;
    if (!top_k_on && params_.top_p >= 1.0f && params_.min_p <= 0.0f) {
        n_candidates = static_cast<int32_t>(vocab);
        return sample_full(scores);
    }

    // Top-k keeps the k best, sorted (sample_sorted). Without it: min-p, and
    // the tokens too light to be in top-p's set, are dropped here; top-p and
    // the draw follow. Both cuts keep a highest-first prefix; min-p's ratio
    // test does not depend on the normalization, so cutting min-p before
    // top-p gives the same set as the documented order: the shorter of the
    // two prefixes.
    if (top_k_on) return sample_sorted(select_top_k(scores, static_cast<size_t>(params_.top_k), candidates_), n_candidates);
    const float max = max_logit(scores);
    if (max == kMinusInfinity) return argmax(scores);
    if (candidates_.size() < vocab) candidates_.resize(vocab);
    size_t n = 0;
    double softmax_sum = 0.0;
    float floor = params_.min_p;
    if (params_.top_p < 1.0f) {
        if (weights_.size() < vocab) weights_.resize(vocab);
        softmax_sum = sampling_math::sum_weights(scores, max, temperature, weights_.data());
        // Tokens lighter than this cannot be in top-p's set: together they
        // weigh at most vocab * (this), half of the 1 - top_p of the mass
        // top-p leaves out (halved against rounding).
        const double tail = 0.5 * (1.0 - params_.top_p) * softmax_sum / static_cast<double>(vocab);
        floor = std::max(floor, static_cast<float>(tail));
    }
    auto keep = [&](size_t i, float w) {
        if (w > 0.0f && w >= floor) candidates_[n++] = {clean(scores[i]), static_cast<int32_t>(i)};
    };
    if (params_.top_p < 1.0f) {
        for (size_t i = 0; i < vocab; ++i) keep(i, weights_[i]);
    } else {
        size_t i = 0;
        for (; i + kLanes <= vocab; i += kLanes) {
            float weights[kLanes];
            sampling_math::block_weights(scores.data() + i, max, temperature, weights);
            for (size_t j = 0; j < kLanes; ++j) keep(i + j, weights[j]);
        }
        for (; i < vocab; ++i) keep(i, weight(scores[i], max, temperature));
    }
    const int32_t chosen = draw(n, softmax_sum, max, false, n_candidates);
    return chosen >= 0 ? chosen : argmax(scores);
}

int32_t Sampler::sample_sorted(size_t n, int32_t& n_candidates) {
    // Min-p over the k best, and the softmax sum over all k (top-p's denominator).
    const float max = candidates_[0].logit;
    if (max == kMinusInfinity) return candidates_[0].id;
    double softmax_sum = 0.0;
    size_t kept = 0;
    for (size_t i = 0; i < n; ++i) {
        const float w = weight(candidates_[i].logit, max, params_.temperature);
        softmax_sum += w;
        if (kept == i && w > 0.0f && w >= params_.min_p) ++kept;
    }
    const int32_t chosen = draw(kept, softmax_sum, max, true, n_candidates);
    return chosen >= 0 ? chosen : candidates_[0].id;
}

int32_t Sampler::draw(size_t n, double softmax_sum, float max, bool sorted, int32_t& n_candidates) {
    const float temperature = params_.temperature;
    // Top-p: walk the highest-first order until the mass reaches top_p. An
    // unsorted set is sorted a chunk at a time (64, then 4x more), so a peaked
    // distribution sorts a few hundred entries, not the vocabulary.
    Candidate* candidates = candidates_.data();
    if (params_.top_p < 1.0f) {
        const double mass = static_cast<double>(params_.top_p) * softmax_sum;
        double cumulative = 0.0;
        size_t done = 0;
        size_t chunk = 64;
        size_t cut = n;
        while (done < n && cut == n) {
            const size_t end = sorted ? n : std::min(n, done + chunk);
            if (!sorted) {
                if (end < n) std::nth_element(candidates + done, candidates + end, candidates + n, better);
                std::sort(candidates + done, candidates + end, better);
            }
            for (size_t i = done; i < end; ++i) {
                cumulative += weight(candidates[i].logit, max, temperature);
                if (cumulative >= mass) {
                    cut = i + 1;
                    break;
                }
            }
            done = end;
            chunk *= 4;
        }
        n = cut;
    }

    // The draw, over the kept set in a canonical order (highest first, or by
    // id when nothing needed sorting). The most likely token weighs exactly 1
    // and passes every cut, so the set is never empty; the guard is for safety.
    if (n == 0) return -1;
    n_candidates = static_cast<int32_t>(n);
    double total = 0.0;
    for (size_t i = 0; i < n; ++i) total += weight(candidates[i].logit, max, temperature);
    if (!capture_.empty() && total > 0.0) {
        std::fill(capture_.begin(), capture_.end(), 0.0f);
        for (size_t i = 0; i < n; ++i)
            capture_[static_cast<size_t>(candidates[i].id)] =
                static_cast<float>(weight(candidates[i].logit, max, temperature) / total);
        captured_ = true;
    }
    const double target = uniform() * total;
    double cumulative = 0.0;
    for (size_t i = 0; i < n; ++i) {
        cumulative += weight(candidates[i].logit, max, temperature);
        if (target < cumulative) return candidates[i].id;
    }
    return candidates[n - 1].id;  // rounding left target at the very top
}

// Temperature only: the whole vocabulary by id, nothing sorted or copied.
// The walk skips whole blocks of 8 until the one holding the target.
int32_t Sampler::sample_full(std::span<const float> scores) {
    const float max = max_logit(scores);
    if (max == kMinusInfinity) return argmax(scores);
    const size_t vocab = scores.size();
    if (weights_.size() < vocab) weights_.resize(vocab);
    const float* weights = weights_.data();
    const double sum = sampling_math::sum_weights(scores, max, params_.temperature, weights_.data());
    if (!capture_.empty() && sum > 0.0) {
        for (size_t i = 0; i < vocab; ++i) capture_[i] = static_cast<float>(weights[i] / sum);
        captured_ = true;
    }
    const double target = uniform() * sum;
    double cumulative = 0.0;
    size_t i = 0;
    for (; i + kLanes <= vocab; i += kLanes) {
        const double block = sampling_math::lane_sum(weights + i);
        if (target < cumulative + block) break;
        cumulative += block;
    }
    for (; i < vocab; ++i) {
        cumulative += weights[i];
        if (weights[i] > 0.0f && target < cumulative) return static_cast<int32_t>(i);
    }
    // Rounding left the target at the very top: the last token that can be drawn.
    for (size_t last = vocab; last-- > 0;) {
        if (weights[last] > 0.0f) return static_cast<int32_t>(last);
    }
    return 0;
}

void Sampler::report_logprobs(std::span<const float> logits, int32_t chosen, SampleInfo& info) {
    const float max = max_logit(logits);
    const float log_normalizer =
        max == kMinusInfinity ? kMinusInfinity
                              : max + static_cast<float>(std::log(sampling_math::sum_weights(logits, max, 1.0f)));
    const size_t n =
        max == kMinusInfinity ? 0 : select_top_k(logits, static_cast<size_t>(params_.n_logprobs), top_logprobs_);
    fill_logprobs(log_normalizer, clean(logits[static_cast<size_t>(chosen)]), n, info);
}

void Sampler::fill_logprobs(float log_normalizer, float chosen_logit, size_t n_top, SampleInfo& info) {
    info.top.clear();
    if (log_normalizer == kMinusInfinity) {
        // Nothing is possible; every logprob is -inf.
        info.logprob = kMinusInfinity;
        return;
    }
    info.logprob = chosen_logit - log_normalizer;
    for (size_t i = 0; i < n_top; ++i) info.top.push_back({top_logprobs_[i].id, top_logprobs_[i].logit - log_normalizer});
}

}  // namespace folio
