// Turning a row of logits into the next token, and deciding when a
// generation ends. SamplingParams carries llama.cpp's knobs with its
// defaults; a Sampler belongs to one sequence and owns its random state, so a
// sequence draws the same tokens whether it runs alone or in a batch.
// StopChecker watches the streamed text for stop strings and holds back
// whatever could still turn into one, so a stop string is never shown.
//
// The Sampler's pipeline, in order:
//   1. penalties over the last penalty_last_n tokens of `recent_tokens`
//      (llama.cpp: repetition divides positive logits and multiplies negative
//      ones; OpenAI: logit -= count * frequency + (count > 0) * presence);
//   2. temperature == 0: greedy, the highest logit, ties to the lowest id;
//      the random state is not touched;
//   3. top-k (0 = off): the k highest logits, ties to the lower id;
//   4. temperature: logit / temperature, then softmax over what is left;
//   5. top-p (1 = off): the smallest highest-first set whose probability
//      reaches top_p;
//   6. min-p (0 = off): drop tokens whose probability is below
//      min_p * (the highest probability);
//   7. one draw from what is left with the sequence's mt19937_64; the uniform
//      number is made here from 53 bits (not std::uniform_real_distribution),
//      so a seed gives the same tokens with any standard library (the
//      softmax's exp is the library's own for the same reason).
// This is vLLM's order: top-p and min-p see the tempered distribution.
// llama.cpp's default chain applies temperature last, after top-p and min-p,
// so with temperature != 1 and those cuts on the two keep different sets.
//
// Logprobs (SampleInfo) are those of the raw model distribution:
// log_softmax of the logits as given, before penalties, temperature and
// truncation — what vLLM reports by default. They describe what the model
// predicted, not how the sampler reshaped it.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "folio/error.h"

namespace folio {

// Why a generation ended; shared by the engine, the CLI and the server.
enum class FinishReason {
    Stop,        // an end-of-generation token (EOS, EOT, <|im_end|>, ...)
    StopString,  // one of the request's stop strings appeared in the text
    Length,      // the token budget or the context ran out
    Abort,       // the caller cancelled
    Error,       // something failed; the request carries the message
};

// "stop", "stop_string", "length", "abort", "error".
std::string_view to_string(FinishReason reason);

// llama.cpp's LLAMA_DEFAULT_SEED: a Sampler made with it draws its seed from
// std::random_device (Sampler::seed() tells which, to reproduce a run).
inline constexpr uint64_t kRandomSeed = 0xFFFFFFFF;

struct SamplingParams {
    float temperature = 0.8f;         // 0 = greedy
    int32_t top_k = 40;               // 0 = off
    float top_p = 0.95f;              // 1 = off; in (0, 1]
    float min_p = 0.05f;              // 0 = off; in [0, 1]
    float repetition_penalty = 1.0f;  // 1 = off; > 0
    float frequency_penalty = 0.0f;   // 0 = off; in [-2, 2] as OpenAI
    float presence_penalty = 0.0f;    // 0 = off; in [-2, 2] as OpenAI
    int32_t penalty_last_n = 64;      // -1 = all of recent_tokens; 0 = no penalties
    uint64_t seed = kRandomSeed;
    int32_t n_logprobs = 0;           // top-N logprobs to report; 0 = none

    // An error naming the field, its value and the allowed range.
    Status validate() const;
    bool has_penalties() const;
};

struct TokenLogprob {
    int32_t id = -1;
    float logprob = 0.0f;
};

// What a draw saw. Reuse one SampleInfo across calls: `top` keeps its capacity.
struct SampleInfo {
    float logprob = 0.0f;            // of the chosen token, raw distribution
    std::vector<TokenLogprob> top;   // the n_logprobs most likely, best first, ties to the lower id
    int32_t n_candidates = 0;        // tokens left after truncation (1 for greedy)
};

// Applies step 1 of the pipeline to `logits` in place. `scratch` is reused
// to count tokens (no allocation once it is large enough). Token ids outside
// the logits are ignored.
void apply_penalties(std::span<float> logits, std::span<const int32_t> recent_tokens,
                     const SamplingParams& params, std::vector<int32_t>& scratch);
// What apply_penalties does, as (id, count) pairs: each distinct token of the
// window, in id order, with how often it occurs there (appended to ids and
// counts; nothing without penalties). Applying penalized_logit to those ids
// (those inside the logits) is apply_penalties.
void penalty_counts(std::span<const int32_t> recent_tokens, const SamplingParams& params,
                    std::vector<int32_t>& scratch, std::vector<int32_t>& ids, std::vector<float>& counts);
// One logit after the penalties, for a token seen `count` times in the window.
float penalized_logit(float logit, float count, const SamplingParams& params);

namespace sampling_detail {
struct Candidate {
    float logit;
    int32_t id;
};
}  // namespace sampling_detail

// The k best entries of `logits` into out[0..k), best first: higher first,
// ties to the lower id, NaN as -inf and +inf as the largest float — what
// top-k sampling keeps. Returns min(k, logits.size()).
size_t select_top_k(std::span<const float> logits, size_t k, std::vector<sampling_detail::Candidate>& out);

// One row's entries of RowSums (folio/batch.h).
struct RowSum {
    double softmax_sum = 0.0;     // sum of e^((v - max) / temperature) over the row
    float log_normalizer = 0.0f;  // log of the sum of e^v; -inf for a row of only NaN / -inf
};
// A row's RowSum computed on the host: what a backend computes where its
// logits are, and the reference for it.
RowSum row_sums(std::span<const float> logits, float temperature);

// The token Sampler::sample draws from a whole row, penalties applied
// already (so none here), with `params`' temperature and cuts when its
// uniform value is u (in [0, 1)): the reference for the draws a backend
// makes where the logits are (Backend::forward_draw: kernels::draw_rows by
// temperature alone, kernels::top_p_draw_rows by top-p or min-p), with
// `info` filled as sample() fills it (n_logprobs of them). Allocates; not
// for a hot path.
int32_t draw_with_uniform(std::span<const float> logits, const SamplingParams& params, double u,
                          SampleInfo* info = nullptr);

class Sampler {
public:
    // Fails when params.validate() does.
    static Result<Sampler> create(const SamplingParams& params);

    // The next token for one sequence. `recent_tokens` is the sequence so far
    // (prompt and generated tokens, oldest first) for the penalties. NaN
    // logits count as -infinity. Returns -1 only when `logits` is empty.
    // No allocation once the buffers have grown to the vocabulary.
    int32_t sample(std::span<const float> logits, std::span<const int32_t> recent_tokens,
                   SampleInfo* info = nullptr);
    // sample(), and the distribution it drew from into `probs` (the row's
    // size): the processed one (penalties, top-k, temperature, top-p,
    // min-p), 0 outside the kept set, one-hot when greedy. Speculative
    // sampling's p (the target's) and q (a sampling draft's).
    int32_t sample_with_distribution(std::span<const float> logits, std::span<const int32_t> recent_tokens,
                                     std::span<float> probs, SampleInfo* info = nullptr);
    // The same draw from a row's best entries selected elsewhere (a GPU, where
    // the logits are): `logits` and `ids` hold at least
    // candidates_needed(recent_tokens.size()) of the row's best, best first,
    // ties to the lower id, NaN as -inf and +inf as the largest float (as
    // select_top_k gives them).
    // With `sums` (the row's RowSum, made where the logits are) it also
    // draws top-p and min-p without top-k and fills `info` (logprobs). It
    // returns kNeedsWholeRow, having drawn nothing, when the given entries
    // cannot decide the draw (top-p's or min-p's set reaches past them, or
    // the draw is by temperature alone): sample() on the whole row then
    // draws what it would have (or a backend, Backend::draw_last_rows).
    static constexpr int32_t kNeedsWholeRow = -2;
    int32_t sample_top_k(std::span<const float> logits, std::span<const int32_t> ids,
                         std::span<const int32_t> recent_tokens, const RowSum* sums = nullptr,
                         SampleInfo* info = nullptr);
    // `info` as sample() fills it from the whole row, for a token drawn from
    // the set of n_candidates entries whose best entries are (logits, ids)
    // (sample_top_k's) with `sums` its RowSum and chosen_logit its cleaned
    // logit: how sample_top_k reports its own draws, and the report for a
    // row it could not decide whose token was drawn where the logits are
    // (Backend::draw_last_rows).
    void report_drawn(std::span<const float> logits, std::span<const int32_t> ids, const RowSum& sums,
                      float chosen_logit, int32_t n_candidates, SampleInfo& info);
    // How many of a row's best entries sample_top_k needs to draw what
    // sample() draws from the whole row, for a sequence of n_recent tokens:
    // top_k (1 when greedy) plus the penalty window, as penalties that only
    // lower logits cannot lift an entry from further down, and at least
    // n_logprobs; kTopPCandidates for top-p or min-p without top-k (usually
    // enough; kNeedsWholeRow otherwise); by temperature alone 1, or
    // n_logprobs for the logprobs (the draw is always kNeedsWholeRow's). 0
    // when only the whole row will do (penalties that raise logits,
    // penalties without top-k).
    static constexpr int32_t kTopPCandidates = 256;
    int32_t candidates_needed(size_t n_recent) const;
    // Whether sample_top_k needs the row's RowSum (top-p without top-k, logprobs).
    bool needs_row_sums() const;
    // Whether sample() draws by temperature alone after the penalties, or is
    // greedy (no top-k, top-p or min-p cut; no logprobs): a draw a GPU can
    // make where the logits are (Backend::forward_draw, with penalty_counts()
    // of the recent tokens) with the uniform value take_uniform() gives, the
    // one sample() would have drawn (none for greedy). (Only a row without a
    // number above -inf differs: sample() takes no value for it; the token is
    // its argmax either way.)
    bool draws_by_temperature() const;
    // Whether sample() draws by top-p and/or min-p from the row after the
    // penalties, without top-k: a draw a GPU can also make where the logits
    // are (RowDraws' top_p and min_p), with take_uniform()'s value.
    bool draws_by_top_p() const;
    // Whether sample() draws from the whole row, without top-k, by
    // temperature alone, top-p or min-p (not greedy): with no penalties, a
    // draw a GPU can make from the row of a top-k step that sample_top_k
    // could not decide (Backend::draw_last_rows; logprobs: report_drawn).
    bool draws_from_whole_row() const;
    double take_uniform() { return uniform(); }

    const SamplingParams& params() const { return params_; }
    // The seed in use (drawn at creation when params.seed was kRandomSeed).
    uint64_t seed() const { return seed_; }

private:
    Sampler(const SamplingParams& params, uint64_t seed);

    int32_t sample_truncated(std::span<const float> scores, int32_t& n_candidates);
    // The last tokens the penalties count, of n_recent (0 without penalties).
    size_t penalty_window(size_t n_recent) const;
    // The penalties on the first n candidates_, for the tokens in `window`.
    void penalize_candidates(size_t n, std::span<const int32_t> window);
    // Min-p over the n best candidates_ (sorted), then top-p and the draw.
    int32_t sample_sorted(size_t n, int32_t& n_candidates);
    // Top-p over the n candidates_ (sorted or not) and the draw; -1 when
    // nothing is left.
    int32_t draw(size_t n, double softmax_sum, float max, bool sorted, int32_t& n_candidates);
    int32_t sample_full(std::span<const float> scores);
    // sample_top_k with top-k (or greedy): the k best after the penalties.
    int32_t sample_k_best(std::span<const float> logits, std::span<const int32_t> ids, size_t given,
                          std::span<const int32_t> recent_tokens, int32_t& n_candidates);
    // sample_top_k without top-k: top-p and min-p over the given best entries.
    int32_t sample_best(std::span<const float> logits, std::span<const int32_t> ids, size_t given,
                        const RowSum* sums, int32_t& n_candidates);
    void report_logprobs(std::span<const float> logits, int32_t chosen, SampleInfo& info);
    // info's logprobs from the row's log-normalizer, the chosen token's
    // logit and the first n_top of top_logprobs_ (the row's best, best first).
    void fill_logprobs(float log_normalizer, float chosen_logit, size_t n_top, SampleInfo& info);
    double uniform();
    friend int32_t draw_with_uniform(std::span<const float>, const SamplingParams&, double, SampleInfo*);

    SamplingParams params_;
    double fixed_uniform_ = -1.0;  // draw_with_uniform's value for the next uniform(), when >= 0
    std::span<float> capture_;     // sample_with_distribution's probs while it runs
    bool captured_ = false;        // a draw wrote them
    uint64_t seed_;
    std::mt19937_64 rng_;
    std::vector<float> penalized_;        // the logits after penalties
    std::vector<float> weights_;          // softmax numerators over the vocabulary
    std::vector<int32_t> penalty_counts_;
    std::vector<sampling_detail::Candidate> candidates_;
    std::vector<sampling_detail::Candidate> top_logprobs_;
};

// What StopChecker::push lets through.
struct StopUpdate {
    std::string text;                               // safe to show now
    bool stopped = false;                           // a stop string appeared; text ends before it
    FinishReason reason = FinishReason::StopString; // meaningful when stopped
    std::string matched;                            // the stop string that matched
};

// Stop tokens and stop strings for one request. Push each decoded text delta
// (whole UTF-8 characters, as StreamingDecoder gives them); show what comes
// back. A suffix that is the start of a stop string is held back until the
// next delta decides; when generation ends for another reason, flush() gives
// it back. Matching is on bytes; the earliest stop string in the text wins
// (the first listed when several start at the same place).
class StopChecker {
public:
    StopChecker() = default;
    // Empty stop strings are ignored.
    StopChecker(std::vector<int32_t> stop_token_ids, std::vector<std::string> stop_strings);

    bool is_stop_token(int32_t id) const;
    StopUpdate push(std::string_view text_delta);
    // The held-back text when generation ends without a stop string ("" after one).
    std::string flush();
    bool stopped() const { return stopped_; }

private:
    std::vector<int32_t> stop_token_ids_;
    std::vector<std::string> stop_strings_;
    size_t longest_stop_ = 0;
    std::string pending_;
    bool stopped_ = false;
};

}  // namespace folio
