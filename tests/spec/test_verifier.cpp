// The verifier's output has the target's distribution: chi-square tests
// over a million draws each, for full-q drafts over random p and q, for the
// p = (0.5, 0.5), q = (1, 0) case, and for one-hot drafts whose target rows
// are drawn by the Sampler under temperature, top-k, top-p, min-p and
// penalties (against an independent double-precision reference of that
// processed distribution). A verifier that resamples from p after a
// rejection (the known bug) must fail the same test.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "folio/spec.h"
#include "folio_test.h"

namespace {

// Pearson's statistic; categories of expected probability 0 must never be seen.
double chi_square(const std::vector<long>& seen, const std::vector<double>& p, long n) {
    double chi = 0.0;
    for (size_t i = 0; i < seen.size(); ++i) {
        const double e = p[i] * static_cast<double>(n);
        if (e == 0.0) {
            if (seen[i] != 0) return INFINITY;
            continue;
        }
        chi += (static_cast<double>(seen[i]) - e) * (static_cast<double>(seen[i]) - e) / e;
    }
    return chi;
}

// The chi-square value a correct sampler exceeds with probability ~1e-6
// (Wilson-Hilferty), for the categories of p with mass.
double critical_value(const std::vector<double>& p) {
    const double df = static_cast<double>(std::count_if(p.begin(), p.end(), [](double x) { return x > 0; }) - 1);
    const double z = 4.75, a = 2.0 / (9.0 * df);
    return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

std::vector<float> to_float(const std::vector<double>& p) { return {p.begin(), p.end()}; }

std::vector<double> random_distribution(std::mt19937_64& rng, size_t n, double zero_share) {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<double> p(n);
    double sum = 0;
    for (double& x : p) sum += x = u(rng) < zero_share ? 0.0 : std::pow(u(rng), 3.0);
    if (sum == 0) p[0] = sum = 1;
    for (double& x : p) x /= sum;
    return p;
}

folio::Sampler uniform_source(uint64_t seed) {
    folio::SamplingParams params;
    params.seed = seed;
    auto sampler = folio::Sampler::create(params);
    return std::move(*sampler);
}

int32_t draw(const std::vector<double>& p, double u) {
    const std::vector<float> w = to_float(p);
    return folio::draw_from_weights(w, u);
}

// The known bug: after a rejection, draw from p instead of the residual.
folio::Verdict resample_from_p(const std::vector<double>& p, const std::vector<double>& q, int32_t draft,
                               folio::Sampler& s) {
    if (s.take_uniform() * q[static_cast<size_t>(draft)] < p[static_cast<size_t>(draft)]) return {1, -1};
    return {0, draw(p, s.take_uniform())};
}

// The first emitted token's frequencies over n steps with K = 1: the draft
// drawn from q, then verified against p (the next row's p is p again).
std::vector<long> first_tokens(const std::vector<double>& p, const std::vector<double>& q, long n, uint64_t seed,
                               bool mutant) {
    folio::Sampler s = uniform_source(seed);
    const std::vector<float> pf = to_float(p), qf = to_float(q);
    const std::span<const float> rows_p[] = {pf, pf};
    const std::span<const float> rows_q[] = {qf};
    std::vector<long> seen(p.size(), 0);
    for (long i = 0; i < n; ++i) {
        const int32_t draft = draw(q, s.take_uniform());
        const int32_t drafts[] = {draft};
        const folio::Verdict v = mutant ? resample_from_p(p, q, draft, s) : folio::verify_full_q(rows_p, rows_q, drafts, s);
        ++seen[static_cast<size_t>(v.n_accepted > 0 ? draft : v.token)];
    }
    return seen;
}

}  // namespace

class VerifierTest : public QObject {
    Q_OBJECT
private slots:
    // p = (0.5, 0.5), q = (1, 0): the draft is always token 0, accepted half
    // the time; the residual is token 1. Resampling from p gives (0.75, 0.25).
    void halfAndHalfAgainstACertainDraft() {
        const std::vector<double> p = {0.5, 0.5}, q = {1.0, 0.0};
        const long n = 1'000'000;
        const auto seen = first_tokens(p, q, n, 11, false);
        const double chi = chi_square(seen, p, n);
        std::printf("p=(0.5,0.5) q=(1,0): %ld / %ld, chi2 %.2f (critical %.2f)\n", seen[0], seen[1], chi,
                    critical_value(p));
        QVERIFY2(chi < critical_value(p), ("chi2 " + std::to_string(chi)).c_str());
        const auto wrong = first_tokens(p, q, n, 11, true);
        const double chi_wrong = chi_square(wrong, p, n);
        std::printf("mutant (resample from p): %ld / %ld, chi2 %.0f\n", wrong[0], wrong[1], chi_wrong);
        QVERIFY2(chi_wrong > critical_value(p), "resampling from p went unnoticed");
        QVERIFY(std::abs(static_cast<double>(wrong[0]) / n - 0.75) < 0.01);
    }

    // Random p and q (some zeros in each, so q has tokens p lacks and the
    // other way round): the first token is distributed as p, and the mutant
    // fails on the same p and q.
    void randomDistributionsGiveTheTarget() {
        std::mt19937_64 rng(2024);
        int mutant_caught = 0;
        for (int trial = 0; trial < 4; ++trial) {
            const auto p = random_distribution(rng, 12, 0.2), q = random_distribution(rng, 12, 0.2);
            const long n = 1'000'000;
            const auto seen = first_tokens(p, q, n, 100 + trial, false);
            const double chi = chi_square(seen, p, n);
            std::printf("random p, q #%d: chi2 %.2f (critical %.2f)\n", trial, chi, critical_value(p));
            QVERIFY2(chi < critical_value(p), ("trial " + std::to_string(trial) + ": chi2 " + std::to_string(chi)).c_str());
            mutant_caught += chi_square(first_tokens(p, q, n, 100 + trial, true), p, n) > critical_value(p);
        }
        QCOMPARE(mutant_caught, 4);
    }

    // K = 3 with a different p and q at every row: the token emitted at
    // position 1, in the steps that accepted draft 0, is distributed as p[1];
    // the bonus token after three acceptances as p[3].
    void laterPositionsGiveTheirRowsTarget() {
        std::mt19937_64 rng(77);
        std::vector<std::vector<double>> p, q;
        for (int j = 0; j < 4; ++j) p.push_back(random_distribution(rng, 6, 0.0));
        for (int j = 0; j < 3; ++j) q.push_back(random_distribution(rng, 6, 0.0));
        std::vector<std::vector<float>> pf, qf;
        for (const auto& x : p) pf.push_back(to_float(x));
        for (const auto& x : q) qf.push_back(to_float(x));
        const std::span<const float> rows_p[] = {pf[0], pf[1], pf[2], pf[3]};
        const std::span<const float> rows_q[] = {qf[0], qf[1], qf[2]};
        folio::Sampler s = uniform_source(5);
        std::vector<long> second(6, 0), bonus(6, 0);
        long n_second = 0, n_bonus = 0;
        for (long i = 0; i < 1'000'000; ++i) {
            int32_t drafts[3];
            for (int j = 0; j < 3; ++j) drafts[j] = draw(q[static_cast<size_t>(j)], s.take_uniform());
            const folio::Verdict v = folio::verify_full_q(rows_p, rows_q, drafts, s);
            if (v.n_accepted >= 1) ++n_second, ++second[static_cast<size_t>(v.n_accepted > 1 ? drafts[1] : v.token)];
            if (v.n_accepted == 3) ++n_bonus, ++bonus[static_cast<size_t>(v.token)];
        }
        const double chi1 = chi_square(second, p[1], n_second), chi3 = chi_square(bonus, p[3], n_bonus);
        std::printf("K=3: position 1 chi2 %.2f over %ld, bonus chi2 %.2f over %ld (critical %.2f)\n", chi1, n_second,
                    chi3, n_bonus, critical_value(p[1]));
        QVERIFY(n_bonus > 10'000);
        QVERIFY2(chi1 < critical_value(p[1]), ("position 1: chi2 " + std::to_string(chi1)).c_str());
        QVERIFY2(chi3 < critical_value(p[3]), ("bonus: chi2 " + std::to_string(chi3)).c_str());
    }

    // One-hot drafts: each row's token drawn by the Sampler (the pipeline:
    // penalties over the draft-extended history, top-k, temperature, top-p,
    // min-p), accepted while it equals the draft. The first emitted token is
    // distributed as the processed p of row 0, the second (after an
    // accepted draft) as that of row 1, whose history holds the draft.
    void oneHotDraftsUnderEverySamplingOption() {
        struct Case {
            const char* name;
            folio::SamplingParams params;
        };
        auto params = [](float t, int k, float top_p, float min_p, float rep, float freq, float pres) {
            folio::SamplingParams p;
            p.temperature = t, p.top_k = k, p.top_p = top_p, p.min_p = min_p;
            p.repetition_penalty = rep, p.frequency_penalty = freq, p.presence_penalty = pres;
            p.penalty_last_n = 8;
            p.seed = 99;
            return p;
        };
        const Case cases[] = {
            {"temperature 0.7", params(0.7f, 0, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f)},
            {"top-k 6, temperature 1.3", params(1.3f, 6, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f)},
            {"top-p 0.8", params(1.0f, 0, 0.8f, 0.0f, 1.0f, 0.0f, 0.0f)},
            {"min-p 0.1", params(0.9f, 0, 1.0f, 0.1f, 1.0f, 0.0f, 0.0f)},
            {"penalties + top-k + top-p + min-p", params(0.8f, 9, 0.9f, 0.02f, 1.3f, 0.3f, 0.2f)},
        };
        std::mt19937_64 rng(31);
        std::normal_distribution<float> normal(0.0f, 1.5f);
        std::vector<float> logits0(12), logits1(12);
        for (float& l : logits0) l = normal(rng);
        for (float& l : logits1) l = normal(rng);
        const std::vector<int32_t> history = {3, 3, 7, 1, 9, 3};
        for (const Case& c : cases) {
            auto sampler = folio::Sampler::create(c.params);
            QVERIFY(sampler);
            // The draft: row 0's most likely processed token, so it is accepted often.
            const std::vector<double> p0 = reference(logits0, history, c.params);
            const auto draft = static_cast<int32_t>(std::max_element(p0.begin(), p0.end()) - p0.begin());
            std::vector<int32_t> extended = history;
            extended.push_back(draft);
            const std::vector<double> p1 = reference(logits1, extended, c.params);
            // The distribution sample_with_distribution reports is that reference (and draws come from it).
            std::vector<float> probs(12);
            for (const auto& [row, hist, want] : {std::tuple{&logits0, &history, &p0}, {&logits1, &extended, &p1}}) {
                const int32_t token = sampler->sample_with_distribution(*row, *hist, probs);
                QVERIFY(token >= 0 && probs[static_cast<size_t>(token)] > 0.0f);
                for (size_t v = 0; v < probs.size(); ++v)
                    QVERIFY2(std::abs(probs[v] - (*want)[v]) < 1e-5, (std::string(c.name) + ": token " + std::to_string(v)).c_str());
            }
            std::vector<long> first(12, 0), second(12, 0);
            long n_second = 0;
            const long n = 1'000'000;
            for (long i = 0; i < n; ++i) {
                const int32_t targets[] = {sampler->sample(logits0, history), sampler->sample(logits1, extended)};
                const int32_t drafts[] = {draft};
                const folio::Verdict v = folio::verify_one_hot(drafts, targets);
                ++first[static_cast<size_t>(v.n_accepted > 0 ? draft : v.token)];
                if (v.n_accepted > 0) ++n_second, ++second[static_cast<size_t>(v.token)];
            }
            const double chi0 = chi_square(first, p0, n), chi1 = chi_square(second, p1, n_second);
            std::printf("%s: chi2 %.2f (critical %.2f), after the draft %.2f over %ld (critical %.2f)\n", c.name, chi0,
                        critical_value(p0), chi1, n_second, critical_value(p1));
            QVERIFY2(chi0 < critical_value(p0), c.name);
            QVERIFY2(chi1 < critical_value(p1), c.name);
        }
    }

    void greedyAcceptsWhileTheArgmaxAgrees() {
        const int32_t drafts[] = {5, 6, 7};
        const int32_t all[] = {5, 6, 7, 8};
        QCOMPARE(folio::verify_one_hot(drafts, all).n_accepted, 3);
        QCOMPARE(folio::verify_one_hot(drafts, all).token, 8);
        const int32_t second_wrong[] = {5, 9, 7, 8};
        QCOMPARE(folio::verify_one_hot(drafts, second_wrong).n_accepted, 1);
        QCOMPARE(folio::verify_one_hot(drafts, second_wrong).token, 9);
        const int32_t none[] = {4};
        QCOMPARE(folio::verify_one_hot({}, none).token, 4);
    }

private:
    // The processed distribution, in double precision, from the documented
    // order (folio/sampling.h): penalties, top-k, temperature softmax,
    // top-p, min-p.
    static std::vector<double> reference(const std::vector<float>& logits, const std::vector<int32_t>& history,
                                         const folio::SamplingParams& sp) {
        const size_t v = logits.size();
        std::vector<double> l(logits.begin(), logits.end());
        std::vector<int> count(v, 0);
        const size_t window = std::min(history.size(), static_cast<size_t>(sp.penalty_last_n));
        for (size_t i = history.size() - window; i < history.size(); ++i) ++count[static_cast<size_t>(history[i])];
        for (size_t i = 0; i < v; ++i) {
            if (count[i] == 0) continue;
            l[i] = l[i] > 0 ? l[i] / sp.repetition_penalty : l[i] * sp.repetition_penalty;
            l[i] -= count[i] * sp.frequency_penalty + sp.presence_penalty;
        }
        std::vector<size_t> order(v);
        for (size_t i = 0; i < v; ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return l[a] > l[b]; });
        const size_t kept = sp.top_k > 0 ? std::min(v, static_cast<size_t>(sp.top_k)) : v;
        std::vector<double> p(v, 0.0);
        double sum = 0;
        for (size_t r = 0; r < kept; ++r) sum += p[order[r]] = std::exp((l[order[r]] - l[order[0]]) / sp.temperature);
        for (double& x : p) x /= sum;
        size_t cut = kept;
        if (sp.top_p < 1.0f) {
            double mass = 0;
            for (size_t r = 0; r < kept; ++r) {
                mass += p[order[r]];
                if (mass >= sp.top_p) {
                    cut = r + 1;
                    break;
                }
            }
        }
        for (size_t r = 0; r < kept; ++r)
            if (r >= cut || p[order[r]] < sp.min_p * p[order[0]]) p[order[r]] = 0.0;
        sum = 0;
        for (double x : p) sum += x;
        for (double& x : p) x /= sum;
        return p;
    }
};

FOLIO_TEST_MAIN(VerifierTest)
#include "test_verifier.moc"
