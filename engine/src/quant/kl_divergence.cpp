// The token-level comparison behind llama-perplexity --kl-divergence: a base
// distribution kept as 16-bit log-prob levels over its top 16 nats, and the
// statistics over all scored tokens.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "folio/quant_quality.h"
#include "quant/scale_search.h"

namespace folio {

size_t log_prob_record_size(int32_t n_vocab) { return size_t(2 * ((n_vocab + 1) / 2) + 4); }

double compress_log_probs(std::span<const float> logits, int32_t target, std::span<uint16_t> record) {
    const int n_vocab = int(logits.size());
    float max_logit = logits[0], min_logit = logits[0];
    for (int i = 1; i < n_vocab; ++i) {
        max_logit = std::max(max_logit, logits[i]);
        min_logit = std::min(min_logit, logits[i]);
    }
    // Probabilities below e^-16 of the top one are kept as zero level.
    min_logit = std::max(min_logit, max_logit - 16);
    double sum_exp = 0.0;
    for (int i = 0; i < n_vocab; ++i) sum_exp += std::exp(logits[i] - max_logit);
    const float log_sum_exp = float(std::log(sum_exp));
    const float min_log_prob = min_logit - max_logit - log_sum_exp;
    const float scale = (max_logit - min_logit) / 65535.f;
    std::memcpy(record.data(), &scale, 4);
    std::memcpy(record.data() + 2, &min_log_prob, 4);
    uint16_t* levels = record.data() + 4;
    if (scale) {
        const float inv_scale = 1 / scale;
        for (int i = 0; i < n_vocab; ++i)
            levels[i] = logits[i] > min_logit ? uint16_t(quant::nearest_int(inv_scale * (logits[i] - min_logit))) : 0;
    } else {
        std::fill(levels, levels + n_vocab, uint16_t{0});
    }
    return double(max_logit) + log_sum_exp - logits[size_t(target)];
}

void KldAccumulator::add(std::span<const float> logits, int32_t target, std::span<const uint16_t> base_record) {
    const int n_vocab = int(logits.size());
    float max_logit = logits[0];
    int top = 0;
    for (int i = 1; i < n_vocab; ++i)
        if (logits[i] > max_logit) {
            max_logit = logits[i];
            top = i;
        }
    double sum_exp = 0.0;
    for (int i = 0; i < n_vocab; ++i) sum_exp += std::exp(logits[i] - max_logit);
    const float log_sum_exp = float(std::log(sum_exp));
    float scale, min_log_prob;
    std::memcpy(&scale, base_record.data(), 4);
    std::memcpy(&min_log_prob, base_record.data() + 2, 4);
    const uint16_t* levels = base_record.data() + 4;

    sum_nll_ += max_logit + log_sum_exp - logits[size_t(target)];
    sum_nll_base_ += -(scale * levels[target] + min_log_prob);
    // KL(base || quantized) = sum p_base (log p_base - log p), over the base's
    // tokens within 16 nats of its top one.
    const float log_norm = max_logit + log_sum_exp;
    double kld = 0;
    int top_base = 0;
    float best_base = 0;
    for (int i = 0; i < n_vocab; ++i) {
        const float log_p_base = scale * levels[i] + min_log_prob;
        if (i == 0 || log_p_base > best_base) {
            best_base = log_p_base;
            top_base = i;
        }
        if (log_p_base > -16.f) kld += std::exp(log_p_base) * (log_p_base - logits[i] + log_norm);
    }
    sum_kld_ += kld;
    klds_.push_back(float(kld));
    same_top_ += top == top_base;
}

KldSummary KldAccumulator::summary() const {
    KldSummary s;
    s.n_tokens = int64_t(klds_.size());
    if (klds_.empty()) return s;
    const double n = double(klds_.size());
    s.ppl = std::exp(sum_nll_ / n);
    s.ppl_base = std::exp(sum_nll_base_ / n);
    s.ppl_ratio = s.ppl / s.ppl_base;
    s.mean_kld = sum_kld_ / n;
    s.same_top = double(same_top_) / n;
    std::vector<float> sorted = klds_;
    std::sort(sorted.begin(), sorted.end());
    // Percentiles interpolated between neighbours, as llama-perplexity reports them.
    auto percentile = [&](double fraction) {
        const double p = fraction * double(sorted.size() - 1);
        const size_t i = size_t(p);
        const double f = p - double(i);
        return (1 - f) * sorted[i] + f * sorted[std::min(i + 1, sorted.size() - 1)];
    };
    s.median_kld = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                     : 0.5 * (sorted[sorted.size() / 2] + sorted[sorted.size() / 2 - 1]);
    s.p99_kld = percentile(0.99);
    s.max_kld = sorted.back();
    return s;
}

}  // namespace folio
