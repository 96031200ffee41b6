// Iteration-level scheduling (Orca, vLLM): every step decides afresh which
// sequences run and how many of their tokens, under a token budget
// (max_num_batched_tokens) and a sequence budget (max_num_seqs).
//
// A step takes, in priority order (lower value first, then arrival):
//   1. running sequences — a decode needs one token, a sequence still in
//      prefill gets its next chunk (chunked prefill), so prefill and decode
//      rows mix in one step;
//   2. then, if nothing was preempted, swapped and waiting sequences in one
//      priority order: a swapped one copied back when the blocks of what it
//      had computed and its next tokens fit, a waiting one admitted only when
//      the blocks of their whole prompt fit (after the prefix cache has
//      supplied what it holds) with a free block left per running sequence
//      for its growth — recomputation after preemption is expensive.
// When a running sequence needs a block and none is free, the lowest-priority
// running sequence is preempted. Where the backend has swap space (host
// memory beside a GPU's KV cache) and it has room, the sequence's blocks are
// copied there and freed, and it waits in the swapped queue to be copied back
// and resume where it stopped (vLLM's swap preemption). Otherwise its blocks
// are freed and it goes back to the waiting queue to be recomputed (its full
// blocks stay in the prefix cache, so recomputation is often cheap). Swapped
// and waiting sequences come back in one priority order; a swapped one is
// copied back in only when its blocks fit, like an admission. A waiting
// sequence of strictly higher priority than a running one may preempt it to
// get in.
//
// Two baselines of the literature live here too, so that the benchmark can
// compare in one engine: static batching (no admission until the whole batch
// has finished) and contiguous reservation (a sequence reserves blocks for
// its maximum length, its context, when admitted).
//
// The scheduler sees only token ids. Sampling, detokenization and stop
// conditions belong to the runtime, which reports back through commit().
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "folio/batch.h"
#include "folio/error.h"
#include "folio/kv_cache_manager.h"
#include "folio/sampling.h"

namespace folio {

// What happens when a sequence reaches its maximum context.
enum class OverflowPolicy {
    Stop,            // finish with FinishReason::Length (a prompt that does not fit is an error)
    TruncateMiddle,  // keep the first keep_tokens (the system prompt) and the latest half of the rest
    RollingWindow,   // keep the latest three quarters of the context, nothing pinned
    SinkWindow,      // StreamingLLM: keep the first sink_tokens (attention sinks) and the latest
                     // tokens; where the backend can shift cached keys (SchedulerConfig::shift_keys)
                     // the window slides in place, a quarter of it at a time, without recomputation
};

// What RollingWindow keeps of a context: its latest three quarters.
inline int32_t rolling_keep(int32_t context) { return std::max(1, context * 3 / 4); }
// How a sink window slides in place (OverflowPolicy::SinkWindow): it keeps
// its first keep_blocks whole blocks (the sinks, rounded up) and drops the
// drop_blocks after them, a quarter of the rest of the context; drop_blocks
// is 0 where the context is too small to slide by whole blocks.
struct SinkSlide {
    int32_t keep_blocks = 0, drop_blocks = 0;
};
inline SinkSlide sink_slide(int32_t context, int32_t sink_tokens, int32_t block_size) {
    const int32_t keep = (std::max(0, sink_tokens) + block_size - 1) / block_size;
    return {keep, std::max(0, (context - keep * block_size) / 4 / block_size)};
}

enum class BatchingMode {
    Continuous,  // admit whenever blocks and budgets allow
    Static,      // admit only when every running sequence has finished
};

struct SchedulerConfig {
    uint32_t max_num_seqs = 64;
    uint32_t max_num_batched_tokens = 256;  // a CPU prefills ~100-1000 tok/s: bounds a step that mixes in a prefill chunk
    bool enable_chunked_prefill = true;  // else a prompt waits until all of it fits in one step
    BatchingMode batching = BatchingMode::Continuous;
    bool reserve_full_length = false;    // contiguous-reservation baseline: blocks for the
                                         // sequence's whole context at admission
    uint32_t swap_blocks = 0;            // host slots a preempted sequence's blocks can be swapped
                                         // to (Backend::n_swap_blocks); 0 = always recompute
    bool shift_keys = false;             // the backend re-rotates cached keys (Backend::shift_keys):
                                         // SinkWindow slides in place instead of recomputing
};

// One sequence as the scheduler knows it.
struct Sequence {
    SeqId id = -1;
    int32_t priority = 0;          // lower runs first (an interactive chat before background work)
    uint64_t arrival = 0;          // set by add(): FCFS among equal priorities
    std::vector<int32_t> tokens;   // prompt then generated, all verified
    int32_t num_computed = 0;      // tokens whose K/V are in the cache
    int32_t max_new_tokens = 256;  // generation budget
    int32_t max_context = 0;       // 0 = the scheduler's
    OverflowPolicy overflow = OverflowPolicy::Stop;
    int32_t keep_tokens = 0;       // TruncateMiddle keeps these first tokens
    int32_t sink_tokens = 4;       // SinkWindow keeps these (rounded up to whole blocks when it slides in place)
    // Speculative decoding: tokens a proposer guessed to follow `tokens`,
    // unverified (never in `tokens`, never in the prefix cache). Set before
    // schedule() (set_drafts); a step that reaches the end of the sequence
    // computes as many of them as fit beside its own token, and commit()
    // keeps the accepted ones and drops the rest. Preemption drops them.
    std::vector<int32_t> drafts;

    // Filled in by the scheduler.
    int32_t n_generated = 0;
    int32_t n_prefix_cached = 0;   // tokens the prefix cache supplied at the last admission
    int32_t n_preemptions = 0;     // of them swapped out: n_swaps
    int32_t n_swaps = 0;
    int32_t n_truncated = 0;       // tokens dropped by the overflow policy
    int32_t n_cacheable = INT32_MAX;  // the first tokens whose K/V follow from the tokens alone, which
                                      // the prefix cache may keep: a slid sink window's sinks only
    bool running = false;
    bool swapped = false;          // its computed K/V wait in host swap slots
};

// One sequence's share of a step.
struct ScheduledSequence {
    SeqId id = -1;
    int32_t first = 0;   // first token index computed this step (= num_computed before it)
    int32_t count = 0;   // tokens computed this step
    bool sample = false; // the step reaches the end of its tokens: the runtime samples one
    int32_t n_draft = 0; // of `count`, the last ones are this many drafts (Sequence::drafts), to
                         // verify: the runtime samples a token at each of the last n_draft + 1 rows
};

// Before the forward pass the backend carries out, in this order: swap_out
// (device block -> host slot), swap_in (host slot -> device block), copies.
struct StepPlan {
    std::vector<ScheduledSequence> sequences;
    std::vector<BlockCopy> swap_out;  // {src device block, dst host slot} of sequences swapped out this step
    std::vector<BlockCopy> swap_in;   // {src host slot, dst device block} of sequences resumed this step
    std::vector<BlockCopy> copies;   // copy-on-write, to carry out before the forward pass
    std::vector<SeqId> preempted;    // sent back to waiting (or swapped out) this step
    int32_t n_prefill_tokens = 0;
    int32_t n_decode_tokens = 0;      // drafts included
    int32_t n_draft_tokens = 0;       // drafts computed this step
    bool empty() const { return sequences.empty(); }
};

// A sink window that slid in place (OverflowPolicy::SinkWindow): after the
// copies, the backend turns the keys of `blocks` back by `delta` positions
// (Backend::shift_keys), before the sequence's next step.
struct KvShift {
    SeqId id = -1;
    std::vector<BlockCopy> copies;  // copy-on-write of the moved blocks it shared
    std::vector<int32_t> blocks;    // its computed blocks after the sinks
    int32_t delta = 0;              // tokens dropped from the middle
};

// What the runtime did with a planned sequence after the forward pass.
struct StepResult {
    int32_t token = -1;     // the sampled token, where the plan asked for one
    int32_t n_accepted = 0; // drafts accepted before it (the first n_accepted of the planned n_draft)
    bool finished = false;  // the runtime ends it (stop token or string, abort): the token is kept
};

struct FinishedSequence {
    SeqId id = -1;
    FinishReason reason = FinishReason::Length;
    std::string message;  // for FinishReason::Error
};

class Scheduler {
public:
    // `max_context`: the backend's longest sequence.
    Scheduler(const SchedulerConfig& config, KvCacheManager& kv, int32_t max_context);

    // Queues a sequence (its tokens are the prompt). An error, and nothing
    // queued, for an empty prompt, a duplicate id, or a prompt that cannot
    // fit under the Stop policy; the other policies truncate it.
    Status add(Sequence seq);
    // Removes a sequence wherever it is, freeing its blocks. False if unknown.
    bool abort(SeqId id);
    // Ends a sequence the runtime has finished (stop token, stop string,
    // length): its verified full blocks go to the prefix cache, the rest is freed.
    void finish(SeqId id);

    // A copy of a running sequence under a new id, sharing all its blocks
    // (copy-on-write when either writes into a shared one). Forks are not
    // limited by max_num_seqs: they come from a request already admitted.
    void fork(SeqId parent, SeqId child);

    // The drafts a running sequence's next step may verify (replacing any
    // it had); ignored for a sequence that is not running.
    void set_drafts(SeqId id, std::vector<int32_t> drafts);
    StepPlan schedule();
    // The backend could not take its swap space for `plan` (nothing was
    // copied): every swapped sequence goes back to waiting, to be recomputed,
    // and preemption recomputes from now on.
    void stop_swapping(const StepPlan& plan);
    // After the forward pass: every planned sequence has its tokens computed;
    // results[i] tells what became of plan.sequences[i]: a verified draft
    // moves num_computed past its accepted tokens only (rollback: the
    // rejected ones' KV slots are overwritten later). Sequences the
    // runtime finished are removed; returns those the scheduler itself ended
    // (generation budget, or the context under the Stop policy).
    std::vector<FinishedSequence> commit(const StepPlan& plan, std::span<const StepResult> results);
    // The sink windows commit() slid in place, for the runtime to carry out
    // (KvShift) before the next schedule(); taken once.
    std::vector<KvShift> take_kv_shifts() { return std::exchange(kv_shifts_, {}); }

    const Sequence* find(SeqId id) const;
    bool has_work() const { return !running_.empty() || !waiting_.empty() || !swapped_.empty(); }
    size_t num_running() const { return running_.size(); }
    size_t num_waiting() const { return waiting_.size(); }
    size_t num_swapped() const { return swapped_.size(); }
    uint64_t num_preemptions() const { return num_preemptions_; }
    uint64_t num_swapped_out_blocks() const { return swapped_out_blocks_; }
    uint64_t num_swapped_in_blocks() const { return swapped_in_blocks_; }
    uint32_t num_free_swap_blocks() const { return static_cast<uint32_t>(free_swap_.size()); }
    const std::vector<SeqId>& running() const { return running_; }
    const std::deque<SeqId>& waiting() const { return waiting_; }
    const std::deque<SeqId>& swapped() const { return swapped_; }
    const SchedulerConfig& config() const { return config_; }
    int32_t max_context() const { return max_context_; }
    KvCacheManager& kv() { return kv_; }

    // Every invariant the randomized tests check; empty when all hold.
    std::string check_invariants() const;

private:
    Sequence& seq(SeqId id) { return sequences_.at(id); }
    bool before(SeqId a, SeqId b) const;  // priority order
    void enqueue_waiting(SeqId id);
    void enqueue_swapped(SeqId id);
    void preempt(SeqId id, StepPlan& plan);
    // Moves a preempted sequence's computed blocks to host slots; false (no
    // change) without swap space for all of them.
    bool swap_out(Sequence& s, StepPlan& plan);
    bool try_swap_in(SeqId id, int32_t& budget, StepPlan& plan);
    // The first of the waiting and swapped queues in priority order (-1: none).
    SeqId next_to_enter() const;
    PrefixHit entry_prefix(const Sequence& s) const;
    // Free blocks the sequence's first step back in takes.
    uint32_t blocks_to_enter(const Sequence& s) const;
    void release_swap_slots(SeqId id);
    bool schedule_running(SeqId id, int32_t& budget, StepPlan& plan);
    // How many of the sequence's drafts a step ending at `end` can verify.
    int32_t drafts_that_fit(const Sequence& s, int32_t end, int32_t budget) const;
    bool try_admit(SeqId id, int32_t& budget, StepPlan& plan);
    int32_t chunk(const Sequence& s, int32_t budget) const;
    int32_t reserve_tokens(const Sequence& s) const;
    int32_t admission_tokens(const Sequence& s, int32_t first_chunk_end) const;
    uint32_t admission_headroom() const;
    // Applies the overflow policy to a sequence at its context limit:
    // true when it was shortened (and must recompute), false under Stop.
    bool shorten(Sequence& s);
    // SinkWindow without recomputation: drops the oldest quarter of the
    // window from the cache (KvCacheManager::slide) and queues its KvShift;
    // false (no change) where the backend cannot shift keys or the context
    // is too small to slide by whole blocks.
    bool slide(Sequence& s);
    void remove(SeqId id);

    SchedulerConfig config_;
    KvCacheManager& kv_;
    int32_t max_context_;
    std::unordered_map<SeqId, Sequence> sequences_;
    std::vector<SeqId> running_;   // kept in priority order
    std::deque<SeqId> waiting_;    // in priority order
    std::deque<SeqId> swapped_;    // in priority order
    std::unordered_map<SeqId, std::vector<int32_t>> swap_tables_;  // a swapped sequence's host slots, in table order
    std::vector<int32_t> free_swap_;  // free host slots
    std::vector<KvShift> kv_shifts_;  // slid this commit, not yet taken
    uint64_t next_arrival_ = 0;
    uint64_t num_preemptions_ = 0;
    uint64_t swapped_out_blocks_ = 0, swapped_in_blocks_ = 0;
};

}  // namespace folio
