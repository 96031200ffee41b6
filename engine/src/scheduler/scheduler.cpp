#include "folio/scheduler.h"

#include <algorithm>
#include <cassert>

namespace folio {

Scheduler::Scheduler(const SchedulerConfig& config, KvCacheManager& kv, int32_t max_context)
    : config_(config), kv_(kv), max_context_(max_context) {
    config_.max_num_seqs = std::max<uint32_t>(1, config_.max_num_seqs);
    config_.max_num_batched_tokens = std::max<uint32_t>(1, config_.max_num_batched_tokens);
    // Slots are taken from the back: the lowest first.
    for (uint32_t i = config_.swap_blocks; i > 0; --i) free_swap_.push_back(static_cast<int32_t>(i - 1));
}

bool Scheduler::before(SeqId a, SeqId b) const {
    const Sequence& x = sequences_.at(a);
    const Sequence& y = sequences_.at(b);
    return x.priority != y.priority ? x.priority < y.priority : x.arrival < y.arrival;
}

void Scheduler::enqueue_waiting(SeqId id) {
    const auto at = std::upper_bound(waiting_.begin(), waiting_.end(), id,
                                     [this](SeqId a, SeqId b) { return before(a, b); });
    waiting_.insert(at, id);
}

void Scheduler::enqueue_swapped(SeqId id) {
    const auto at = std::upper_bound(swapped_.begin(), swapped_.end(), id,
                                     [this](SeqId a, SeqId b) { return before(a, b); });
    swapped_.insert(at, id);
}

Status Scheduler::add(Sequence s) {
    if (s.tokens.empty()) return make_error("the prompt is empty: there is nothing to continue");
    if (sequences_.contains(s.id)) return make_error("request " + std::to_string(s.id) + " is already queued");
    if (s.max_new_tokens < 1) return make_error("max_new_tokens must be at least 1");
    // A sequence longer than the whole pool could never be scheduled: the
    // pool's capacity is a context limit like the model's.
    const auto pool_tokens = static_cast<int64_t>(kv_.pool().n_blocks()) * kv_.block_size();
    const auto limit = static_cast<int32_t>(std::min<int64_t>(max_context_, pool_tokens));
    s.max_context = s.max_context > 0 ? std::min(s.max_context, limit) : limit;
    if (s.max_context < 2) return make_error("the context must hold at least 2 tokens");
    s.keep_tokens = std::clamp(s.keep_tokens, 0, static_cast<int32_t>(s.tokens.size()));
    if (static_cast<int32_t>(s.tokens.size()) >= s.max_context) {
        if (s.overflow == OverflowPolicy::Stop)
            return make_error("the prompt is " + std::to_string(s.tokens.size()) + " tokens; the context holds " +
                              std::to_string(s.max_context) + " (with room for at least one token of reply)");
        shorten(s);
    }
    if (!config_.enable_chunked_prefill && s.tokens.size() > config_.max_num_batched_tokens)
        return make_error("the prompt is " + std::to_string(s.tokens.size()) +
                          " tokens; without chunked prefill a step takes at most " +
                          std::to_string(config_.max_num_batched_tokens));
    s.arrival = next_arrival_++;
    s.num_computed = 0;
    s.n_generated = 0;
    s.running = false;
    const SeqId id = s.id;
    sequences_.emplace(id, std::move(s));
    enqueue_waiting(id);
    return {};
}

bool Scheduler::shorten(Sequence& s) {
    const auto n = static_cast<int32_t>(s.tokens.size());
    int32_t keep_head = 0, keep_tail = 0;
    switch (s.overflow) {
        case OverflowPolicy::Stop: return false;
        case OverflowPolicy::TruncateMiddle:
            keep_head = std::min(s.keep_tokens, s.max_context / 2);
            keep_tail = (s.max_context - keep_head) / 2;
            break;
        case OverflowPolicy::RollingWindow: keep_tail = rolling_keep(s.max_context); break;
        case OverflowPolicy::SinkWindow:
            keep_head = std::clamp(s.sink_tokens, 0, s.max_context / 2);
            keep_tail = std::max(1, rolling_keep(s.max_context) - keep_head);
            break;
    }
    keep_tail = std::max(1, std::min(keep_tail, n - keep_head));
    s.tokens.erase(s.tokens.begin() + keep_head, s.tokens.end() - keep_tail);
    s.n_truncated += n - static_cast<int32_t>(s.tokens.size());
    s.num_computed = 0;  // positions moved: everything is recomputed
    return true;
}

bool Scheduler::slide(Sequence& s) {
    if (!config_.shift_keys || s.overflow != OverflowPolicy::SinkWindow) return false;
    const auto bs = static_cast<int32_t>(kv_.block_size());
    const auto [keep, drop] = sink_slide(s.max_context, s.sink_tokens, bs);
    const int32_t computed_blocks = s.num_computed / bs;
    if (drop < 1 || keep + drop >= computed_blocks) return false;
    KvShift shift{s.id, {}, {}, drop * bs};
    if (!kv_.slide(s.id, keep, drop, shift.copies)) return false;
    const std::vector<int32_t>& table = kv_.table(s.id);
    s.tokens.erase(s.tokens.begin() + keep * bs, s.tokens.begin() + (keep + drop) * bs);
    s.num_computed -= shift.delta;
    s.n_truncated += shift.delta;
    s.n_cacheable = keep * bs;
    const int32_t last = (s.num_computed + bs - 1) / bs;
    shift.blocks.assign(table.begin() + keep, table.begin() + std::min<int32_t>(last, static_cast<int32_t>(table.size())));
    kv_shifts_.push_back(std::move(shift));
    return true;
}

int32_t Scheduler::chunk(const Sequence& s, int32_t budget) const {
    const int32_t remaining = static_cast<int32_t>(s.tokens.size()) - s.num_computed;
    if (remaining <= budget) return remaining;
    return config_.enable_chunked_prefill ? budget : 0;
}

int32_t Scheduler::reserve_tokens(const Sequence& s) const {
    // The longest the sequence may grow, its context: a server cannot know
    // where the output will end (Orca's "Max" reservation in the vLLM paper).
    return s.max_context;
}

int32_t Scheduler::admission_tokens(const Sequence& s, int32_t first_chunk_end) const {
    // The whole prompt's blocks at once: a prompt admitted on its first
    // chunk alone would take the blocks the running sequences grow into and
    // end in preemption, whose recomputation costs more than waiting.
    const int32_t prompt = std::max(first_chunk_end, static_cast<int32_t>(s.tokens.size()));
    return config_.reserve_full_length ? std::max(prompt, reserve_tokens(s)) : prompt;
}

uint32_t Scheduler::admission_headroom() const {
    // One free block per running sequence (and the new one) for their next
    // tokens, at most a quarter of the pool; none when nothing runs, so a
    // lone request is never kept out.
    if (running_.empty()) return 0;
    return std::min<uint32_t>(static_cast<uint32_t>(running_.size()) + 1, kv_.pool().n_blocks() / 4);
}

void Scheduler::preempt(SeqId id, StepPlan& plan) {
    Sequence& s = seq(id);
    s.running = false;
    ++s.n_preemptions;
    ++num_preemptions_;
    s.drafts.clear();
    running_.erase(std::find(running_.begin(), running_.end(), id));
    plan.preempted.push_back(id);
    if (swap_out(s, plan)) {
        enqueue_swapped(id);
        return;
    }
    kv_.free(id);
    s.num_computed = 0;
    enqueue_waiting(id);
}

bool Scheduler::swap_out(Sequence& s, StepPlan& plan) {
    const uint32_t bs = kv_.block_size();
    const auto used = static_cast<size_t>((s.num_computed + bs - 1) / bs);
    if (used == 0 || used > free_swap_.size()) return false;
    const std::vector<int32_t>& table = kv_.table(s.id);
    std::vector<int32_t>& slots = swap_tables_[s.id];
    for (size_t i = 0; i < used; ++i) {
        slots.push_back(free_swap_.back());
        free_swap_.pop_back();
        plan.swap_out.push_back({table[i], slots.back()});
    }
    // The copies run before anything writes this step: the freed blocks may
    // be handed out again at once. Full blocks stay in the prefix cache.
    kv_.free(s.id);
    s.swapped = true;
    ++s.n_swaps;
    swapped_out_blocks_ += used;
    return true;
}

void Scheduler::release_swap_slots(SeqId id) {
    const auto it = swap_tables_.find(id);
    if (it == swap_tables_.end()) return;
    free_swap_.insert(free_swap_.end(), it->second.rbegin(), it->second.rend());
    swap_tables_.erase(it);
}

SeqId Scheduler::next_to_enter() const {
    if (swapped_.empty()) return waiting_.empty() ? -1 : waiting_.front();
    if (waiting_.empty() || !before(waiting_.front(), swapped_.front())) return swapped_.front();
    return waiting_.front();
}

PrefixHit Scheduler::entry_prefix(const Sequence& s) const {
    // A swapped sequence looks up what it has computed (those blocks need no
    // copy back); a waiting one its whole prompt.
    if (s.swapped) return kv_.find_prefix(std::span<const int32_t>(s.tokens.data(), static_cast<size_t>(s.num_computed)));
    return kv_.find_prefix(s.tokens);
}

uint32_t Scheduler::blocks_to_enter(const Sequence& s) const {
    const PrefixHit hit = entry_prefix(s);
    const int32_t from = s.swapped ? s.num_computed : hit.tokens;
    const int32_t first_chunk = std::min<int32_t>(static_cast<int32_t>(s.tokens.size()),
                                                  from + static_cast<int32_t>(config_.max_num_batched_tokens));
    return kv_.blocks_needed(s.id, s.swapped ? first_chunk : admission_tokens(s, first_chunk), hit);
}

bool Scheduler::try_swap_in(SeqId id, int32_t& budget, StepPlan& plan) {
    Sequence& s = seq(id);
    const int32_t n = chunk(s, budget);
    if (n <= 0) return false;
    const PrefixHit hit = entry_prefix(s);
    const int32_t end = s.num_computed + n;
    const int32_t target = config_.reserve_full_length ? std::max(end, reserve_tokens(s)) : end;
    if (kv_.blocks_needed(id, target, hit) + admission_headroom() > kv_.pool().num_free() ||
        !kv_.allocate(id, target, hit))
        return false;
    const std::vector<int32_t>& table = kv_.table(id);
    const std::vector<int32_t>& slots = swap_tables_.at(id);
    for (size_t i = hit.blocks.size(); i < slots.size(); ++i) plan.swap_in.push_back({slots[i], table[i]});
    swapped_in_blocks_ += slots.size() - hit.blocks.size();
    release_swap_slots(id);
    s.swapped = false;
    s.running = true;
    swapped_.erase(std::find(swapped_.begin(), swapped_.end(), id));
    running_.push_back(id);
    const bool sample = end == static_cast<int32_t>(s.tokens.size());
    plan.sequences.push_back({id, s.num_computed, n, sample});
    (n == 1 && s.n_generated > 0 ? plan.n_decode_tokens : plan.n_prefill_tokens) += n;
    budget -= n;
    return true;
}

int32_t Scheduler::drafts_that_fit(const Sequence& s, int32_t end, int32_t budget) const {
    // Drafts follow the sequence's last token, within the step's token
    // budget, the context and the generation budget (all of them accepted
    // plus the token after them must still fit).
    if (s.drafts.empty() || end != static_cast<int32_t>(s.tokens.size())) return 0;
    const auto n_tokens = static_cast<int32_t>(s.tokens.size());
    const int32_t n = std::min({static_cast<int32_t>(s.drafts.size()), budget, s.max_context - n_tokens - 1,
                                s.max_new_tokens - s.n_generated - 1});
    return std::max(n, 0);
}

bool Scheduler::schedule_running(SeqId id, int32_t& budget, StepPlan& plan) {
    Sequence& s = seq(id);
    const int32_t n = chunk(s, budget);
    if (n <= 0) return true;
    const int32_t end = s.num_computed + n;
    const int32_t reserve = config_.reserve_full_length ? reserve_tokens(s) : 0;
    // The drafts' lookahead slots come with the sequence's blocks when the
    // pool has them free; drafts never preempt anybody.
    int32_t n_draft = drafts_that_fit(s, end, budget - n);
    if (n_draft > 0 && !(kv_.allocate(id, std::max(end + n_draft, reserve)) &&
                         kv_.prepare_write(id, s.num_computed, end + n_draft, plan.copies)))
        n_draft = 0;
    if (n_draft == 0) s.drafts.clear();
    const int32_t target = std::max(end, reserve);
    while (!(kv_.allocate(id, target) && kv_.prepare_write(id, s.num_computed, end + n_draft, plan.copies))) {
        const SeqId victim = running_.back();
        preempt(victim, plan);
        if (victim == id) return false;
    }
    const bool sample = end == static_cast<int32_t>(s.tokens.size());
    plan.sequences.push_back({id, s.num_computed, n + n_draft, sample, n_draft});
    (n == 1 && s.n_generated > 0 ? plan.n_decode_tokens : plan.n_prefill_tokens) += n;
    plan.n_decode_tokens += n_draft;
    plan.n_draft_tokens += n_draft;
    budget -= n + n_draft;
    return true;
}

bool Scheduler::try_admit(SeqId id, int32_t& budget, StepPlan& plan) {
    Sequence& s = seq(id);
    const PrefixHit hit = kv_.find_prefix(s.tokens);
    s.num_computed = hit.tokens;
    s.n_cacheable = INT32_MAX;  // computed afresh from here
    const int32_t n = chunk(s, budget);
    if (n <= 0) {
        s.num_computed = 0;
        return false;
    }
    const int32_t end = hit.tokens + n;
    const int32_t target = admission_tokens(s, end);
    if (kv_.blocks_needed(id, target, hit) + admission_headroom() > kv_.pool().num_free() ||
        !kv_.allocate(id, target, hit)) {
        s.num_computed = 0;
        return false;
    }
    kv_.count_query(static_cast<int32_t>(s.tokens.size()), hit.tokens);
    s.n_prefix_cached = hit.tokens;
    s.running = true;
    waiting_.pop_front();
    running_.push_back(id);
    const bool sample = end == static_cast<int32_t>(s.tokens.size());
    plan.sequences.push_back({id, hit.tokens, n, sample});
    plan.n_prefill_tokens += n;
    budget -= n;
    return true;
}

void Scheduler::set_drafts(SeqId id, std::vector<int32_t> drafts) {
    const auto it = sequences_.find(id);
    if (it != sequences_.end() && it->second.running) it->second.drafts = std::move(drafts);
}

StepPlan Scheduler::schedule() {
    StepPlan plan;
    std::sort(running_.begin(), running_.end(), [this](SeqId a, SeqId b) { return before(a, b); });

    // A waiting or swapped sequence that outranks the lowest running one
    // takes its place when it could not get in otherwise.
    while (!running_.empty() && config_.batching == BatchingMode::Continuous) {
        const SeqId next = next_to_enter();
        if (next < 0 || seq(next).priority >= seq(running_.back()).priority) break;
        if (running_.size() < config_.max_num_seqs &&
            blocks_to_enter(seq(next)) + admission_headroom() <= kv_.pool().num_free())
            break;
        preempt(running_.back(), plan);
    }
    const bool batch_done = running_.empty();

    int32_t budget = static_cast<int32_t>(config_.max_num_batched_tokens);
    const size_t preempted_before = plan.preempted.size();
    for (size_t i = 0; i < running_.size() && budget > 0;)
        if (schedule_running(running_[i], budget, plan)) ++i;

    // vLLM's rule: no admission in a step that had to preempt (it would thrash).
    // Swapped and waiting sequences come back in one priority order; the
    // first that does not fit stops both (no overtaking).
    const bool may_admit = plan.preempted.size() == preempted_before &&
                           (config_.batching == BatchingMode::Continuous || batch_done);
    for (SeqId next; may_admit && (next = next_to_enter()) >= 0 && budget > 0 && running_.size() < config_.max_num_seqs;)
        if (!(seq(next).swapped ? try_swap_in(next, budget, plan) : try_admit(next, budget, plan))) break;
    return plan;
}

void Scheduler::stop_swapping(const StepPlan& plan) {
    swapped_out_blocks_ -= plan.swap_out.size();  // not copied
    // Those swapped in earlier steps are recomputed too: the host memory they are in goes.
    while (!swapped_.empty()) {
        const SeqId id = swapped_.front();
        swapped_.pop_front();
        release_swap_slots(id);
        Sequence& s = seq(id);
        s.swapped = false;
        s.num_computed = 0;
        enqueue_waiting(id);
    }
    config_.swap_blocks = 0;
    free_swap_.clear();
}

std::vector<FinishedSequence> Scheduler::commit(const StepPlan& plan, std::span<const StepResult> results) {
    std::vector<FinishedSequence> ended;
    for (size_t i = 0; i < plan.sequences.size(); ++i) {
        const ScheduledSequence& ss = plan.sequences[i];
        const auto it = sequences_.find(ss.id);
        if (it == sequences_.end()) continue;
        Sequence& s = it->second;
        const StepResult r = i < results.size() ? results[i] : StepResult{};
        // The accepted drafts become tokens; the rest are rolled back (their
        // slots are written again later). Only verified tokens are cached.
        const int32_t n_draft = ss.sample ? std::min<int32_t>(ss.n_draft, static_cast<int32_t>(s.drafts.size())) : 0;
        const int32_t accepted = r.token >= 0 ? std::clamp(r.n_accepted, 0, n_draft) : 0;
        s.tokens.insert(s.tokens.end(), s.drafts.begin(), s.drafts.begin() + accepted);
        s.n_generated += accepted;
        s.drafts.clear();
        s.num_computed = ss.first + ss.count - (ss.n_draft - accepted);
        kv_.cache_blocks(s.id, s.tokens, std::min(s.num_computed, s.n_cacheable));
        if (!ss.sample) continue;
        if (r.token >= 0) {
            s.tokens.push_back(r.token);
            ++s.n_generated;
        }
        if (r.finished) {
            remove(s.id);
        } else if (s.n_generated >= s.max_new_tokens) {
            ended.push_back({s.id, FinishReason::Length, {}});
            remove(s.id);
        } else if (static_cast<int32_t>(s.tokens.size()) >= s.max_context) {
            if (s.overflow == OverflowPolicy::Stop) {
                ended.push_back({s.id, FinishReason::Length, {}});
                remove(s.id);
            } else if (slide(s)) {
                // Still running: its next step continues from the slid window.
            } else {
                // Shortened sequences recompute from the waiting queue, where
                // the prefix cache can give back what they kept at the start.
                kv_.free(s.id);
                shorten(s);
                s.running = false;
                running_.erase(std::find(running_.begin(), running_.end(), s.id));
                enqueue_waiting(s.id);
            }
        }
    }
    return ended;
}

void Scheduler::fork(SeqId parent, SeqId child) {
    Sequence copy = seq(parent);
    copy.id = child;
    copy.swapped = false;
    copy.drafts.clear();
    if (!copy.running) copy.num_computed = 0;  // the parent's swapped K/V is not the child's to share
    sequences_.emplace(child, std::move(copy));
    if (seq(parent).running) {
        kv_.fork(parent, child);
        running_.push_back(child);
    } else {
        enqueue_waiting(child);
    }
}

void Scheduler::finish(SeqId id) {
    const auto it = sequences_.find(id);
    if (it == sequences_.end()) return;
    kv_.cache_blocks(id, it->second.tokens, std::min(it->second.num_computed, it->second.n_cacheable));
    remove(id);
}

bool Scheduler::abort(SeqId id) {
    if (!sequences_.contains(id)) return false;
    remove(id);
    return true;
}

void Scheduler::remove(SeqId id) {
    kv_.free(id);
    release_swap_slots(id);
    if (auto r = std::find(running_.begin(), running_.end(), id); r != running_.end()) running_.erase(r);
    if (auto w = std::find(waiting_.begin(), waiting_.end(), id); w != waiting_.end()) waiting_.erase(w);
    if (auto w = std::find(swapped_.begin(), swapped_.end(), id); w != swapped_.end()) swapped_.erase(w);
    sequences_.erase(id);
}

const Sequence* Scheduler::find(SeqId id) const {
    const auto it = sequences_.find(id);
    return it != sequences_.end() ? &it->second : nullptr;
}

std::string Scheduler::check_invariants() const {
    if (std::string e = kv_.check_invariants(); !e.empty()) return e;
    if (running_.size() + waiting_.size() + swapped_.size() != sequences_.size())
        return "a sequence is lost or listed twice";
    const uint32_t bs = kv_.block_size();
    for (SeqId id : running_) {
        const Sequence& s = sequences_.at(id);
        if (!s.running) return "sequence " + std::to_string(id) + " is in the running list but not marked running";
        if (static_cast<int64_t>(kv_.table(id).size()) * bs < s.num_computed)
            return "sequence " + std::to_string(id) + "'s block table does not cover its computed tokens";
        if (s.num_computed > static_cast<int32_t>(s.tokens.size()) || s.num_computed > s.max_context)
            return "sequence " + std::to_string(id) + " computed more tokens than it has";
    }
    for (SeqId id : waiting_) {
        const Sequence& s = sequences_.at(id);
        if (s.running || s.swapped || kv_.has(id) || !kv_.table(id).empty() || swap_tables_.contains(id))
            return "waiting sequence " + std::to_string(id) + " holds blocks";
    }
    size_t slots_held = 0;
    std::vector<bool> slot_owned(config_.swap_blocks, false);
    for (SeqId id : swapped_) {
        const Sequence& s = sequences_.at(id);
        const auto it = swap_tables_.find(id);
        if (s.running || !s.swapped || kv_.has(id) || !kv_.table(id).empty() || it == swap_tables_.end())
            return "swapped sequence " + std::to_string(id) + " is not held in swap slots alone";
        if (it->second.size() != static_cast<size_t>((s.num_computed + bs - 1) / bs) || s.num_computed == 0)
            return "swapped sequence " + std::to_string(id) + "'s slots do not cover its computed tokens";
        for (int32_t slot : it->second) {
            if (slot < 0 || static_cast<uint32_t>(slot) >= config_.swap_blocks || slot_owned[static_cast<size_t>(slot)])
                return "swap slot " + std::to_string(slot) + " is out of range or held twice";
            slot_owned[static_cast<size_t>(slot)] = true;
        }
        slots_held += it->second.size();
    }
    if (swap_tables_.size() != swapped_.size()) return "swap slots held by a sequence that is not swapped";
    for (int32_t slot : free_swap_) {
        if (slot < 0 || static_cast<uint32_t>(slot) >= config_.swap_blocks || slot_owned[static_cast<size_t>(slot)])
            return "free swap slot " + std::to_string(slot) + " is out of range, held or free twice";
        slot_owned[static_cast<size_t>(slot)] = true;
    }
    if (slots_held + free_swap_.size() != config_.swap_blocks) return "swap slots leaked";
    for (size_t i = 1; i < swapped_.size(); ++i)
        if (before(swapped_[i], swapped_[i - 1])) return "the swapped queue is out of priority order";
    for (const auto& [id, table] : kv_.tables())
        if (!sequences_.contains(id) || !sequences_.at(id).running)
            return "blocks held by " + std::to_string(id) + ", which is not running";
    for (size_t i = 1; i < waiting_.size(); ++i)
        if (before(waiting_[i], waiting_[i - 1])) return "the waiting queue is out of priority order";
    return {};
}

}  // namespace folio
