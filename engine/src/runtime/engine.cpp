#include "folio/engine.h"

#include "cpu/thread_pool.h"

#include <algorithm>
#include <cstdio>

namespace folio {

// A request's state on the engine thread: its sampler, detokenizer and stop
// conditions, what it has streamed, and its clock readings.
struct Engine::Request {
    RequestId id = -1;         // the scheduler's sequence id
    RequestId public_id = -1;  // what submit() returned; shared by the n samples of a request
    int32_t index = 0;         // which of the n samples
    GenerationRequest params;
    OutputCallback on_output;
    Sampler sampler;
    StreamingDecoder decoder;
    StopChecker stop;
    std::vector<int32_t> history;  // prompt and generated tokens, for the penalties
    SampleInfo info;
    RequestTimings timings;
    std::string rejected;  // why submit() could not accept it (reported from the engine thread)
    double submitted_s = 0, scheduled_s = -1, first_token_s = -1, last_token_s = -1;

    Request(RequestId rid, GenerationRequest p, OutputCallback cb, Sampler s, const Tokenizer& tok)
        : id(rid),
          public_id(rid),
          params(std::move(p)),
          on_output(std::move(cb)),
          sampler(std::move(s)),
          decoder(tok, /*skip_control=*/true) {}
};

namespace {

// The scheduler swaps preempted sequences to the backend's host slots, if it has any.
SchedulerConfig with_swap_space(SchedulerConfig config, const Backend& backend) {
    config.swap_blocks = backend.n_swap_blocks();
    return config;
}

}  // namespace

double RequestTimings::prefill_tokens_per_s() const {
    const double t = ttft_s - queue_s;
    return t > 0 ? (prompt_tokens - cached_prompt_tokens) / t : 0.0;
}

double RequestTimings::decode_tokens_per_s() const {
    const double t = e2e_s - ttft_s;
    return t > 0 && generated_tokens > 1 ? (generated_tokens - 1) / t : 0.0;
}

Engine::Engine(const ModelDescription& model, const Tokenizer& tokenizer, Backend& backend, const EngineConfig& config)
    : model_(model),
      tokenizer_(tokenizer),
      backend_(backend),
      config_(config),
      kv_(backend.n_blocks(), backend.block_size(), config.enable_prefix_caching,
          std::hash<std::string>{}(model.name + "/" + model.hparams.architecture)),
      scheduler_(with_swap_space(config.scheduler, backend), kv_, static_cast<int32_t>(backend.max_context())),
      started_(std::chrono::steady_clock::now()),
      metrics_(backend.max_context()) {
    for (int32_t t = 0; t < tokenizer.vocab_size(); ++t)
        if (tokenizer.is_end_of_generation(t)) end_of_generation_.push_back(t);
}

Result<std::unique_ptr<Engine>> Engine::start(const ModelDescription& model, const Tokenizer& tokenizer,
                                              Backend& backend, const EngineConfig& config) {
    if (backend.n_blocks() == 0) return make_error("engine: the KV cache has no blocks (raise the KV budget)");
    std::unique_ptr<Engine> engine(new Engine(model, tokenizer, backend, config));
    engine->thread_ = std::thread([e = engine.get()] { e->run(); });
    return engine;
}

Engine::~Engine() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

double Engine::now_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

RequestId Engine::submit(GenerationRequest request, OutputCallback on_output) {
    std::vector<Submission> one;
    one.push_back({std::move(request), std::move(on_output)});
    return submit(std::move(one)).front();
}

std::vector<RequestId> Engine::submit(std::vector<Submission> batch) {
    std::vector<std::pair<RequestId, std::unique_ptr<Request>>> made;
    made.reserve(batch.size());
    for (Submission& sub : batch) {
        const RequestId id = next_id_++;
        auto sampler = Sampler::create(sub.request.sampling);
        std::string rejected;
        if (!sampler) {
            rejected = sampler.error().message;
            sampler = Sampler::create(SamplingParams{});
        }
        auto r = std::make_unique<Request>(id, std::move(sub.request), std::move(sub.on_output), std::move(*sampler),
                                           tokenizer_);
        r->rejected = std::move(rejected);
        r->submitted_s = now_s();
        made.emplace_back(id, std::move(r));
    }
    std::vector<RequestId> ids;
    ids.reserve(made.size());
    {
        std::lock_guard lock(mutex_);
        for (auto& m : made) {
            ids.push_back(m.first);
            submitted_.push_back(std::move(m));
            ++in_flight_;
        }
    }
    wake_.notify_one();
    return ids;
}

void Engine::abort(RequestId id) {
    {
        std::lock_guard lock(mutex_);
        aborted_.push_back(id);
    }
    wake_.notify_one();
}

int Engine::subscribe(StepCallback fn) {
    std::lock_guard lock(mutex_);
    step_subscribers_.emplace_back(next_subscriber_, std::move(fn));
    return next_subscriber_++;
}

void Engine::unsubscribe(int handle) {
    std::lock_guard lock(mutex_);
    std::erase_if(step_subscribers_, [handle](const auto& s) { return s.first == handle; });
}

EngineMetrics Engine::metrics() const {
    std::lock_guard lock(mutex_);
    return metrics_;
}

std::string Engine::prometheus_text() const {
    std::string text = folio::prometheus_text(metrics(), model_.name);
    const DeviceReadings d = backend_.device_readings();
    if (!d.valid) return text;
    // The GPU's own readings (NVML), as gauges beside the engine's.
    const std::string labels = "{model_name=\"" + escape_label_value(model_.name) + "\",device=\"" +
                               escape_label_value(backend_.name()) + "\"}";
    const std::pair<const char*, double> gauges[] = {
        {"gpu_utilization_perc", d.utilization_perc},   {"gpu_memory_used_bytes", d.memory_used_bytes},
        {"gpu_memory_total_bytes", d.memory_total_bytes}, {"gpu_sm_clock_mhz", d.sm_clock_mhz},
        {"gpu_memory_clock_mhz", d.memory_clock_mhz},   {"gpu_power_watts", d.power_watts},
        {"gpu_temperature_celsius", d.temperature_celsius},
    };
    char value[64];
    for (const auto& [name, v] : gauges) {
        std::snprintf(value, sizeof value, " %.17g\n", v);
        text += std::string("# TYPE folio:") + name + " gauge\nfolio:" + name + labels + value;
    }
    return text;
}

void Engine::wait_idle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return in_flight_ == 0; });
}

void Engine::run() {
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] {
                return stopping_ || !submitted_.empty() || !aborted_.empty() || scheduler_.has_work();
            });
            if (stopping_) break;
        }
        const bool changed = take_inbox();
        if (scheduler_.has_work()) step();
        else if (changed) publish_step(StepPlan{}, 0.0);  // views see the aborts and errors too
        if (finished_since_publish_ > 0) {
            {
                std::lock_guard lock(mutex_);
                in_flight_ -= finished_since_publish_;
            }
            finished_since_publish_ = 0;
            idle_.notify_all();
        }
    }
    // Shutting down: everything left ends as aborted.
    take_inbox();
    std::vector<RequestId> left;
    for (const auto& [id, r] : requests_) left.push_back(id);
    for (RequestId id : left) {
        scheduler_.abort(id);
        finish(*requests_.at(id), FinishReason::Abort);
    }
    {
        std::lock_guard lock(mutex_);
        in_flight_ = 0;
    }
    idle_.notify_all();
}

bool Engine::take_inbox() {
    std::vector<std::pair<RequestId, std::unique_ptr<Request>>> submitted;
    std::vector<RequestId> aborted;
    {
        std::lock_guard lock(mutex_);
        submitted.swap(submitted_);
        aborted.swap(aborted_);
    }
    for (auto& [id, owned] : submitted) {
        Request& r = *owned;
        requests_.emplace(id, std::move(owned));
        if (r.rejected.empty() && (r.params.n < 1 || r.params.n > 256))
            r.rejected = "n (samples per request) must be between 1 and 256, not " + std::to_string(r.params.n);
        if (!r.rejected.empty()) {
            finish(r, FinishReason::Error, r.rejected);
            continue;
        }
        std::vector<int32_t> prompt = r.params.prompt_tokens;
        if (prompt.empty() && !r.params.prompt.empty())
            prompt = tokenizer_.encode(r.params.prompt, /*add_special=*/true, /*parse_special=*/true);
        r.stop = StopChecker(r.params.ignore_eos ? std::vector<int32_t>{} : end_of_generation_, r.params.stop);
        r.timings.prompt_tokens = static_cast<int32_t>(prompt.size());
        r.history = prompt;
        Sequence s;
        s.id = id;
        s.tokens = std::move(prompt);
        s.priority = r.params.priority;
        s.max_new_tokens = r.params.max_tokens;
        s.max_context = r.params.max_context;
        s.overflow = r.params.overflow;
        s.keep_tokens = r.params.keep_tokens;
        const auto bad = std::find_if(s.tokens.begin(), s.tokens.end(),
                                      [this](int32_t t) { return t < 0 || t >= backend_.n_vocab(); });
        if (bad != s.tokens.end()) {
            finish(r, FinishReason::Error, "token id " + std::to_string(*bad) + " is outside the vocabulary");
            continue;
        }
        if (Status st = scheduler_.add(std::move(s)); !st) finish(r, FinishReason::Error, st.error().message);
    }
    for (RequestId id : aborted) {
        std::vector<RequestId> samples;  // the request and its forks
        for (const auto& [sid, r] : requests_)
            if (r->public_id == id) samples.push_back(sid);
        for (RequestId sid : samples) {
            scheduler_.abort(sid);
            finish(*requests_.at(sid), FinishReason::Abort);
        }
    }
    return !submitted.empty() || !aborted.empty();
}

void Engine::step() {
    const double t0 = now_s();
    StepPlan plan = scheduler_.schedule();
    if (plan.empty()) {
        // Nothing can run: the first waiting request needs more KV blocks
        // than the whole cache has. It cannot ever run; say so.
        if (scheduler_.num_running() == 0 && scheduler_.num_waiting() > 0) {
            const RequestId id = scheduler_.waiting().front();
            scheduler_.abort(id);
            finish(*requests_.at(id), FinishReason::Error,
                   "the request needs more KV cache blocks than the engine has (" +
                       std::to_string(backend_.n_blocks()) + " of " + std::to_string(backend_.block_size()) +
                       " tokens); raise the KV budget or shorten the prompt");
        }
        publish_step(plan, now_s() - t0);
        return;
    }
    for (const ScheduledSequence& ss : plan.sequences) {
        Request& r = *requests_.at(ss.id);
        if (r.scheduled_s < 0) {
            r.scheduled_s = now_s();
            r.timings.queue_s = r.scheduled_s - r.submitted_s;
            r.timings.cached_prompt_tokens = scheduler_.find(ss.id)->n_prefix_cached;
        }
        r.timings.truncated_tokens = scheduler_.find(ss.id)->n_truncated;
    }

    batch_.clear();
    for (const ScheduledSequence& ss : plan.sequences) {
        const Sequence& s = *scheduler_.find(ss.id);
        const std::vector<int32_t>& table = kv_.table(ss.id);
        const auto query_start = batch_.n_tokens();
        const int32_t bs = static_cast<int32_t>(kv_.block_size());
        for (int32_t i = ss.first; i < ss.first + ss.count; ++i) {
            batch_.token_ids.push_back(s.tokens[static_cast<size_t>(i)]);
            batch_.positions.push_back(i);
            batch_.slot_mapping.push_back(int64_t{table[static_cast<size_t>(i / bs)]} * bs + i % bs);
        }
        batch_.sequences.push_back(BatchSequence{query_start, ss.count, ss.first + ss.count, table});
        if (ss.sample) batch_.logits_rows.push_back(batch_.n_tokens() - 1);
    }
    const size_t n_vocab = static_cast<size_t>(backend_.n_vocab());
    // Where a GPU backend can, the logits stay on it: a step whose sampled
    // rows are all greedy gets only the chosen ids back; one whose rows can
    // all draw from their best few entries (top-k plus the penalty window,
    // top-p or min-p, logprobs; Sampler::candidates_needed) gets each row's
    // k best (k = the most any row needs), with sums over each whole row
    // where a row needs them (top-p without top-k, logprobs). A row those
    // cannot decide (a wide top-p or min-p set, a draw by temperature alone)
    // is drawn there afterwards (draw_on_backend), else fetched whole. A
    // step whose rows are all greedy or drawn by temperature alone or by
    // top-p or min-p without top-k, penalties or not, and want no logprobs,
    // gets each row's token drawn there (with the uniform value its Sampler
    // takes here and the counts of its penalty window); where top-p rows
    // could take the top-k path (no penalties, no row that needs more), that
    // path is cheaper (no sort of whole rows). Anything else (penalties that
    // raise logits under a top-k, penalties with logprobs and no top-k) gets
    // whole rows.
    bool device_greedy = backend_.can_argmax();
    bool device_draw = backend_.can_draw();
    const int32_t max_top_k = backend_.max_top_k(batch_.logits_rows.size());
    int32_t step_top_k = max_top_k > 0 ? 1 : 0;
    bool step_sums = false, any_top_p = false;
    row_temperatures_.clear();
    for (const ScheduledSequence& ss : plan.sequences) {
        if (!ss.sample) continue;
        const Request& r = *requests_.at(ss.id);
        const SamplingParams& sp = r.params.sampling;
        row_temperatures_.push_back(sp.temperature > 0.0f ? sp.temperature : 1.0f);
        const bool greedy = sp.temperature == 0.0f && !sp.has_penalties() && sp.n_logprobs == 0;
        const bool forks = r.params.n > 1 && r.first_token_s < 0;  // several draws from this row
        if (!greedy || forks) device_greedy = false;
        const bool by_top_p = r.sampler.draws_by_top_p() && sp.n_logprobs == 0;
        if (!(r.sampler.draws_by_temperature() || by_top_p) || forks) device_draw = false;
        any_top_p = any_top_p || by_top_p;
        if (step_top_k == 0 || greedy) continue;
        const int32_t needed = r.sampler.candidates_needed(r.history.size());
        if (needed > 0 && needed <= max_top_k && static_cast<size_t>(needed) < n_vocab) {
            step_top_k = std::max(step_top_k, needed);
            step_sums = step_sums || r.sampler.needs_row_sums();
        } else {
            step_top_k = 0;
        }
    }
    if (device_draw && any_top_p && step_top_k > 0) device_draw = false;
    // Swaps first: blocks swapped out this step may be written again below.
    Status status = backend_.swap_blocks(plan.swap_out, plan.swap_in);
    if (!status && backend_.n_swap_blocks() == 0 && plan.swap_in.empty()) {
        // The swap space could not be taken (nothing was copied): recompute.
        std::fprintf(stderr, "folio: %s\n", status.error().message.c_str());
        scheduler_.stop_swapping(plan);
        status = {};
    }
    if (status) status = backend_.copy_blocks(plan.copies);
    const size_t n_rows = batch_.logits_rows.size();
    size_t n_device_top_p = 0;  // rows drawn by top-p or min-p where the logits are
    const double t_forward = now_s();
    if (device_greedy) {
        step_top_k = 0;
        chosen_ids_.resize(n_rows);
        if (status) status = backend_.forward_argmax(batch_, chosen_ids_);
    } else if (device_draw) {
        step_top_k = 0;
        chosen_ids_.resize(n_rows);
        row_uniforms_.clear();
        DrawPenalties& p = draw_penalties_;
        p.offsets.clear();
        p.ids.clear();
        p.counts.clear();
        p.params.clear();
        row_top_p_.clear();
        row_min_p_.clear();
        for (size_t i = 0, row = 0; i < plan.sequences.size(); ++i) {
            if (!plan.sequences[i].sample) continue;
            Request& r = *requests_.at(plan.sequences[i].id);
            const SamplingParams& sp = r.params.sampling;
            const bool greedy = sp.temperature == 0.0f;
            row_temperatures_[row++] = greedy ? 0.0f : sp.temperature;
            const bool top_p = r.sampler.draws_by_top_p();
            row_top_p_.push_back(top_p ? sp.top_p : 1.0f);
            row_min_p_.push_back(top_p ? sp.min_p : 0.0f);
            n_device_top_p += top_p;
            row_uniforms_.push_back(greedy ? 0.0 : r.sampler.take_uniform());
            p.offsets.push_back(static_cast<int32_t>(p.ids.size()));
            penalty_counts(r.history, sp, p.scratch, p.ids, p.counts);
            p.params.insert(p.params.end(), {sp.repetition_penalty, sp.frequency_penalty, sp.presence_penalty});
        }
        p.offsets.push_back(static_cast<int32_t>(p.ids.size()));
        RowDraws draws{row_temperatures_, row_uniforms_, {}, {}, {}, {}, {}, {}};
        if (!p.ids.empty()) {
            draws.penalty_offsets = p.offsets;
            draws.penalty_ids = p.ids;
            draws.penalty_counts = p.counts;
            draws.penalty_params = p.params;
        }
        if (any_top_p) {
            draws.top_p = row_top_p_;
            draws.min_p = row_min_p_;
        }
        if (status) status = backend_.forward_draw(batch_, draws, chosen_ids_);
    } else if (step_top_k > 0) {
        logits_.resize(n_rows * static_cast<size_t>(step_top_k));
        chosen_ids_.resize(logits_.size());
        RowSums sums;
        if (step_sums) {
            row_softmax_sums_.resize(n_rows);
            row_log_normalizers_.resize(n_rows);
            sums = {row_temperatures_, row_softmax_sums_, row_log_normalizers_};
        }
        if (status) status = backend_.forward_top_k(batch_, step_top_k, logits_, chosen_ids_, sums);
    } else {
        logits_.resize(n_rows * n_vocab);
        if (status) status = backend_.forward(batch_, logits_);
    }
    const double forward_s = now_s() - t_forward;
    if (!status) {
        // What was swapped out this step may not have reached the host.
        for (SeqId id : plan.preempted)
            if (const Sequence* s = scheduler_.find(id); s && s->swapped) {
                scheduler_.abort(id);
                finish(*requests_.at(id), FinishReason::Error, "swapping its KV cache out failed: " + status.error().message);
            }
        for (const ScheduledSequence& ss : plan.sequences) {
            scheduler_.abort(ss.id);
            finish(*requests_.at(ss.id), FinishReason::Error, "forward pass failed: " + status.error().message);
        }
        publish_step(plan, now_s() - t0, forward_s);
        return;
    }

    // Sample, detokenize, check stops; then let the scheduler move on. A
    // request for n > 1 samples forks here, at its first token: the copies
    // share every KV block (copy-on-write) and draw from the same logits.
    const size_t n_planned = plan.sequences.size();
    // Per planned sequence: whether it samples this step, and its logits row.
    std::vector<char> samples(n_planned, 0);
    std::vector<size_t> row_of(n_planned, 0);
    for (size_t i = 0, row = 0; i < n_planned; ++i)
        if (plan.sequences[i].sample) {
            samples[i] = 1;
            row_of[i] = row++;
        }
    for (size_t i = 0; i < n_planned; ++i) {
        Request& r = *requests_.at(plan.sequences[i].id);
        if (samples[i] && r.first_token_s < 0 && r.index == 0)
            for (int32_t k = 1; k < r.params.n; ++k) {
                const RequestId child = fork(r, k);
                plan.sequences.push_back(plan.sequences[i]);
                plan.sequences.back().id = child;
                samples.push_back(1);
                row_of.push_back(row_of[i]);
            }
    }
    std::vector<StepResult> results(plan.sequences.size());
    std::vector<RequestOutput> outputs(plan.sequences.size());
    std::vector<FinishReason> reasons(plan.sequences.size(), FinishReason::Length);
    size_t n_sampled = 0, n_whole_rows = 0;
    // The draws first. A top-k step's row whose best entries cannot decide
    // (top-p's set reaches past them: a flat distribution) waits for one
    // download of all such rows, after the others. Draws from whole rows
    // (each request's Sampler is its own) run on the sampling pool, several
    // rows at once.
    std::vector<int32_t> tokens(plan.sequences.size(), 0);
    std::vector<size_t> whole;                 // planned sequences drawing from a whole row
    std::vector<const float*> whole_rows;      // and that row
    std::vector<size_t> undecided, undecided_rows;
    for (size_t i = 0; i < plan.sequences.size(); ++i) {
        if (!samples[i]) continue;
        Request& r = *requests_.at(plan.sequences[i].id);
        if (device_greedy || device_draw) {
            tokens[i] = chosen_ids_[row_of[i]];
        } else if (step_top_k > 0) {
            const size_t k = static_cast<size_t>(step_top_k), at = row_of[i] * k;
            const RowSum sum = step_sums ? RowSum{row_softmax_sums_[row_of[i]], row_log_normalizers_[row_of[i]]}
                                         : RowSum{};
            tokens[i] = r.sampler.sample_top_k(std::span<const float>(logits_.data() + at, k),
                                               std::span<const int32_t>(chosen_ids_.data() + at, k), r.history,
                                               step_sums ? &sum : nullptr,
                                               r.params.sampling.n_logprobs > 0 ? &r.info : nullptr);
            if (tokens[i] == Sampler::kNeedsWholeRow) undecided.push_back(i), undecided_rows.push_back(row_of[i]);
        } else {
            whole.push_back(i);
            whole_rows.push_back(logits_.data() + row_of[i] * n_vocab);
        }
    }
    if (!undecided.empty() && backend_.can_draw_last_rows() && !device_draws_failed_)
        n_device_top_p += draw_on_backend(plan, step_top_k, undecided, undecided_rows, tokens);
    if (!undecided.empty()) {
        whole_row_.resize(undecided.size() * n_vocab);
        const Status fetched = backend_.last_logits_rows(undecided_rows, whole_row_);
        if (!fetched) std::fprintf(stderr, "folio: %s; sampling the best entries\n", fetched.error().message.c_str());
        for (size_t j = 0; j < undecided.size(); ++j) {
            const size_t i = undecided[j];
            if (fetched) {
                whole.push_back(i);
                whole_rows.push_back(whole_row_.data() + j * n_vocab);
            } else {
                tokens[i] = chosen_ids_[row_of[i] * static_cast<size_t>(step_top_k)];
            }
        }
    }
    n_whole_rows = whole.size();
    auto draw_whole = [&](int64_t j, int) {
        const size_t i = whole[static_cast<size_t>(j)];
        Request& r = *requests_.at(plan.sequences[i].id);
        tokens[i] = r.sampler.sample(std::span<const float>(whole_rows[static_cast<size_t>(j)], n_vocab), r.history,
                                     r.params.sampling.n_logprobs > 0 ? &r.info : nullptr);
    };
    // One row (a lone chat) is drawn here: waking the pool would only leave
    // its workers spinning beside the next step's compute.
    if (whole.size() == 1) {
        draw_whole(0, 0);
    } else if (whole.size() > 1) {
        if (!sampling_pool_) {  // the first step that needs it: greedy or GPU-only use never starts it
            int threads = config_.sampling_threads;
            if (threads <= 0)
                threads = backend_.n_threads() > 1 ? backend_.n_threads() : std::min(cpu::physical_core_count(), 8);
            sampling_pool_ = std::make_unique<cpu::ThreadPool>(threads);
        }
        sampling_pool_->parallel_for(static_cast<int64_t>(whole.size()), draw_whole);
    }
    const double t_sampled = now_s();
    for (size_t i = 0; i < plan.sequences.size(); ++i) {
        if (!samples[i]) continue;
        ++n_sampled;
        Request& r = *requests_.at(plan.sequences[i].id);
        const int32_t token = tokens[i];
        results[i].token = token;
        RequestOutput& out = outputs[i];
        out.id = r.public_id;
        out.index = r.index;
        if (r.first_token_s < 0) {
            r.first_token_s = t_sampled;
            r.timings.ttft_s = t_sampled - r.submitted_s;
        } else {
            std::lock_guard lock(mutex_);
            metrics_.inter_token_latency_seconds.observe(t_sampled - r.last_token_s);
        }
        r.last_token_s = t_sampled;
        ++r.timings.generated_tokens;
        if (r.stop.is_stop_token(token)) {
            results[i].finished = true;
            reasons[i] = FinishReason::Stop;
            continue;
        }
        r.history.push_back(token);
        out.token_ids.push_back(token);
        if (r.params.sampling.n_logprobs > 0) out.logprobs.push_back(r.info);
        StopUpdate update = r.stop.push(r.decoder.push(token));
        out.text = std::move(update.text);
        if (update.stopped) {
            results[i].finished = true;
            reasons[i] = FinishReason::StopString;
        }
    }
    const std::vector<FinishedSequence> ended = scheduler_.commit(plan, results);
    {
        std::lock_guard lock(mutex_);
        metrics_.prompt_tokens_total += static_cast<uint64_t>(plan.n_prefill_tokens);
        metrics_.generation_tokens_total += static_cast<uint64_t>(n_sampled);
        metrics_.sampled_whole_rows_total += static_cast<uint64_t>(n_whole_rows);
        metrics_.sampled_device_top_p_total += static_cast<uint64_t>(n_device_top_p);
    }
    for (size_t i = 0; i < plan.sequences.size(); ++i) {
        if (!plan.sequences[i].sample) continue;
        Request& r = *requests_.at(plan.sequences[i].id);
        if (results[i].finished) finish(r, reasons[i], {}, &outputs[i]);
        else if (!outputs[i].text.empty() || !outputs[i].token_ids.empty()) {
            r.timings.e2e_s = t_sampled - r.submitted_s;  // so far: decode rates are exact while streaming
            outputs[i].timings = r.timings;
            if (r.on_output) r.on_output(outputs[i]);
        }
    }
    for (const FinishedSequence& f : ended) finish(*requests_.at(f.id), f.reason, f.message);
    publish_step(plan, now_s() - t0, forward_s);
}

size_t Engine::draw_on_backend(const StepPlan& plan, int32_t step_top_k, std::vector<size_t>& undecided,
                               std::vector<size_t>& rows, std::vector<int32_t>& tokens) {
    // Rows drawn from the whole row (temperature alone, top-p, min-p) without
    // penalties (penalties never get here without top-k: their steps bring
    // whole rows). Each Sampler takes its uniform value as its own draw
    // would; a row that wants logprobs gets them from the best entries and
    // RowSum it already has, with the drawn token's logit.
    std::vector<size_t> drawn, drawn_rows, left, left_rows;
    std::vector<WholeRowDraw> draws;
    for (size_t j = 0; j < undecided.size(); ++j) {
        Request& r = *requests_.at(plan.sequences[undecided[j]].id);
        const SamplingParams& p = r.params.sampling;
        if (!r.sampler.draws_from_whole_row() || p.has_penalties()) {
            left.push_back(undecided[j]), left_rows.push_back(rows[j]);
            continue;
        }
        drawn.push_back(undecided[j]), drawn_rows.push_back(rows[j]);
        draws.push_back({p.temperature, p.top_p, p.min_p, r.sampler.take_uniform()});
    }
    if (drawn.empty()) return 0;
    std::vector<DrawnToken> out(drawn.size());
    if (const Status s = backend_.draw_last_rows(drawn_rows, draws, out); !s) {
        // The rows come down whole instead, from now on (their Samplers have
        // taken a value: the draws are still the Sampler's, from the next value
        // of their streams).
        std::fprintf(stderr, "folio: %s; drawing those rows on the host from now on\n", s.error().message.c_str());
        device_draws_failed_ = true;
        return 0;
    }
    const auto k = static_cast<size_t>(step_top_k);
    size_t n_top_p = 0;
    for (size_t j = 0; j < drawn.size(); ++j) {
        const size_t i = drawn[j];
        tokens[i] = out[j].id;
        Request& r = *requests_.at(plan.sequences[i].id);
        n_top_p += r.sampler.draws_by_top_p();
        if (r.params.sampling.n_logprobs == 0) continue;
        const size_t at = drawn_rows[j] * k;
        r.sampler.report_drawn(std::span<const float>(logits_.data() + at, k),
                               std::span<const int32_t>(chosen_ids_.data() + at, k),
                               {row_softmax_sums_[drawn_rows[j]], row_log_normalizers_[drawn_rows[j]]}, out[j].logit,
                               out[j].n_candidates, r.info);
    }
    undecided = std::move(left);
    rows = std::move(left_rows);
    return n_top_p;
}

RequestId Engine::fork(Request& parent, int32_t index) {
    const RequestId id = next_id_++;
    GenerationRequest params = parent.params;
    if (params.sampling.seed != kRandomSeed) params.sampling.seed += static_cast<uint64_t>(index);
    auto sampler = Sampler::create(params.sampling);  // valid: the parent's were
    auto child = std::make_unique<Request>(id, std::move(params), parent.on_output, std::move(*sampler), tokenizer_);
    child->public_id = parent.public_id;
    child->index = index;
    child->stop = StopChecker(parent.params.ignore_eos ? std::vector<int32_t>{} : end_of_generation_, parent.params.stop);
    child->history = parent.history;
    child->timings = parent.timings;
    child->submitted_s = parent.submitted_s;
    child->scheduled_s = parent.scheduled_s;
    scheduler_.fork(parent.id, id);
    requests_.emplace(id, std::move(child));
    std::lock_guard lock(mutex_);
    ++in_flight_;
    return id;
}

void Engine::finish(Request& r, FinishReason reason, std::string error, RequestOutput* pending) {
    RequestOutput out;
    if (pending) out = std::move(*pending);
    out.id = r.public_id;
    out.index = r.index;
    out.finished = true;
    out.reason = reason;
    out.error = std::move(error);
    if (reason != FinishReason::StopString && reason != FinishReason::Error) {
        // Whatever the decoder and the stop checker held back is text after all.
        StopUpdate tail = r.stop.push(r.decoder.flush());
        out.text += tail.text;
        if (!tail.stopped) out.text += r.stop.flush();
    }
    const double t = now_s();
    r.timings.e2e_s = t - r.submitted_s;
    if (r.scheduled_s < 0) r.timings.queue_s = r.timings.e2e_s;
    out.timings = r.timings;
    {
        std::lock_guard lock(mutex_);
        metrics_.count_request_success(to_string(reason));
        if (r.first_token_s >= 0) metrics_.time_to_first_token_seconds.observe(r.timings.ttft_s);
        metrics_.e2e_request_latency_seconds.observe(r.timings.e2e_s);
        metrics_.request_queue_time_seconds.observe(r.timings.queue_s);
        metrics_.request_prompt_tokens.observe(r.timings.prompt_tokens);
        metrics_.request_generation_tokens.observe(r.timings.generated_tokens);
    }
    OutputCallback callback = std::move(r.on_output);
    requests_.erase(r.id);  // r is gone from here on
    if (callback) callback(out);
    ++finished_since_publish_;  // wait_idle() returns once the step event showing it is out
}

void Engine::fill_block_map(StepEvent& event) const {
    const BlockPool& pool = kv_.pool();
    event.blocks.resize(pool.n_blocks());
    for (uint32_t b = 0; b < pool.n_blocks(); ++b) {
        const KvBlock& kb = pool.block(static_cast<int32_t>(b));
        event.blocks[b].ref_count = static_cast<uint16_t>(std::min<int32_t>(kb.ref_count, 0xFFFF));
        event.blocks[b].cached = kb.cached;
        if (kb.cached) event.blocks[b].tokens = static_cast<uint16_t>(pool.block_size());
    }
    for (SeqId id : scheduler_.running()) {
        const Sequence* s = scheduler_.find(id);
        const auto request = requests_.find(id);
        const RequestId owner = request != requests_.end() ? request->second->public_id : id;  // n samples: the request
        const std::vector<int32_t>& table = kv_.table(id);
        for (size_t i = 0; i < table.size(); ++i) {
            BlockCell& cell = event.blocks[static_cast<size_t>(table[i])];
            if (cell.owner >= 0) continue;
            cell.owner = owner;
            const int64_t held = std::clamp<int64_t>(s->num_computed - static_cast<int64_t>(i) * pool.block_size(), 0,
                                                     pool.block_size());
            cell.tokens = static_cast<uint16_t>(held);
        }
    }
}

void Engine::publish_step(const StepPlan& plan, double duration_s, double forward_s) {
    std::vector<StepCallback> subscribers;
    {
        std::lock_guard lock(mutex_);
        for (const auto& sub : step_subscribers_) subscribers.push_back(sub.second);
    }
    auto event = std::make_shared<StepEvent>();
    event->step = ++step_count_;
    event->time_s = now_s();
    event->duration_s = duration_s;
    event->forward_s = forward_s;
    event->prefill_tokens = plan.n_prefill_tokens;
    event->decode_tokens = plan.n_decode_tokens;
    event->running = static_cast<int32_t>(scheduler_.num_running());
    event->waiting = static_cast<int32_t>(scheduler_.num_waiting());
    event->swapped = static_cast<int32_t>(scheduler_.num_swapped());
    event->preempted = static_cast<int32_t>(plan.preempted.size());
    for (SeqId id : plan.preempted)
        if (auto it = requests_.find(id); it != requests_.end()) {
            ++it->second->timings.preemptions;
            event->preempted_ids.push_back(it->second->public_id);
        }
    event->kv_usage = kv_.pool().usage();
    event->block_size = kv_.block_size();
    // The block map costs a pass over the whole pool: only for someone who looks.
    if (!subscribers.empty()) fill_block_map(*event);
    {
        std::lock_guard lock(mutex_);
        metrics_.num_preemptions_total = scheduler_.num_preemptions();
        metrics_.prefix_cache_queries_total = kv_.prefix_queries();
        metrics_.prefix_cache_hits_total = kv_.prefix_hits();
        metrics_.num_requests_running = scheduler_.num_running();
        metrics_.num_requests_waiting = scheduler_.num_waiting();
        metrics_.num_requests_swapped = scheduler_.num_swapped();
        metrics_.kv_swapped_out_blocks_total = scheduler_.num_swapped_out_blocks();
        metrics_.kv_swapped_in_blocks_total = scheduler_.num_swapped_in_blocks();
        metrics_.kv_cache_usage_perc = event->kv_usage;
    }
    for (const StepCallback& fn : subscribers) fn(event);
}

}  // namespace folio
