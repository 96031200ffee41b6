// One engine step, in the order docs/architecture.md draws it: plan (the
// scheduler), build the batch, forward + choose (the one token-choice
// pipeline, runtime/token_choice.h), commit, publish.
#include <algorithm>
#include <cstdio>

#include "folio/engine.h"
#include "runtime/engine_request.h"
#include "runtime/token_choice.h"

namespace folio {

// What a step's forward pass chose: one draw per sampling row (forks of
// n > 1 appended), and per planned sequence which draws are its own.
struct Engine::StepTokens {
    std::vector<TokenDraw> draws;
    std::vector<int32_t> tokens;      // per draw
    std::vector<int32_t> first_draw;  // per planned sequence; -1: it samples nothing this step
    // A speculating sequence's K + 1 rows each draw over its history
    // extended by the drafts before the row (the penalties see them), each
    // with its own SampleInfo.
    std::vector<std::vector<int32_t>> histories;
    std::vector<SampleInfo> infos;
    // A sequence whose drafts were sampled (full q): each of its rows' processed distributions p.
    std::vector<float> p_rows;
    std::vector<size_t> p_first;  // per planned sequence: its first row's offset in p_rows; npos: one-hot
    double forward_s = 0;             // in the backend's forward
    double sampled_s = 0;             // when the tokens were there
};

void Engine::step() {
    const double t0 = now_s();
    propose_drafts();
    StepPlan plan = scheduler_.schedule();
    if (plan.empty()) {
        reject_unschedulable();
        publish_step(plan, now_s() - t0);
        return;
    }
    note_scheduled(plan);
    build_batch(plan);
    StepTokens tokens;
    if (forward_and_choose(plan, tokens)) commit_step(plan, tokens);
    publish_step(plan, now_s() - t0, tokens.forward_s);
}

void Engine::reject_unschedulable() {
    // Nothing can run: the first waiting request needs more KV blocks than
    // the whole cache has. It cannot ever run; say so.
    if (scheduler_.num_running() != 0 || scheduler_.num_waiting() == 0) return;
    const RequestId id = scheduler_.waiting().front();
    scheduler_.abort(id);
    finish(*requests_.at(id), FinishReason::Error,
           "the request needs more KV cache blocks than the engine has (" + std::to_string(backend_.n_blocks()) +
               " of " + std::to_string(backend_.block_size()) +
               " tokens); raise the KV budget or shorten the prompt");
}

void Engine::note_scheduled(const StepPlan& plan) {
    for (const ScheduledSequence& ss : plan.sequences) {
        Request& r = *requests_.at(ss.id);
        r.timings.truncated_tokens = scheduler_.find(ss.id)->n_truncated;
        if (r.scheduled_s >= 0) continue;
        r.scheduled_s = now_s();
        r.timings.queue_s = r.scheduled_s - r.submitted_s;
        r.timings.cached_prompt_tokens = scheduler_.find(ss.id)->n_prefix_cached;
    }
}

void Engine::build_batch(const StepPlan& plan) {
    batch_.clear();
    const int32_t bs = static_cast<int32_t>(kv_.block_size());
    for (const ScheduledSequence& ss : plan.sequences) {
        const Sequence& s = *scheduler_.find(ss.id);
        const std::vector<int32_t>& table = kv_.table(ss.id);
        const auto query_start = batch_.n_tokens();
        const auto n_tokens = static_cast<int32_t>(s.tokens.size());
        for (int32_t i = ss.first; i < ss.first + ss.count; ++i) {
            // Past the sequence's tokens: its drafts, to verify.
            batch_.token_ids.push_back(i < n_tokens ? s.tokens[static_cast<size_t>(i)]
                                                    : s.drafts[static_cast<size_t>(i - n_tokens)]);
            batch_.positions.push_back(i);
            batch_.slot_mapping.push_back(int64_t{table[static_cast<size_t>(i / bs)]} * bs + i % bs);
        }
        batch_.sequences.push_back(BatchSequence{query_start, ss.count, ss.first + ss.count, table});
        if (ss.sample)
            for (int32_t j = ss.n_draft; j >= 0; --j) batch_.logits_rows.push_back(batch_.n_tokens() - 1 - j);
    }
}

int32_t Engine::draft_length(Request& r, int32_t other_rows) {
    // The request's own fixed K; else adaptive K: what pays at this
    // request's acceptance and this step's cost, at 0 a one-token probe now
    // and then; else the engine's fixed K.
    SpecRoute& route = *r.spec;
    if (r.params.spec_draft_max > 0) return r.params.spec_draft_max;
    if (!route.config.adaptive) return route.config.draft_max;
    const bool was_paused = r.acceptance.paused;
    const int32_t k = route.tuner.plan(r.acceptance, other_rows);
    if (r.acceptance.paused && !was_paused) route.proposer->forget(r.id);  // its draft KV goes back
    return k;
}

void Engine::propose_drafts() {
    // Every running sequence that speculates, decodes next (its tokens all
    // computed but the last) and has had its first token gets drafts for
    // this step, from its route's proposer; the scheduler fits what it can
    // beside the step's other rows.
    const double t0 = now_s();
    const std::vector<SpecRoute*>& routes = spec_routes_;
    if (routes.empty()) return;
    std::vector<std::vector<SeqId>> ids(routes.size());
    std::vector<std::vector<DraftRequest>> asks(routes.size());
    const auto others = static_cast<int32_t>(scheduler_.num_running()) - 1;
    for (SeqId id : scheduler_.running()) {
        const Sequence& s = *scheduler_.find(id);
        const auto it = requests_.find(id);
        if (it == requests_.end() || !it->second->spec || it->second->first_token_s < 0) continue;
        if (s.num_computed + 1 != static_cast<int32_t>(s.tokens.size())) continue;
        const int32_t room = std::min(s.max_new_tokens - s.n_generated, s.max_context - static_cast<int32_t>(s.tokens.size())) - 1;
        if (room <= 0) continue;
        Request& r = *it->second;
        const int32_t k = draft_length(r, others);
        if (k == 0) {
            scheduler_.set_drafts(id, {});
            continue;
        }
        const size_t route = static_cast<size_t>(std::find(routes.begin(), routes.end(), r.spec) - routes.begin());
        // Sampled drafts where the request samples (and wants no logprobs:
        // those of a full-q verdict's tokens are not the rows' own draws) and
        // the target's logits rows are on the host anyway (the CPU); greedy
        // drafts otherwise. A GPU would hand every speculating row whole to
        // the host for its p (and the draft its rows for q): measured on the
        // H200, 1B shape, 16 sampled requests at K = 4, 162 tok/s where its
        // device draws make 10,000.
        r.draft_q.clear();
        const bool sampled = r.params.sampling.temperature > 0.0f && r.params.sampling.n_logprobs == 0 &&
                             !backend_.can_argmax() && !backend_.can_draw();
        ids[route].push_back(id);
        asks[route].push_back({id, s.tokens, std::min(room, k), sampled ? &r.params.sampling : nullptr,
                               sampled ? &r.draft_q : nullptr});
    }
    bool drafted = false;
    for (size_t p = 0; p < routes.size(); ++p) {
        if (ids[p].empty()) continue;
        SpecRoute& route = *routes[p];
        std::vector<std::vector<int32_t>> drafts;
        route.proposer->propose(asks[p], drafts);
        for (size_t i = 0; i < ids[p].size(); ++i) {
            if (static_cast<int32_t>(drafts[i].size()) < std::max(1, route.config.draft_min)) {
                drafts[i].clear();
                requests_.at(ids[p][i])->draft_q.clear();
            }
            scheduler_.set_drafts(ids[p][i], std::move(drafts[i]));
        }
        for (const DraftPass& pass : route.proposer->passes()) route.tuner.observe_draft_pass(pass.rows, pass.seconds);
        drafted = true;
    }
    if (drafted) spec_step_.draft_s += now_s() - t0;
}

void Engine::prefill_drafts(const StepPlan& plan) {
    // The prompts whose last chunk this step computed: a draft model reads
    // them now, in the step that gives their first token (its time part of
    // the time to first token, as the target's prefill is), so that its
    // first proposal reads one token, not the whole prompt. Not where
    // adaptive K already says the request will not draft.
    const double t0 = now_s();
    if (!spec_.proposer) return;  // prompt lookup reads nothing ahead
    std::vector<DraftRequest> asks;
    const auto others = static_cast<int32_t>(scheduler_.num_running()) - 1;
    for (const ScheduledSequence& ss : plan.sequences) {
        if (!ss.sample || ss.n_draft > 0) continue;
        const Request& r = *requests_.at(ss.id);
        if (r.spec != &spec_) continue;
        const Sequence& s = *scheduler_.find(ss.id);
        if (r.first_token_s >= 0 || r.index != 0 || s.max_new_tokens <= 1) continue;
        if (r.params.spec_draft_max == 0 && spec_.config.adaptive && spec_.tuner.choose(r.acceptance, others) == 0)
            continue;
        asks.push_back({ss.id, s.tokens, 0, nullptr, nullptr});
    }
    if (asks.empty()) return;
    spec_.proposer->prefill(asks);
    // Its passes are not fitted: adaptive K weighs what drafting costs while
    // decoding (a prompt-sized pass, alone, would read as the fixed cost of
    // every draft token, and nothing would ever draft again).
    spec_step_.draft_s += now_s() - t0;
}

bool Engine::forward_and_choose(StepPlan& plan, StepTokens& t) {
    // The draws the rows will make, and the form the backend hands them in.
    t.first_draw.assign(plan.sequences.size(), -1);
    // Speculating sequences: their histories and rows' infos, and for
    // sampled drafts (their q kept) room for the rows' p.
    const auto n_vocab = static_cast<size_t>(backend_.n_vocab());
    t.p_first.assign(plan.sequences.size(), std::string::npos);
    size_t n_speculating = 0, n_spec_rows = 0, n_p = 0;
    for (size_t i = 0; i < plan.sequences.size(); ++i) {
        const ScheduledSequence& ss = plan.sequences[i];
        if (!ss.sample || ss.n_draft == 0) continue;
        const size_t rows = static_cast<size_t>(ss.n_draft) + 1;
        ++n_speculating, n_spec_rows += rows;
        if (requests_.at(ss.id)->draft_q.size() < (rows - 1) * n_vocab) continue;
        t.p_first[i] = n_p;
        n_p += rows * n_vocab;
    }
    t.histories.reserve(n_speculating);  // the draws point into them
    t.infos.reserve(n_spec_rows);
    t.p_rows.resize(n_p);
    for (size_t i = 0; i < plan.sequences.size(); ++i) {
        const ScheduledSequence& ss = plan.sequences[i];
        if (!ss.sample) continue;
        Request& r = *requests_.at(ss.id);
        t.first_draw[i] = static_cast<int32_t>(t.draws.size());
        if (ss.n_draft == 0) {
            const bool forks = r.params.n > 1 && r.first_token_s < 0;  // several draws from this row
            t.draws.push_back({t.draws.size(), &r.sampler, r.history, &r.info, forks});
            continue;
        }
        const std::vector<int32_t>& drafts = scheduler_.find(ss.id)->drafts;
        std::vector<int32_t>& h = t.histories.emplace_back(r.history);
        h.insert(h.end(), drafts.begin(), drafts.begin() + ss.n_draft);
        for (int32_t j = 0; j <= ss.n_draft; ++j) {
            SampleInfo* info = &t.infos.emplace_back();
            t.draws.push_back({t.draws.size(), &r.sampler, std::span<const int32_t>(h).first(r.history.size() + j), info});
            if (t.p_first[i] != std::string::npos)
                t.draws.back().distribution =
                    std::span<float>(t.p_rows).subspan(t.p_first[i] + static_cast<size_t>(j) * n_vocab, n_vocab);
        }
    }
    const ChoicePlan choice = chooser_->plan(t.draws, batch_.logits_rows.size());

    // Swaps first: blocks swapped out this step may be written again below.
    Status status = backend_.swap_blocks(plan.swap_out, plan.swap_in);
    if (!status && backend_.n_swap_blocks() == 0 && plan.swap_in.empty()) {
        // The swap space could not be taken (nothing was copied): recompute.
        std::fprintf(stderr, "folio: %s\n", status.error().message.c_str());
        scheduler_.stop_swapping(plan);
        status = {};
    }
    if (status) status = backend_.copy_blocks(plan.copies);
    const double t_forward = now_s();
    if (status) status = chooser_->forward(batch_, choice, t.draws);
    t.forward_s = now_s() - t_forward;
    if (status)
        for (SpecRoute* route : spec_routes_) route->tuner.observe_step(batch_.n_tokens(), t.forward_s);
    if (!status) {
        // What was swapped out this step may not have reached the host.
        for (SeqId id : plan.preempted)
            if (const Sequence* s = scheduler_.find(id); s && s->swapped) {
                scheduler_.abort(id);
                finish(*requests_.at(id), FinishReason::Error,
                       "swapping its KV cache out failed: " + status.error().message);
            }
        for (const ScheduledSequence& ss : plan.sequences) {
            scheduler_.abort(ss.id);
            finish(*requests_.at(ss.id), FinishReason::Error, "forward pass failed: " + status.error().message);
        }
        return false;
    }

    // A request for n > 1 samples forks here, at its first token: the copies
    // share every KV block (copy-on-write) and draw from the same row.
    const size_t n_planned = plan.sequences.size();
    for (size_t i = 0; i < n_planned; ++i) {
        if (t.first_draw[i] < 0) continue;
        Request& r = *requests_.at(plan.sequences[i].id);
        if (r.first_token_s >= 0 || r.index != 0) continue;
        for (int32_t k = 1; k < r.params.n; ++k) {
            const RequestId child = fork(r, k);
            Request& c = *requests_.at(child);
            plan.sequences.push_back(plan.sequences[i]);
            plan.sequences.back().id = child;
            t.first_draw.push_back(static_cast<int32_t>(t.draws.size()));
            t.draws.push_back({t.draws[static_cast<size_t>(t.first_draw[i])].row, &c.sampler, c.history, &c.info});
        }
    }
    t.tokens.assign(t.draws.size(), 0);
    chooser_->choose(choice, t.draws, t.tokens);
    prefill_drafts(plan);
    t.sampled_s = now_s();
    return true;
}

Verdict Engine::verify_sampled(Request& r, std::span<const int32_t> drafts, std::span<const float> p) {
    // The full-q rule over the K + 1 rows' processed distributions and the
    // distributions the draft sampled its K drafts from.
    const auto n_vocab = static_cast<size_t>(backend_.n_vocab());
    std::vector<std::span<const float>> p_rows, q_rows;
    for (size_t j = 0; j <= drafts.size(); ++j) p_rows.push_back(p.subspan(j * n_vocab, n_vocab));
    for (size_t j = 0; j < drafts.size(); ++j) q_rows.push_back(std::span<const float>(r.draft_q).subspan(j * n_vocab, n_vocab));
    return verify_full_q(p_rows, q_rows, drafts, r.sampler);
}

void Engine::count_verdict(Request& r, int32_t n_draft, int32_t n_accepted) {
    DraftLengthTuner::observe_verdict(r.acceptance, n_draft, n_accepted);
    ++r.timings.n_drafts;
    r.timings.draft_tokens += n_draft;
    r.timings.accepted_tokens += n_accepted;
    SpecStep& st = spec_step_;
    ++st.sequences;
    st.draft_tokens += n_draft;
    st.accepted_tokens += n_accepted;
    st.draft_k = std::max(st.draft_k, n_draft);
    if (st.accepted_per_position.size() < static_cast<size_t>(n_draft))
        st.accepted_per_position.resize(static_cast<size_t>(n_draft), 0);
    for (int32_t k = 0; k < n_accepted; ++k) ++st.accepted_per_position[static_cast<size_t>(k)];
    std::lock_guard lock(mutex_);
    EngineMetrics& m = metrics_;
    ++m.spec_decode_num_drafts_total;
    m.spec_decode_num_draft_tokens_total += static_cast<uint64_t>(n_draft);
    m.spec_decode_num_accepted_tokens_total += static_cast<uint64_t>(n_accepted);
    if (m.spec_decode_num_accepted_tokens_per_pos.size() < static_cast<size_t>(n_draft))
        m.spec_decode_num_accepted_tokens_per_pos.resize(static_cast<size_t>(n_draft), 0);
    for (int32_t k = 0; k < n_accepted; ++k) ++m.spec_decode_num_accepted_tokens_per_pos[static_cast<size_t>(k)];
}

void Engine::commit_step(const StepPlan& plan, const StepTokens& t) {
    // Detokenize, check stops; then let the scheduler move on.
    const size_t n = plan.sequences.size();
    std::vector<StepResult> results(n);
    std::vector<RequestOutput> outputs(n);
    std::vector<FinishReason> reasons(n, FinishReason::Length);
    size_t n_sampled = 0;
    std::vector<int32_t> emitted;
    for (size_t i = 0; i < n; ++i) {
        if (t.first_draw[i] < 0) continue;
        const ScheduledSequence& ss = plan.sequences[i];
        Request& r = *requests_.at(ss.id);
        const auto first = static_cast<size_t>(t.first_draw[i]);
        // The verdict on the drafts (one-hot: each row's token against the
        // draft it follows); without drafts, the row's token.
        const std::span<const int32_t> drafts =
            ss.n_draft > 0 ? std::span<const int32_t>(scheduler_.find(ss.id)->drafts).first(static_cast<size_t>(ss.n_draft))
                           : std::span<const int32_t>{};
        const bool full_q = i < t.p_first.size() && t.p_first[i] != std::string::npos;  // forks come after
        const Verdict verdict = !full_q
                                    ? verify_one_hot(drafts, std::span<const int32_t>(t.tokens).subspan(first, drafts.size() + 1))
                                    : verify_sampled(r, drafts, std::span<const float>(t.p_rows).subspan(t.p_first[i]));
        emitted.assign(drafts.begin(), drafts.begin() + verdict.n_accepted);
        emitted.push_back(verdict.token);
        if (!drafts.empty()) count_verdict(r, static_cast<int32_t>(drafts.size()), verdict.n_accepted);
        RequestOutput& out = outputs[i];
        out.id = r.public_id;
        out.index = r.index;
        if (r.first_token_s < 0) {
            r.first_token_s = t.sampled_s;
            r.timings.ttft_s = t.sampled_s - r.submitted_s;
        } else {
            std::lock_guard lock(mutex_);
            metrics_.inter_token_latency_seconds.observe(t.sampled_s - r.last_token_s);
        }
        r.last_token_s = t.sampled_s;
        results[i] = {emitted.back(), verdict.n_accepted, false};
        for (size_t e = 0; e < emitted.size(); ++e) {
            const int32_t token = emitted[e];
            ++n_sampled;
            ++r.timings.generated_tokens;
            if (r.stop.is_stop_token(token)) {
                results[i] = {token, static_cast<int32_t>(e), true};
                reasons[i] = FinishReason::Stop;
                break;
            }
            r.history.push_back(token);
            out.token_ids.push_back(token);
            const bool drafted = e < static_cast<size_t>(verdict.n_accepted);
            out.draft_accepted.push_back(drafted);
            if (r.params.sampling.n_logprobs > 0) out.logprobs.push_back(*t.draws[first + e].info);
            StopUpdate update = r.stop.push(r.decoder.push(token));
            if (drafted && !update.text.empty()) {
                const auto begin = static_cast<uint32_t>(out.text.size());
                const auto end = begin + static_cast<uint32_t>(update.text.size());
                if (!out.draft_text.empty() && out.draft_text.back().second == begin)
                    out.draft_text.back().second = end;
                else
                    out.draft_text.emplace_back(begin, end);
            }
            out.text += update.text;
            if (update.stopped) {
                results[i] = {token, static_cast<int32_t>(e), true};
                reasons[i] = FinishReason::StopString;
                break;
            }
        }
    }
    const std::vector<FinishedSequence> ended = scheduler_.commit(plan, results);
    // Sink windows that slid in place have their kept keys turned back before their next step.
    for (const KvShift& shift : scheduler_.take_kv_shifts()) {
        Status st = backend_.copy_blocks(shift.copies);
        if (st) st = backend_.shift_keys(shift.blocks, shift.delta);
        if (st) continue;
        scheduler_.abort(shift.id);
        finish(*requests_.at(shift.id), FinishReason::Error, "sliding its attention-sink window failed: " + st.error().message);
    }
    {
        std::lock_guard lock(mutex_);
        metrics_.prompt_tokens_total += static_cast<uint64_t>(plan.n_prefill_tokens);
        metrics_.generation_tokens_total += static_cast<uint64_t>(n_sampled);
        metrics_.sampled_whole_rows_total += static_cast<uint64_t>(chooser_->n_whole_rows());
        metrics_.sampled_device_top_p_total += static_cast<uint64_t>(chooser_->n_device_top_p());
    }
    for (size_t i = 0; i < n; ++i) {
        if (!plan.sequences[i].sample) continue;
        Request& r = *requests_.at(plan.sequences[i].id);
        if (results[i].finished) {
            finish(r, reasons[i], {}, &outputs[i]);
        } else if (!outputs[i].text.empty() || !outputs[i].token_ids.empty()) {
            r.timings.e2e_s = t.sampled_s - r.submitted_s;  // so far: decode rates are exact while streaming
            outputs[i].timings = r.timings;
            if (r.on_output) r.on_output(outputs[i]);
        }
    }
    for (const FinishedSequence& f : ended) finish(*requests_.at(f.id), f.reason, f.message);
}

}  // namespace folio
