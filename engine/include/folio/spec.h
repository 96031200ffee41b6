// Speculative decoding ("guess, then verify"): a Proposer guesses the next
// few tokens of each speculating sequence cheaply; the target model computes
// all of them in one step (the scheduler's drafts, Sequence::drafts), and the
// verifier keeps the longest accepted prefix plus one token of the target's
// own (Leviathan et al. 2023; Chen et al. 2023), so that the output has
// exactly the distribution the target alone would give: token for token the
// same under greedy decoding.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "folio/backend.h"
#include "folio/error.h"
#include "folio/model.h"
#include "folio/sampling.h"
#include "folio/tokenizer.h"

namespace folio {

enum class SpecMethod {
    Off,
    Ngram,      // prompt lookup: the tokens that followed the latest earlier match of the last n tokens
    Draft,      // a second, smaller model of the same vocabulary (-md), drafting greedily
    LayerSkip,  // the target's own first draft_layers layers, final norm and output head
    Int4Self,   // the target's own weights quantized to Q4_1 in memory at load
};

// "off", "ngram", "draft", "layer-skip", "int4-self"; parse_spec_method names the methods it knows in its error.
std::string_view to_string(SpecMethod method);
Result<SpecMethod> parse_spec_method(std::string_view name);

struct SpecConfig {
    SpecMethod method = SpecMethod::Off;
    int32_t draft_max = 4;  // K: drafts per sequence per step at most
    int32_t draft_min = 1;  // fewer proposed than this: the step does not speculate
    int32_t ngram_min = 2;  // prompt lookup matches the last n tokens, n from ngram_max down to ngram_min
    int32_t ngram_max = 4;
    bool adaptive = true;   // K per sequence per step from its acceptance and the measured costs
                            // (DraftLengthTuner), at most draft_max; false: always draft_max
    int32_t draft_layers = 0;        // LayerSkip: layers the draft keeps (0: a quarter of the target's)
    float draft_p_min = 0;  // a draft model stops drafting a sequence where its best token's probability falls below this
    Backend* draft_backend = nullptr;  // Draft / LayerSkip: the draft model's backend (the caller owns it)

    // An error naming the field, its value and the allowed range.
    Status validate() const;
};

// A draft model's forward pass: its rows and time (Proposer::passes).
struct DraftPass {
    int32_t rows = 0;
    double seconds = 0;
};

// One sequence a proposer drafts for: its tokens so far (prompt and
// verified output) and how many drafts it may make.
struct DraftRequest {
    int64_t id = -1;  // the sequence (a draft model keeps its KV between steps)
    std::span<const int32_t> tokens;
    int32_t max_drafts = 0;
    // Set: a draft model samples its drafts with these options (its own
    // random state per sequence) and writes each one's distribution q to
    // *q (n_vocab floats a draft, in order) for the verifier's full-q rule;
    // null: greedy drafts (one-hot q, nothing written).
    const SamplingParams* sampling = nullptr;
    std::vector<float>* q = nullptr;
};

// A draft model's KV block, for the block map: the sequence whose K/V it
// holds (-1: free) and how many of its tokens.
struct DraftBlockCell {
    int64_t seq = -1;
    uint16_t tokens = 0;
};

// Drafts for all speculating sequences of a step at once (a draft model
// batches them; prompt lookup needs nothing shared).
class Proposer {
public:
    virtual ~Proposer() = default;
    // out[i]: up to requests[i].max_drafts tokens guessed to follow requests[i].tokens.
    virtual void propose(std::span<const DraftRequest> requests, std::vector<std::vector<int32_t>>& out) = 0;
    // Reads requests[i].tokens (a prompt) into what the proposer keeps for
    // the sequence (a draft model's KV) and drafts nothing: the engine calls
    // it in the step that finishes the prompt, so that the first propose()
    // reads one token, not the whole prompt. A proposer that keeps nothing
    // (prompt lookup) has nothing to do.
    virtual void prefill(std::span<const DraftRequest> /*requests*/) {}
    virtual std::string name() const = 0;
    // The sequence is gone (finished, aborted): whatever the proposer keeps for it goes too.
    virtual void forget(int64_t /*id*/) {}
    // The forward passes of the last propose() or prefill() (none: the proposer runs no model).
    virtual std::span<const DraftPass> passes() const { return {}; }
    // A draft model's KV blocks, one cell each (empty: the proposer keeps no KV).
    virtual void describe_blocks(std::vector<DraftBlockCell>& /*cells*/) const {}
};

// Adaptive K: per request an estimate of the acceptance rate alpha from its
// recent verdicts; per step, for each sequence the K in 0 .. draft_max that
// maximises expected tokens per unit of step time, E(K) = (1 - alpha^(K+1)) /
// (1 - alpha) over t(rows + K) + K * (a draft token's cost), where t(n) =
// a + b n is fitted to the measured forward times. When verification is no
// longer nearly free (a large batch, a compute-bound device) b grows and K
// falls to 0.
//
// At K = 0 a sequence still drafts one token now and then (a probe), so
// that its estimate follows the text: every kProbeEvery steps at first,
// twice as far apart after each probe nothing of which is accepted. A
// draft model must read every token it skipped before it drafts again, so
// its probes cost what the skipped tokens cost: after kPauseAfter failed
// probes a request whose draft costs more than a few % of a step pauses
// (no drafts for the rest of it; the draft's KV is released). And where
// the costs say that not even a draft that is always accepted pays, no
// request drafts or probes at all.
//
// Both costs are fitted per forward pass, t(n) = a + b n over the pass's
// rows: the target's steps, and a draft model's passes (its first reads a
// whole prompt, later ones the tokens it skipped: those are rows, and a
// drafted token costs the draft one row of a pass, not the pass's share).
class DraftLengthTuner {
public:
    // Exponentially weighted least squares of t(n) = a + b n.
    class CostFit {
    public:
        void observe(int32_t n_rows, double seconds);
        bool known() const { return w_ > 0; }
        double fixed_s() const { return fixed_s_; }
        double per_row_s() const { return per_row_s_; }
    private:
        double w_ = 0, sn_ = 0, st_ = 0, snn_ = 0, snt_ = 0;
        double fixed_s_ = 0, per_row_s_ = 0;
    };
    struct Acceptance {  // per request
        double drafted = 0, accepted = 0;
        int32_t steps_without = 0;  // steps since it last drafted
        int32_t probe_every = kProbeEvery;
        int32_t failed_probes = 0;  // in a row
        bool probing = false;       // its current draft is a probe
        bool paused = false;        // drafts no more
    };
    static constexpr int32_t kProbeEvery = 8;
    static constexpr int32_t kPauseAfter = 2;

    explicit DraftLengthTuner(int32_t draft_max);
    void observe_step(int32_t n_rows, double forward_s);    // every target forward pass
    void observe_draft_pass(int32_t n_rows, double seconds);  // every draft-model pass
    static void observe_verdict(Acceptance& a, int32_t n_drafted, int32_t n_accepted);
    static double alpha(const Acceptance& a);
    static double expected_tokens(double alpha, int32_t k);
    // K for a sequence in a step of other_rows rows besides its own.
    int32_t choose(const Acceptance& a, int32_t other_rows) const;
    // choose(), and at 0 the probe when one is due (1); may pause the request.
    int32_t plan(Acceptance& a, int32_t other_rows) const;
    double fixed_s() const { return step_.fixed_s(); }
    double per_row_s() const { return step_.per_row_s(); }
    // A drafted token: one row of a one-sequence draft pass (0 without draft-model passes: prompt lookup).
    double draft_s_per_token() const { return draft_.fixed_s() + draft_.per_row_s(); }

private:
    int32_t best_k(double alpha, int32_t other_rows) const;

    int32_t draft_max_;
    CostFit step_, draft_;
};

// The proposer `config` names (null for Off).
Result<std::unique_ptr<Proposer>> make_proposer(const SpecConfig& config);

// Draft and LayerSkip need a model to draft with: the draft's vocabulary
// must be the target's (same size, the same special tokens, every token's
// text), else an error naming the first difference.
Status check_draft_vocabulary(const Tokenizer& target, const Tokenizer& draft);
// LayerSkip's draft: the target's description with only its first n_layers
// layers (the same mapped weights; the final norm and output head kept).
Result<ModelDescription> layer_skip_model(const ModelDescription& target, uint32_t n_layers);

// Int4Self's draft: the target's matrices (2-D, rows of whole 32-blocks,
// not norms) quantized to `four_bits` (Q4_1 or Q4_0) in memory, the token
// embeddings / output head to Q8_0; the description points into
// `weights` (which must outlive it and any backend made from it).
struct InMemoryModel {
    ModelDescription model;
    std::vector<std::vector<std::byte>> weights;
};
Result<std::unique_ptr<InMemoryModel>> quantize_to_4_bits(const ModelDescription& target,
                                                          TensorType four_bits = TensorType::Q4_1);

// The draft a SpecConfig of method Draft, LayerSkip or Int4Self drafts with,
// made beside a loaded target: its description (int4-self: with the
// quantized weights it points into) and its own backend, on the target's
// device, with the target's block size, block count and context. Set
// SpecConfig::draft_backend to backend.get(); keep it until the engine stops.
struct DraftModel {
    std::unique_ptr<InMemoryModel> weights;  // int4-self only
    std::unique_ptr<ModelDescription> model;
    std::unique_ptr<Backend> backend;        // declared last: destroyed first
};
struct DraftOptions {
    std::string path;          // Draft: the draft model's GGUF file or HF folder
    int32_t layers = 0;        // LayerSkip: the target's first layers that draft (0: a quarter of them)
    std::string device;        // a GPU target's device ("": cuda); a CPU target drafts on the CPU
    int n_threads = 0;         // CPU threads (0: physical cores)
    bool cuda_graphs = true;
};
// Methods without a draft model (Off, Ngram) give an empty DraftModel. A
// draft whose vocabulary is not the target's is an error naming the first
// difference (check_draft_vocabulary).
Result<DraftModel> load_draft_model(SpecMethod method, const ModelDescription& target, const Tokenizer& target_tokenizer,
                                    const Backend& target_backend, const DraftOptions& options);
// LayerSkip's layer count for `layers` (0: a quarter of the target's, at least 1).
uint32_t layer_skip_layers(int32_t layers, const HParams& target);
// The draft's KV per token as a share of the target's (0 for Off and Ngram;
// Draft reads the draft model's description at `options.path`): for memory
// estimates before anything is loaded.
Result<double> draft_kv_share(SpecMethod method, const ModelDescription& target, const DraftOptions& options);

// The n-gram proposer's search on its own: the tokens that followed the
// latest earlier occurrence of tokens' last n tokens (n = ngram_max down to
// ngram_min; the longest match wins), at most max_drafts of them.
std::vector<int32_t> ngram_lookup(std::span<const int32_t> tokens, int32_t ngram_min, int32_t ngram_max,
                                  int32_t max_drafts);

// The verifier's verdict on one sequence's K drafts: the first n_accepted
// drafts are kept and `token` follows them (the target's correction at the
// first rejection, or its bonus token when all K were accepted).
struct Verdict {
    int32_t n_accepted = 0;
    int32_t token = -1;
};

// One-hot drafts (n-gram, a greedy draft model): q puts all its mass on the
// draft token, and the exact rule is to draw y_j from the target's fully
// processed distribution at row j (the token-choice pipeline over the
// draft-extended history) and accept while y_j equals draft j; the first
// y_j that differs is emitted (it is the residual norm(max(0, p - q)) draw:
// p with the draft token removed). targets has drafts.size() + 1 entries.
// Greedy verification is this rule with argmax draws.
Verdict verify_one_hot(std::span<const int32_t> drafts, std::span<const int32_t> targets);

// Full-q drafts (a draft model that sampled): p[j] is the target's processed
// distribution at row j (K + 1 rows), q[j] the distribution draft j was
// drawn from (K rows), both over the vocabulary, summing to 1. Draft x is
// accepted with probability min(1, p(x) / q(x)); at the first rejection a
// token is drawn from norm(max(0, p - q)); after K acceptances the bonus
// token from p[K]. The uniform values come from `sampler` (take_uniform).
Verdict verify_full_q(std::span<const std::span<const float>> p, std::span<const std::span<const float>> q,
                      std::span<const int32_t> drafts, Sampler& sampler);

// A draw from the discrete distribution `weights` (non-negative, any sum)
// with the uniform value u in [0, 1): the first index whose cumulative
// weight exceeds u * total; -1 when all weights are 0.
int32_t draw_from_weights(std::span<const float> weights, double u);

}  // namespace folio
