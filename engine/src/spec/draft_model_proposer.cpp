// Drafts from a model (a second, smaller one of the same vocabulary, or the
// target's own first layers): K greedy steps, each one forward pass over
// every drafting sequence at once. The draft keeps each sequence's KV in its
// own backend's blocks between steps; at the next step it keeps what still
// matches the sequence (the accepted drafts included), recomputes the rest
// (the target's token after them, at least one row for its logits) and
// drafts on from there. A greedy draft is a one-hot q, so the verifier's
// one-hot rule is exact for any target sampling; a request that asks for
// sampled drafts (DraftRequest::sampling) gets them drawn with its options
// by a Sampler of the draft's own per sequence, over the draft-extended
// history, with each draft's distribution q for the full-q rule. With draft_p_min, a
// sequence's drafting stops at the first token the draft itself is less
// sure of than that (its softmax probability at temperature 1).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <unordered_map>

#include "folio/kv_cache_manager.h"
#include "folio/spec.h"
#include "spec/proposers.h"

namespace folio {

namespace {

// The first highest logit (NaN never wins).
int32_t argmax_row(std::span<const float> row) {
    int32_t best = 0;
    for (size_t i = 1; i < row.size(); ++i)
        if (row[i] > row[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
    return best;
}

class DraftModelProposer final : public Proposer {
public:
    DraftModelProposer(const SpecConfig& config, Backend& draft)
        : config_(config),
          draft_(draft),
          kv_(draft.n_blocks(), draft.block_size(), /*enable_prefix_caching=*/false, 0x5eed) {}

    void propose(std::span<const DraftRequest> requests, std::vector<std::vector<int32_t>>& out) override {
        out.assign(requests.size(), {});
        // Step 1: catch up with each sequence and draft its first token.
        std::vector<size_t> active = catch_up(requests, /*drafting=*/true);
        for (int32_t step = 0; !active.empty(); ++step) {
            bool sampling = false;
            for (size_t i : active) sampling = sampling || (requests[i].sampling && requests[i].q);
            const auto t0 = std::chrono::steady_clock::now();
            const bool ran = run(tokens_, sampling);
            passes_.push_back({batch_.n_tokens(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()});
            if (!ran) {
                for (size_t i : active) forget(requests[i].id), out[i].clear();
                return;
            }
            std::vector<size_t> next;
            batch_.clear();
            for (size_t j = 0; j < active.size(); ++j) {
                const size_t i = active[j];
                const DraftRequest& r = requests[i];
                if (config_.draft_p_min > 0 && best_p_[j] < config_.draft_p_min) continue;
                if (r.sampling && r.q) tokens_[j] = sample(r, j);
                out[i].push_back(tokens_[j]);
                if (static_cast<int32_t>(out[i].size()) >= std::min(r.max_drafts, config_.draft_max)) continue;
                // The draft just made is the next row.
                std::vector<int32_t>& computed = computed_[r.id];
                const int32_t token = tokens_[j];
                computed.push_back(token);
                add_rows(r.id, std::span<const int32_t>(&token, 1), static_cast<int32_t>(computed.size()) - 1);
                next.push_back(i);
            }
            active = std::move(next);
        }
    }

    void prefill(std::span<const DraftRequest> requests) override {
        if (catch_up(requests, /*drafting=*/false).empty()) return;
        const auto t0 = std::chrono::steady_clock::now();
        const bool ran = run(tokens_, /*whole_rows=*/false);
        passes_.push_back({batch_.n_tokens(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()});
        if (!ran)
            for (const DraftRequest& r : requests) forget(r.id);
    }

    void forget(int64_t id) override {
        kv_.free(id);
        computed_.erase(id);
        samplers_.erase(id);
    }

    std::string name() const override { return to_string(config_.method).data(); }
    std::span<const DraftPass> passes() const override { return passes_; }

    void describe_blocks(std::vector<DraftBlockCell>& cells) const override {
        const auto bs = static_cast<int64_t>(kv_.block_size());
        cells.assign(kv_.pool().n_blocks(), {});
        for (const auto& [id, tokens] : computed_) {
            const std::vector<int32_t>& table = kv_.table(id);
            for (size_t i = 0; i < table.size(); ++i)
                cells[static_cast<size_t>(table[i])] = {
                    id, static_cast<uint16_t>(std::clamp<int64_t>(static_cast<int64_t>(tokens.size()) - static_cast<int64_t>(i) * bs, 0, bs))};
        }
    }

private:
    // A new batch of the rows each request's KV lacks: its tokens from the
    // first that differs from what the draft holds (at least its last one,
    // whose logits draft the next token), room reserved for its drafts but
    // the last (never computed here) when `drafting`. The requests it took
    // (a sequence that does not fit is forgotten); passes_ cleared.
    std::vector<size_t> catch_up(std::span<const DraftRequest> requests, bool drafting) {
        passes_.clear();
        batch_.clear();
        std::vector<size_t> taken;
        for (size_t i = 0; i < requests.size(); ++i) {
            const DraftRequest& r = requests[i];
            const int32_t k = drafting ? std::min(r.max_drafts, config_.draft_max) : 1;
            if (k <= 0 || r.tokens.empty()) continue;
            if (r.sampling && r.q && !samplers_.contains(r.id)) {
                SamplingParams params = *r.sampling;
                if (params.seed != kRandomSeed) params.seed ^= 0xd2af7a11ull;  // not the target's draws
                auto sampler = Sampler::create(params);
                if (!sampler) continue;  // (the engine validated them: never)
                samplers_.emplace(r.id, std::move(*sampler));
            }
            std::vector<int32_t>& computed = computed_[r.id];
            const auto n = static_cast<int32_t>(r.tokens.size());
            size_t common = 0;
            while (common < computed.size() && common < r.tokens.size() && computed[common] == r.tokens[common]) ++common;
            const int32_t start = std::min(static_cast<int32_t>(common), n - 1);
            // Room for the tokens and all drafts but the last (never computed here).
            if (n + k - 1 > static_cast<int32_t>(draft_.max_context()) || !kv_.allocate(r.id, n + k - 1)) {
                forget(r.id);
                continue;
            }
            computed.assign(r.tokens.begin(), r.tokens.end());
            add_rows(r.id, r.tokens.subspan(static_cast<size_t>(start)), start);
            taken.push_back(i);
        }
        return taken;
    }

    // Rows for tokens at positions [first, first + size) of sequence id; its last row's logits.
    void add_rows(int64_t id, std::span<const int32_t> tokens, int32_t first) {
        const std::vector<int32_t>& table = kv_.table(id);
        const auto bs = static_cast<int32_t>(kv_.block_size());
        const int32_t query_start = batch_.n_tokens();
        for (size_t i = 0; i < tokens.size(); ++i) {
            const int32_t pos = first + static_cast<int32_t>(i);
            batch_.token_ids.push_back(tokens[i]);
            batch_.positions.push_back(pos);
            batch_.slot_mapping.push_back(int64_t{table[static_cast<size_t>(pos / bs)]} * bs + pos % bs);
        }
        const auto n = static_cast<int32_t>(tokens.size());
        batch_.sequences.push_back(BatchSequence{query_start, n, first + n, table});
        batch_.logits_rows.push_back(batch_.n_tokens() - 1);
    }

    // Row j's draft drawn by the sequence's Sampler from the draft's whole
    // row (run() kept it), over the tokens the draft holds (its drafts so
    // far included); its distribution appended to *r.q.
    int32_t sample(const DraftRequest& r, size_t j) {
        const auto vocab = static_cast<size_t>(draft_.n_vocab());
        const size_t at = r.q->size();
        r.q->resize(at + vocab);
        return samplers_.at(r.id).sample_with_distribution(std::span<const float>(logits_).subspan(j * vocab, vocab),
                                                           computed_.at(r.id),
                                                           std::span<float>(*r.q).subspan(at, vocab));
    }

    // The batch's forward pass and each logits row's argmax; with
    // draft_p_min, also its probability (best_p_), from the row's best entry
    // and softmax sum where the backend selects, else from the whole row.
    // `whole_rows`: some row samples, so the rows come to the host whole.
    bool run(std::vector<int32_t>& tokens, bool whole_rows) {
        const size_t rows = batch_.logits_rows.size();
        tokens.resize(rows);
        const bool p_min = config_.draft_p_min > 0;
        if (!p_min && !whole_rows && draft_.can_argmax()) return static_cast<bool>(draft_.forward_argmax(batch_, tokens));
        best_p_.assign(rows, 1.0f);
        if (p_min && !whole_rows && draft_.max_top_k(rows) >= 1) {
            best_logit_.resize(rows);
            ones_.assign(rows, 1.0f);
            sums_.resize(rows);
            log_norms_.resize(rows);
            if (!draft_.forward_top_k(batch_, 1, best_logit_, tokens, RowSums{ones_, sums_, log_norms_})) return false;
            for (size_t r = 0; r < rows; ++r) best_p_[r] = static_cast<float>(1.0 / sums_[r]);
            return true;
        }
        const auto vocab = static_cast<size_t>(draft_.n_vocab());
        logits_.resize(rows * vocab);
        if (!draft_.forward(batch_, logits_)) return false;
        for (size_t r = 0; r < rows; ++r) {
            const std::span<const float> row = std::span<const float>(logits_).subspan(r * vocab, vocab);
            tokens[r] = argmax_row(row);
            if (!p_min) continue;
            const float best = row[static_cast<size_t>(tokens[r])];
            double sum = 0;
            for (float v : row) sum += std::exp(static_cast<double>(v) - best);
            best_p_[r] = static_cast<float>(1.0 / sum);
        }
        return true;
    }

    SpecConfig config_;
    Backend& draft_;
    KvCacheManager kv_;
    std::unordered_map<int64_t, std::vector<int32_t>> computed_;  // tokens whose K/V the draft holds
    std::unordered_map<int64_t, Sampler> samplers_;                // sampled drafts' random state, per sequence
    Batch batch_;
    std::vector<float> logits_;
    std::vector<int32_t> tokens_;
    std::vector<DraftPass> passes_;  // the last propose()'s
    std::vector<float> best_p_, best_logit_, ones_, log_norms_;  // draft_p_min
    std::vector<double> sums_;
};

}  // namespace

std::unique_ptr<Proposer> make_draft_model_proposer(const SpecConfig& config, Backend& draft) {
    return std::make_unique<DraftModelProposer>(config, draft);
}

}  // namespace folio
