// The engine facade: a Backend, a KvCacheManager and a Scheduler driven by
// one thread of their own. Any thread may submit, abort and subscribe; none
// of these waits for a step. Each step the engine thread plans a batch,
// runs the forward pass, samples, streams every request's new text to its
// callback, and publishes an immutable StepEvent (timings, counts, KV usage
// and a block map a GUI can draw) to the step subscribers.
//
// Callbacks run on the engine thread: keep them short (post the value to
// your own thread, e.g. a queued Qt signal). They may call submit/abort.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "folio/backend.h"
#include "folio/error.h"
#include "folio/kv_cache_manager.h"
#include "folio/metrics.h"
#include "folio/model.h"
#include "folio/sampling.h"
#include "folio/scheduler.h"
#include "folio/spec.h"
#include "folio/tokenizer.h"

namespace folio {

using RequestId = SeqId;

struct EngineConfig {
    SchedulerConfig scheduler;
    bool enable_prefix_caching = true;
    // Host threads that draw tokens from whole logits rows, several rows at
    // once (~0.2 ms a row of 49152 at temperature alone, milliseconds with
    // top-p over a flat row). 0: the backend's threads, or up to 8 cores
    // beside a GPU backend (whose own count is 1).
    int sampling_threads = 0;
    // Speculative decoding for every request that does not choose its own
    // (off by default): the proposer and its K. Greedy output is token for
    // token what it is without.
    SpecConfig spec;
};

struct GenerationRequest {
    std::vector<int32_t> prompt_tokens;  // used as given when not empty
    std::string prompt;                  // else tokenized (BOS as the model adds it, special tokens parsed)
    SamplingParams sampling;
    int32_t max_tokens = 256;            // tokens to generate at most
    int32_t n = 1;                       // independent samples; they share the prompt's KV blocks
    std::vector<std::string> stop;       // stop strings (never shown)
    bool ignore_eos = false;             // keep going past end-of-generation tokens
    int32_t priority = 0;                // lower first: an interactive chat before background work
    int32_t max_context = 0;             // 0 = the engine's
    OverflowPolicy overflow = OverflowPolicy::Stop;
    int32_t keep_tokens = 0;             // what TruncateMiddle keeps at the start (the system prompt)
    int32_t sink_tokens = 4;             // what SinkWindow keeps at the start (StreamingLLM's attention sinks)
    // Speculative decoding for this request: unset, the engine's
    // (EngineConfig::spec); Off: none; Ngram: prompt lookup, on any engine;
    // the engine's own draft-model method (draft, layer-skip, int4-self):
    // its draft model (an engine holds one). spec_draft_max > 0: exactly that
    // K, at most the engine's draft_max, instead of the engine's choice
    // (ignored where the request does not speculate).
    std::optional<SpecMethod> spec_method;
    int32_t spec_draft_max = 0;
};

// Per-request timings, in seconds from submit(). Rates are cumulative over
// the whole prefill / decode, not per chunk.
struct RequestTimings {
    double queue_s = 0;        // submit -> first scheduled
    double ttft_s = 0;         // submit -> first token
    double e2e_s = 0;          // submit -> this output (the finish, in the last one)
    int32_t prompt_tokens = 0;
    int32_t cached_prompt_tokens = 0;  // supplied by the prefix cache
    int32_t generated_tokens = 0;
    int32_t preemptions = 0;
    int32_t truncated_tokens = 0;      // left out by the overflow policy (truncate, rolling), so far
    // Speculative decoding: steps that verified drafts, drafts verified, of them accepted.
    int32_t n_drafts = 0;
    int32_t draft_tokens = 0;
    int32_t accepted_tokens = 0;
    double acceptance_rate() const { return draft_tokens > 0 ? double(accepted_tokens) / draft_tokens : 0.0; }
    double mean_acceptance_length() const { return n_drafts > 0 ? 1.0 + double(accepted_tokens) / n_drafts : 0.0; }
    double prefill_tokens_per_s() const;
    double decode_tokens_per_s() const;
};

// One streamed update of a request: what is new since the last one.
struct RequestOutput {
    RequestId id = -1;
    int32_t index = 0;                  // which of the request's n samples (each finishes once)
    std::string text;                   // new text, whole UTF-8 characters, stop strings withheld
    std::vector<int32_t> token_ids;     // new tokens
    std::vector<uint8_t> draft_accepted;  // per new token: 1 when it was a draft the target accepted
    // Byte ranges [first, second) of `text` that came out with accepted
    // draft tokens (a view that tints them); the rest came with the target's own.
    std::vector<std::pair<uint32_t, uint32_t>> draft_text;
    std::vector<SampleInfo> logprobs;   // per new token when sampling.n_logprobs > 0
    bool finished = false;
    FinishReason reason = FinishReason::Length;
    std::string error;                  // when reason == Error
    RequestTimings timings;             // so far; complete when finished
};

// One KV block as the block map shows it.
struct BlockCell {
    RequestId owner = -1;    // the request whose table holds it first; -1 when no table does
    uint16_t ref_count = 0;
    uint16_t tokens = 0;     // tokens it holds for its owner
    bool cached = false;     // registered in the prefix cache (free cached blocks can be revived)
};

struct StepEvent {
    uint64_t step = 0;
    double time_s = 0;            // since the engine started
    double duration_s = 0;        // plan + forward + sampling
    double forward_s = 0;         // of which in the backend's forward: on a GPU, the device work and the wait for it
    int32_t prefill_tokens = 0;
    int32_t decode_tokens = 0;
    int32_t running = 0;
    int32_t waiting = 0;
    int32_t swapped = 0;          // preempted requests whose KV blocks wait in host swap space
    int32_t preempted = 0;        // this step
    std::vector<RequestId> preempted_ids;  // which requests (submit() ids)
    // Speculative decoding in this step: sequences that verified drafts,
    // drafts verified and accepted, accepted per draft position, the
    // largest K any sequence was given, and the proposer's time (the
    // verification is in forward_s).
    int32_t spec_sequences = 0;
    int32_t draft_tokens = 0;
    int32_t accepted_tokens = 0;
    std::vector<int32_t> accepted_per_position;
    int32_t draft_k = 0;
    double draft_s = 0;
    double kv_usage = 0;          // share of blocks in use
    uint32_t block_size = 0;
    uint64_t kv_bytes_per_block = 0;  // every layer's K and V of one block, in kv_type
    KvType kv_type = KvType::F16;
    std::vector<BlockCell> blocks;  // filled when anybody subscribes to step events
    // A draft model's own KV blocks (speculative decoding by draft,
    // layer-skip or int4-self), as `blocks`: owner = the request drafted for.
    std::vector<BlockCell> draft_blocks;
};

using OutputCallback = std::function<void(const RequestOutput&)>;

struct Submission {
    GenerationRequest request;
    OutputCallback on_output;
};
using StepCallback = std::function<void(std::shared_ptr<const StepEvent>)>;

class TokenChooser;

class Engine {
public:
    // Starts the engine thread. The model, tokenizer and backend must outlive the engine.
    static Result<std::unique_ptr<Engine>> start(const ModelDescription& model, const Tokenizer& tokenizer,
                                                 Backend& backend, const EngineConfig& config);
    ~Engine();  // aborts what is left and joins the thread
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Queues a request; `on_output` gets its stream (finished last, exactly
    // once, errors included). Never blocks on a step.
    RequestId submit(GenerationRequest request, OutputCallback on_output);
    // Queues several requests at once (a batch of prompts, `folio run -f`):
    // the scheduler sees all of them in the same step. Ids in batch order.
    std::vector<RequestId> submit(std::vector<Submission> batch);
    // Ends a request wherever it is (waiting, mid-prefill, mid-decode); its
    // callback gets finished with FinishReason::Abort. Unknown ids are ignored.
    void abort(RequestId id);
    // Step events for `fn` until unsubscribe(); returns its handle.
    int subscribe(StepCallback fn);
    void unsubscribe(int handle);

    // The counters and histograms so far (a copy).
    EngineMetrics metrics() const;
    std::string prometheus_text() const;

    // Blocks the caller until no request is left (CLI and tests).
    void wait_idle();

    const Tokenizer& tokenizer() const { return tokenizer_; }
    Backend& backend() { return backend_; }
    uint32_t n_blocks() const { return backend_.n_blocks(); }

private:
    Engine(const ModelDescription& model, const Tokenizer& tokenizer, Backend& backend, const EngineConfig& config);
    struct Request;
    struct Inbox;
    void run();
    bool take_inbox();  // true when anything came in
    // One engine step, in its phases (engine_step.cpp): plan (the
    // scheduler), build the batch, forward + choose the tokens (one
    // TokenChooser pipeline), commit (stream, stop, Scheduler::commit),
    // publish (StepEvent).
    struct StepTokens;
    void step();
    void reject_unschedulable();
    void note_scheduled(const StepPlan& plan);
    void build_batch(const StepPlan& plan);
    void propose_drafts();  // Sequence::drafts for every running sequence that decodes
    int32_t draft_length(Request& r, int32_t other_rows);  // this step's K for a speculating request
    void prefill_drafts(const StepPlan& plan);  // the proposer reads the prompts this step finished
    bool forward_and_choose(StepPlan& plan, StepTokens& tokens);  // false: the forward failed (requests ended)
    void commit_step(const StepPlan& plan, const StepTokens& tokens);
    // The full-q rule (drafts a draft model sampled, their q in r.draft_q) over p, the rows' distributions.
    Verdict verify_sampled(Request& r, std::span<const int32_t> drafts, std::span<const float> p);
    void count_verdict(Request& r, int32_t n_draft, int32_t n_accepted);  // per request, step and metrics
    // Ends a request: flushes its held-back text, records its metrics, sends
    // the last output (with `pending`'s new tokens and text when given) and forgets it.
    void finish(Request& r, FinishReason reason, std::string error = {}, RequestOutput* pending = nullptr);
    void publish_step(const StepPlan& plan, double duration_s, double forward_s = 0);
    void fill_block_map(StepEvent& event) const;
    // Copy `index` of a request at its first token: a scheduler fork sharing its blocks.
    RequestId fork(Request& parent, int32_t index);
    double now_s() const;

    const ModelDescription& model_;
    const Tokenizer& tokenizer_;
    Backend& backend_;
    EngineConfig config_;
    KvCacheManager kv_;
    Scheduler scheduler_;
    std::chrono::steady_clock::time_point started_;
    std::vector<int32_t> end_of_generation_;  // stop tokens unless a request ignores EOS

    // Shared with callers, under mutex_.
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable idle_;
    std::vector<std::pair<RequestId, std::unique_ptr<Request>>> submitted_;
    std::vector<RequestId> aborted_;
    std::vector<std::pair<int, StepCallback>> step_subscribers_;
    EngineMetrics metrics_;
    size_t in_flight_ = 0;
    bool stopping_ = false;
    int next_subscriber_ = 1;
    std::atomic<RequestId> next_id_{1};

    // Engine thread only.
    std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
    Batch batch_;
    std::unique_ptr<TokenChooser> chooser_;  // the step's token choice, where the logits are
    // Speculative decoding: a proposer with its settings and adaptive K's
    // cost model. The engine's (its config's method; no proposer when off),
    // and prompt lookup's for the requests that choose it where the engine's
    // method is another. Each request drafts through one of them, or none.
    struct SpecRoute {
        SpecConfig config;
        std::unique_ptr<Proposer> proposer;
        DraftLengthTuner tuner;
        explicit SpecRoute(const SpecConfig& c) : config(c), tuner(c.draft_max) {}
    };
    SpecRoute spec_;
    std::unique_ptr<SpecRoute> ngram_;
    std::vector<SpecRoute*> spec_routes_;  // those with a proposer, made once at start
    Result<SpecRoute*> spec_route(const GenerationRequest& request);  // the request's, or null (no speculation)
    struct SpecStep {                        // this step's counts, for its StepEvent
        int32_t sequences = 0, draft_tokens = 0, accepted_tokens = 0, draft_k = 0;
        std::vector<int32_t> accepted_per_position;
        double draft_s = 0;
    } spec_step_;
    uint64_t step_count_ = 0;
    size_t finished_since_publish_ = 0;
    std::thread thread_;
};

}  // namespace folio
