// Prompt lookup (the n-gram proposer): no model and no memory of its own.
// The continuation of the latest earlier occurrence of the sequence's last
// n tokens (the latest with a whole draft after it, if any) is the guess; an editing or repeating task finds long runs there.
#include <algorithm>

#include "folio/spec.h"
#include "spec/proposers.h"

namespace folio {

std::vector<int32_t> ngram_lookup(std::span<const int32_t> tokens, int32_t ngram_min, int32_t ngram_max,
                                  int32_t max_drafts) {
    const auto len = static_cast<int64_t>(tokens.size());
    if (max_drafts <= 0) return {};
    for (int64_t n = std::min<int64_t>(ngram_max, len - 1); n >= std::max(1, ngram_min); --n) {
        const std::span<const int32_t> suffix = tokens.last(static_cast<size_t>(n));
        // Latest match first: recent text is the likeliest to repeat. A match
        // must be followed by at least one token (it ends before the suffix);
        // one too close to the end for a whole draft gives way to the latest
        // that has one (a run that repeats a short period, "a b a b a b",
        // drafts max_drafts tokens, not the one or two before the end).
        int64_t best_from = -1, best_count = 0;
        for (int64_t start = len - n - 1; start >= 0; --start) {
            if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
            const int64_t from = start + n;
            const int64_t count = std::min<int64_t>(max_drafts, len - from);
            if (count > best_count) best_from = from, best_count = count;
            if (count == max_drafts) break;
        }
        if (best_count > 0) return {tokens.begin() + best_from, tokens.begin() + best_from + best_count};
    }
    return {};
}

namespace {

class NgramProposer final : public Proposer {
public:
    explicit NgramProposer(const SpecConfig& config) : config_(config) {}
    void propose(std::span<const DraftRequest> requests, std::vector<std::vector<int32_t>>& out) override {
        out.resize(requests.size());
        for (size_t i = 0; i < requests.size(); ++i)
            out[i] = ngram_lookup(requests[i].tokens, config_.ngram_min, config_.ngram_max,
                                  std::min(requests[i].max_drafts, config_.draft_max));
    }
    std::string name() const override { return "ngram"; }

private:
    SpecConfig config_;
};

}  // namespace

Result<std::unique_ptr<Proposer>> make_proposer(const SpecConfig& config) {
    if (Status s = config.validate(); !s) return s.error();
    switch (config.method) {
        case SpecMethod::Off: return std::unique_ptr<Proposer>{};
        case SpecMethod::Ngram: return std::unique_ptr<Proposer>(std::make_unique<NgramProposer>(config));
        case SpecMethod::Draft:
        case SpecMethod::LayerSkip:
        case SpecMethod::Int4Self:
            if (!config.draft_backend)
                return make_error(std::string("speculative decoding by ") + std::string(to_string(config.method)) +
                                  " needs the draft model's backend");
            return make_draft_model_proposer(config, *config.draft_backend);
    }
    return make_error("unknown speculative decoding method");
}

}  // namespace folio
