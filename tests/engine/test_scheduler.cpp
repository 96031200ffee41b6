// The scheduler under random load: thousands of steps with random arrivals,
// prompt and output lengths, priorities, overflow policies and aborts over a
// small pool, in every batching mode. After every step: no block leaked or
// owned twice, reference counts exact, each running sequence's table covers
// its tokens, budgets respected — and a simulated KV cache (each slot holds a
// hash of the token prefix it was computed for) proves that every planned
// step reads exactly its own sequence's past, whether it came from the
// prefix cache, a copy-on-write, a recomputation after preemption or a
// swap to host slots and back (host slots are simulated the same way).
#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "folio/scheduler.h"
#include "folio_test.h"

namespace {

// A slot's simulated content: the hash of the token prefix ending there.
constexpr uint64_t kPrefixHashSeed = 1469598103934665603ULL;
uint64_t extend_hash(uint64_t h, int32_t token) { return (h ^ static_cast<uint32_t>(token)) * 1099511628211ULL; }
// What a slot holds where its K/V no longer follow from the tokens alone (a
// sink window slid over it: Sequence::n_cacheable): never the plain hash, so
// another sequence that found such a block in the prefix cache would read a
// wrong K/V.
uint64_t slid_hash(uint64_t h) { return h * 31 + 7; }
uint64_t expected_kv(const folio::Sequence& s, int32_t i, uint64_t h) { return i < s.n_cacheable ? h : slid_hash(h); }

struct Scenario {
    const char* name;
    folio::SchedulerConfig config;
    uint32_t n_blocks, block_size;
    bool prefix_caching;
    int steps;
    bool swap_space_fails = false;  // the backend cannot take its swap space at the first swap
    bool drafts = false;  // speculative decoding: random drafts, random accept patterns
};

// Draft tokens that will be rejected are ids >= kRejected: they must never
// become a sequence's token nor reach the prefix cache.
constexpr int32_t kRejected = 1000;

// Runs one scenario; an empty string when every check held, else the first
// failure. Adds the blocks swapped back in to *swapped_in_total.
std::string run_scenario(const Scenario& sc, uint64_t seed, uint64_t* swapped_in_total) {
    std::mt19937_64 rng(seed);
    auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    folio::KvCacheManager kv(sc.n_blocks, sc.block_size, sc.prefix_caching, 7);
    const int32_t max_context = static_cast<int32_t>(sc.n_blocks * sc.block_size / 2);
    folio::Scheduler sched(sc.config, kv, max_context);
    std::vector<uint64_t> kv_contents(size_t{sc.n_blocks} * sc.block_size, 0);  // simulated KV contents
    std::vector<uint64_t> swap_contents(size_t{sc.config.swap_blocks} * sc.block_size, 0);  // host swap slots
    uint64_t swapped_out = 0, swapped_in = 0;
    bool swap_stopped = false;
    std::set<folio::SeqId> live;
    folio::SeqId next_id = 1;
    uint64_t added = 0, ended = 0;
    int64_t n_draft_tokens = 0;
    int64_t n_slides = 0;
    const std::vector<int32_t> shared_prefix = [&] {
        std::vector<int32_t> p(40);
        for (auto& t : p) t = uniform(0, 50);
        return p;
    }();

    auto fail = [&](int step, const std::string& what) {
        return std::string(sc.name) + " seed " + std::to_string(seed) + " step " + std::to_string(step) + ": " + what;
    };
    for (int step = 0; step < sc.steps || sched.has_work(); ++step) {
        if (step > sc.steps + 20000) return fail(step, "the scheduler does not drain");
        const bool arrivals = step < sc.steps;
        // About as many arrivals as the pool can serve, with bursts that queue.
        const int roll = uniform(0, 19);
        for (int a = !arrivals ? 0 : roll < 6 ? 1 : roll == 19 ? 4 : 0; a > 0; --a) {
            folio::Sequence s;
            s.id = next_id++;
            const int len = uniform(1, max_context + 8);
            if (uniform(0, 2) == 0) {  // a shared system prompt: prefix-cache hits
                s.tokens.assign(shared_prefix.begin(), shared_prefix.begin() + std::min<int>(len, 40));
                s.keep_tokens = std::min<int>(len, 16);
            }
            while (static_cast<int>(s.tokens.size()) < len) s.tokens.push_back(uniform(0, 50));
            s.max_new_tokens = uniform(1, 40);
            s.priority = uniform(0, 2);
            s.overflow = static_cast<folio::OverflowPolicy>(uniform(0, 3));
            s.sink_tokens = uniform(0, 6);
            if (uniform(0, 3) == 0) s.max_context = uniform(2, max_context);
            const bool too_long = static_cast<int32_t>(s.tokens.size()) >= (s.max_context ? s.max_context : max_context);
            const folio::OverflowPolicy policy = s.overflow;
            folio::Status st = sched.add(s);
            if (!st && !(too_long && policy == folio::OverflowPolicy::Stop) && sc.config.enable_chunked_prefill)
                return fail(step, "add refused: " + st.error().message);
            if (st) {
                live.insert(s.id);
                ++added;
            }
        }
        if (!live.empty() && uniform(0, 9) == 0) {
            auto it = live.begin();
            std::advance(it, uniform(0, static_cast<int>(live.size()) - 1));
            if (!sched.abort(*it)) return fail(step, "abort of a live sequence failed");
            live.erase(it);
            ++ended;
        }

        // Drafts for some running sequences, their fate decided now: the
        // first `accept` of them will be accepted, the rest rejected.
        std::map<folio::SeqId, int32_t> will_accept;
        if (sc.drafts)
            for (folio::SeqId id : sched.running()) {
                if (uniform(0, 3) == 0) continue;
                const int k = uniform(1, 6), accept = uniform(0, k);
                std::vector<int32_t> drafts;
                for (int j = 0; j < k; ++j) drafts.push_back(j < accept ? uniform(0, 50) : kRejected + uniform(0, 50));
                sched.set_drafts(id, drafts);
                will_accept[id] = accept;
            }
        folio::StepPlan plan = sched.schedule();
        if (std::string e = sched.check_invariants(); !e.empty()) return fail(step, "after schedule: " + e);
        if (sc.swap_space_fails && !plan.swap_out.empty()) {
            if (!plan.swap_in.empty() || swapped_out > 0) return fail(step, "swapped before the first swap out");
            sched.stop_swapping(plan);  // as the engine does: nothing was copied, recompute instead
            swap_stopped = true;
            if (std::string e = sched.check_invariants(); !e.empty()) return fail(step, "after stop_swapping: " + e);
            if (sched.num_swapped() != 0 || sched.num_swapped_out_blocks() != 0) return fail(step, "still swapping");
            plan.swap_out.clear();
        }
        // In the backend's order: swap out, swap in, copy-on-write.
        for (const folio::BlockCopy& c : plan.swap_out)
            std::copy_n(kv_contents.begin() + c.src * sc.block_size, sc.block_size, swap_contents.begin() + c.dst * sc.block_size);
        for (const folio::BlockCopy& c : plan.swap_in)
            std::copy_n(swap_contents.begin() + c.src * sc.block_size, sc.block_size, kv_contents.begin() + c.dst * sc.block_size);
        swapped_out += plan.swap_out.size();
        swapped_in += plan.swap_in.size();
        for (const folio::BlockCopy& c : plan.copies)
            std::copy_n(kv_contents.begin() + c.src * sc.block_size, sc.block_size, kv_contents.begin() + c.dst * sc.block_size);
        int32_t total = 0;
        std::set<folio::SeqId> seen;
        for (const folio::ScheduledSequence& ss : plan.sequences) {
            const folio::Sequence* s = sched.find(ss.id);
            if (!s || !s->running) return fail(step, "planned a sequence that is not running");
            if (!seen.insert(ss.id).second) return fail(step, "planned a sequence twice");
            if (ss.count <= 0 || ss.first != s->num_computed) return fail(step, "planned rows do not follow the cache");
            if (ss.first + ss.count - ss.n_draft > static_cast<int32_t>(s->tokens.size()))
                return fail(step, "planned past the sequence's tokens");
            if (ss.n_draft > 0 && (!ss.sample || ss.n_draft > static_cast<int32_t>(s->drafts.size())))
                return fail(step, "planned drafts the sequence does not have, or without verifying them");
            if (ss.n_draft > 0 && s->n_generated + ss.n_draft + 1 > s->max_new_tokens)
                return fail(step, "drafts past the generation budget");
            if (ss.first + ss.count > s->max_context) return fail(step, "planned past the sequence's context");
            const std::vector<int32_t>& table = kv.table(ss.id);
            if (static_cast<int64_t>(table.size()) * sc.block_size < ss.first + ss.count)
                return fail(step, "table does not cover the step");
            uint64_t h = kPrefixHashSeed;
            for (int32_t i = 0; i < ss.first; ++i) {  // what attention will read
                h = extend_hash(h, s->tokens[static_cast<size_t>(i)]);
                const int32_t b = table[static_cast<size_t>(i) / sc.block_size];
                if (kv_contents[static_cast<size_t>(b) * sc.block_size + static_cast<size_t>(i) % sc.block_size] !=
                    expected_kv(*s, i, h))
                    return fail(step, "sequence " + std::to_string(ss.id) + " would read a wrong K/V at token " +
                                          std::to_string(i));
            }
            const auto n_tokens = static_cast<int32_t>(s->tokens.size());
            for (int32_t i = ss.first; i < ss.first + ss.count; ++i) {
                h = extend_hash(h, i < n_tokens ? s->tokens[static_cast<size_t>(i)]
                                                : s->drafts[static_cast<size_t>(i - n_tokens)]);
                const int32_t b = table[static_cast<size_t>(i) / sc.block_size];
                if (kv.pool().block(b).ref_count != 1) return fail(step, "writing into a shared block");
                kv_contents[static_cast<size_t>(b) * sc.block_size + static_cast<size_t>(i) % sc.block_size] =
                    expected_kv(*s, i, h);
            }
            total += ss.count;
        }
        if (total > static_cast<int32_t>(sc.config.max_num_batched_tokens)) return fail(step, "token budget exceeded");
        if (sched.num_running() > sc.config.max_num_seqs) return fail(step, "sequence budget exceeded");

        std::vector<folio::StepResult> results(plan.sequences.size());
        for (size_t i = 0; i < results.size(); ++i)
            if (plan.sequences[i].sample) {
                results[i].token = uniform(0, 50);
                results[i].n_accepted = std::min(will_accept[plan.sequences[i].id], plan.sequences[i].n_draft);
                results[i].finished = uniform(0, 30) == 0;
                if (results[i].finished) {
                    live.erase(plan.sequences[i].id);
                    ++ended;
                }
            }
        for (const folio::FinishedSequence& f : sched.commit(plan, results)) {
            if (!live.erase(f.id)) return fail(step, "ended an unknown sequence");
            ++ended;
        }
        if (std::string e = sched.check_invariants(); !e.empty()) return fail(step, "after commit: " + e);
        // Sink windows that slid: the copies, then the shift, which (as a
        // backend's re-rotation does) makes each kept key that of its new place.
        for (const folio::KvShift& shift : sched.take_kv_shifts()) {
            if (!sc.config.shift_keys) return fail(step, "a window slid without a backend that shifts keys");
            const folio::Sequence* s = sched.find(shift.id);
            if (!s || !s->running || shift.delta <= 0) return fail(step, "a shift for no running sequence");
            for (const folio::BlockCopy& c : shift.copies)
                std::copy_n(kv_contents.begin() + c.src * sc.block_size, sc.block_size, kv_contents.begin() + c.dst * sc.block_size);
            const std::vector<int32_t>& table = kv.table(shift.id);
            const auto first = std::find(table.begin(), table.end(), shift.blocks.empty() ? -1 : shift.blocks.front());
            if (shift.blocks.empty() || !std::equal(shift.blocks.begin(), shift.blocks.end(), first))
                return fail(step, "the shifted blocks are not the table's after the sinks");
            const auto b0 = static_cast<int32_t>(first - table.begin());
            if (b0 * static_cast<int32_t>(sc.block_size) != s->n_cacheable)
                return fail(step, "the sinks are not the cacheable start");
            uint64_t h = kPrefixHashSeed;
            for (int32_t i = 0; i < s->num_computed; ++i) {
                h = extend_hash(h, s->tokens[static_cast<size_t>(i)]);
                if (i < s->n_cacheable) continue;
                const int32_t b = table[static_cast<size_t>(i) / sc.block_size];
                if (kv.pool().block(b).ref_count != 1 || kv.pool().block(b).cached)
                    return fail(step, "shifting a shared or cached block");
                kv_contents[static_cast<size_t>(b) * sc.block_size + static_cast<size_t>(i) % sc.block_size] = slid_hash(h);
            }
            ++n_slides;
        }
        for (const folio::ScheduledSequence& ss : plan.sequences)
            if (const folio::Sequence* s = sched.find(ss.id)) {
                if (std::any_of(s->tokens.begin(), s->tokens.end(), [](int32_t t) { return t >= kRejected; }))
                    return fail(step, "a rejected draft became a token");
                if (!s->drafts.empty()) return fail(step, "drafts left after commit");
            }
        for (uint32_t b = 0; b < sc.n_blocks; ++b) {
            if (!kv.pool().block(static_cast<int32_t>(b)).cached) continue;
            const auto cached = kv.pool().cached_tokens(static_cast<int32_t>(b));
            if (std::any_of(cached.begin(), cached.end(), [](int32_t t) { return t >= kRejected; }))
                return fail(step, "block " + std::to_string(b) + " cached an unverified draft");
        }
        n_draft_tokens += plan.n_draft_tokens;
    }
    if (sc.drafts && n_draft_tokens == 0) return fail(-1, "no drafts were ever verified");
    if (sc.config.shift_keys && n_slides == 0) return fail(-1, "no sink window ever slid");
    if (ended != added) return fail(-1, std::to_string(added) + " added but " + std::to_string(ended) + " ended");
    if (kv.pool().num_free() != sc.n_blocks) return fail(-1, "blocks leaked at the end");
    if (sched.num_free_swap_blocks() != (sc.swap_space_fails ? 0 : sc.config.swap_blocks))
        return fail(-1, "swap slots leaked at the end");
    if (sc.swap_space_fails && swapped_out > 0) return fail(-1, "swapped after the swap space failed");
    if (sc.swap_space_fails && sched.num_preemptions() > 0 && !swap_stopped) return fail(-1, "the failing swap never came");
    if (sc.config.swap_blocks > 0 && !sc.swap_space_fails && sched.num_preemptions() > 0 && swapped_out == 0)
        return fail(-1, std::to_string(sched.num_preemptions()) + " preemptions but nothing was swapped");
    *swapped_in_total += swapped_in;
    if (sched.num_swapped_out_blocks() != swapped_out || sched.num_swapped_in_blocks() != swapped_in)
        return fail(-1, "the swap counters disagree with the plans");
    if (!kv.tables().empty()) return fail(-1, "tables left at the end");
    return {};
}

}  // namespace

class SchedulerTest : public QObject {
    Q_OBJECT
private slots:
    void randomLoadKeepsEveryInvariant() {
        folio::SchedulerConfig continuous;
        continuous.max_num_seqs = 8;
        continuous.max_num_batched_tokens = 32;
        folio::SchedulerConfig unchunked = continuous;
        unchunked.enable_chunked_prefill = false;
        unchunked.max_num_batched_tokens = 64;
        folio::SchedulerConfig statik = continuous;
        statik.batching = folio::BatchingMode::Static;
        folio::SchedulerConfig reserve = continuous;
        reserve.reserve_full_length = true;
        folio::SchedulerConfig swap = continuous;
        swap.swap_blocks = 16;  // room for some preempted sequences, not all: swap and recompute mix
        folio::SchedulerConfig swap_reserve = reserve;
        swap_reserve.swap_blocks = 64;
        folio::SchedulerConfig shift = continuous;  // sink windows slide in place
        shift.shift_keys = true;
        folio::SchedulerConfig shift_swap = swap;
        shift_swap.shift_keys = true;
        const Scenario scenarios[] = {
            {"continuous+prefix", continuous, 24, 4, true, 3000},
            {"continuous", continuous, 24, 4, false, 3000},
            {"tiny pool", continuous, 6, 4, true, 3000},
            {"unchunked", unchunked, 40, 4, true, 2000},
            {"static", statik, 24, 4, true, 2000},
            {"reserve", reserve, 24, 4, true, 2000},
            {"block 1", continuous, 48, 1, true, 2000},
            {"swap+prefix", swap, 24, 4, true, 3000},
            {"swap", swap, 24, 4, false, 3000},
            {"swap, tiny pool", swap, 6, 4, true, 3000},
            {"swap, reserve", swap_reserve, 24, 4, true, 2000},
            {"swap space that cannot be pinned", swap, 24, 4, true, 2000, true},
            {"drafts+prefix", continuous, 24, 4, true, 3000, false, true},
            {"drafts, tiny pool", continuous, 6, 4, true, 3000, false, true},
            {"drafts, swap", swap, 24, 4, true, 3000, false, true},
            {"drafts, reserve", reserve, 24, 4, true, 2000, false, true},
            {"drafts, block 1", continuous, 48, 1, true, 2000, false, true},
            {"drafts, unchunked", unchunked, 40, 4, true, 2000, false, true},
            {"sink windows+prefix", shift, 24, 4, true, 3000},
            {"sink windows, block 1", shift, 48, 1, true, 2000},
            {"sink windows, swap", shift_swap, 24, 4, true, 3000},
            {"sink windows, drafts", shift, 24, 4, true, 3000, false, true},
        };
        for (const Scenario& sc : scenarios) {
            uint64_t swapped_in = 0;
            for (uint64_t seed = 1; seed <= 4; ++seed) {
                const std::string e = run_scenario(sc, seed, &swapped_in);
                QVERIFY2(e.empty(), e.c_str());
            }
            if (sc.config.swap_blocks > 0 && !sc.swap_space_fails) {
                std::printf("%s: %llu blocks swapped back in\n", sc.name, static_cast<unsigned long long>(swapped_in));
                QVERIFY2(swapped_in > 0, sc.name);
            }
        }
    }

    void priorityOrdersAdmissionAndPreemption() {
        folio::KvCacheManager kv(4, 4, false, 1);
        folio::SchedulerConfig config;
        config.max_num_seqs = 1;
        folio::Scheduler sched(config, kv, 16);
        folio::Sequence background;
        background.id = 1;
        background.priority = 5;
        background.tokens = {1, 2, 3};
        QVERIFY(sched.add(background));
        folio::StepPlan plan = sched.schedule();
        QCOMPARE(plan.sequences.size(), size_t{1});
        std::vector<folio::StepResult> results(1);
        results[0].token = 4;
        sched.commit(plan, results);
        folio::Sequence chat;
        chat.id = 2;
        chat.priority = 0;
        chat.tokens = {9, 9};
        QVERIFY(sched.add(chat));
        plan = sched.schedule();  // the chat outranks the running background sequence
        QCOMPARE(plan.preempted, (std::vector<folio::SeqId>{1}));
        QCOMPARE(plan.sequences.size(), size_t{1});
        QCOMPARE(plan.sequences[0].id, folio::SeqId{2});
        QCOMPARE(sched.find(1)->num_computed, 0);
        QCOMPARE(sched.find(1)->tokens.size(), size_t{4});  // keeps its generated token for recomputation
    }

    void overLongPromptIsAnErrorUnderStopAndTruncatedOtherwise() {
        folio::KvCacheManager kv(8, 4, false, 1);
        folio::Scheduler sched(folio::SchedulerConfig{}, kv, 16);
        folio::Sequence s;
        s.id = 1;
        s.tokens.assign(20, 5);
        folio::Status st = sched.add(s);
        QVERIFY(!st);
        QVERIFY2(st.error().message.find("context holds 16") != std::string::npos, st.error().message.c_str());
        s.overflow = folio::OverflowPolicy::TruncateMiddle;
        s.keep_tokens = 4;
        for (int i = 0; i < 20; ++i) s.tokens[static_cast<size_t>(i)] = i;
        QVERIFY(sched.add(s));
        const folio::Sequence* q = sched.find(1);
        QCOMPARE(q->tokens.size(), size_t{4 + 6});
        QCOMPARE(q->tokens[3], 3);   // the kept start
        QCOMPARE(q->tokens[4], 14);  // then the latest tokens
        QCOMPARE(q->n_truncated, 10);
        folio::Sequence e;
        e.id = 2;
        QVERIFY(!sched.add(e));  // empty prompt
    }
};

FOLIO_TEST_MAIN(SchedulerTest)
#include "test_scheduler.moc"
