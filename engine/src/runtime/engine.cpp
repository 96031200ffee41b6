#include "folio/engine.h"

#include "runtime/engine_request.h"
#include "runtime/token_choice.h"

#include <algorithm>
#include <cstdio>

namespace folio {

namespace {

// The scheduler swaps preempted sequences to the backend's host slots, if it
// has any, and slides sink windows in place where the backend shifts keys.
SchedulerConfig for_backend(SchedulerConfig config, const Backend& backend) {
    config.swap_blocks = backend.n_swap_blocks();
    config.shift_keys = backend.can_shift_keys();
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
      scheduler_(for_backend(config.scheduler, backend), kv_, static_cast<int32_t>(backend.max_context())),
      started_(std::chrono::steady_clock::now()),
      metrics_(backend.max_context()),
      chooser_(std::make_unique<TokenChooser>(backend, config.sampling_threads)),
      spec_(config.spec) {
    metrics_.cache_config = {backend.block_size(), backend.n_blocks(), backend.kv_bytes_per_block(),
                             std::string(kv_type_name(backend.kv_type()))};
    for (int32_t t = 0; t < tokenizer.vocab_size(); ++t)
        if (tokenizer.is_end_of_generation(t)) end_of_generation_.push_back(t);
}

Result<std::unique_ptr<Engine>> Engine::start(const ModelDescription& model, const Tokenizer& tokenizer,
                                              Backend& backend, const EngineConfig& config) {
    if (backend.n_blocks() == 0) return make_error("engine: the KV cache has no blocks (raise the KV budget)");
    auto proposer = make_proposer(config.spec);
    if (!proposer) return proposer.error();
    std::unique_ptr<Engine> engine(new Engine(model, tokenizer, backend, config));
    engine->spec_.proposer = std::move(*proposer);
    if (config.spec.method != SpecMethod::Ngram) {  // prompt lookup for the requests that choose it
        SpecConfig ngram = config.spec;
        ngram.method = SpecMethod::Ngram;
        ngram.draft_backend = nullptr;
        auto lookup = make_proposer(ngram);
        if (!lookup) return lookup.error();
        engine->ngram_ = std::make_unique<SpecRoute>(ngram);
        engine->ngram_->proposer = std::move(*lookup);
    }
    if (engine->spec_.proposer) engine->spec_routes_.push_back(&engine->spec_);
    if (engine->ngram_) engine->spec_routes_.push_back(engine->ngram_.get());
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
        if (r.rejected.empty()) {
            auto route = spec_route(r.params);
            if (route) r.spec = *route;
            else r.rejected = route.error().message;
        }
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
        s.sink_tokens = r.params.sink_tokens;
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
    child->spec = parent.spec;
    child->timings = parent.timings;
    child->submitted_s = parent.submitted_s;
    child->scheduled_s = parent.scheduled_s;
    scheduler_.fork(parent.id, id);
    requests_.emplace(id, std::move(child));
    std::lock_guard lock(mutex_);
    ++in_flight_;
    return id;
}

Result<Engine::SpecRoute*> Engine::spec_route(const GenerationRequest& request) {
    const SpecMethod method = request.spec_method.value_or(config_.spec.method);
    SpecRoute* route = nullptr;
    if (method == SpecMethod::Ngram) {
        route = ngram_ ? ngram_.get() : &spec_;
    } else if (method == config_.spec.method) {
        route = spec_.proposer ? &spec_ : nullptr;
    } else if (method != SpecMethod::Off) {
        std::string choices = "off, ngram";
        if (config_.spec.method != SpecMethod::Off && config_.spec.method != SpecMethod::Ngram)
            choices += " or " + std::string(to_string(config_.spec.method));
        return make_error("speculative decoding by '" + std::string(to_string(method)) +
                          "' needs that draft model in the engine, which drafts with '" +
                          std::string(to_string(config_.spec.method)) + "' (a request can choose " + choices + ")");
    }
    const int32_t k = request.spec_draft_max;  // no matter where the request does not speculate
    if (route && k != 0 && (k < 1 || k > route->config.draft_max))
        return make_error("spec_draft_max must be between 1 and the engine's draft_max (" +
                          std::to_string(route->config.draft_max) + "), not " + std::to_string(k));
    return route;
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
    if (r.spec) r.spec->proposer->forget(r.id);
    OutputCallback callback = std::move(r.on_output);
    requests_.erase(r.id);  // r is gone from here on
    if (callback) callback(out);
    ++finished_since_publish_;  // wait_idle() returns once the step event showing it is out
}

void Engine::fill_block_map(StepEvent& event) const {
    if (spec_.proposer) {  // prompt lookup has no KV of its own
        std::vector<DraftBlockCell> cells;
        spec_.proposer->describe_blocks(cells);
        event.draft_blocks.resize(cells.size());
        for (size_t b = 0; b < cells.size(); ++b) {
            if (cells[b].seq < 0) continue;
            const auto request = requests_.find(cells[b].seq);
            event.draft_blocks[b] = {request != requests_.end() ? request->second->public_id : cells[b].seq, 1,
                                     cells[b].tokens, false};
        }
    }
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
    event->spec_sequences = spec_step_.sequences;
    event->draft_tokens = spec_step_.draft_tokens;
    event->accepted_tokens = spec_step_.accepted_tokens;
    event->accepted_per_position = spec_step_.accepted_per_position;
    event->draft_k = spec_step_.draft_k;
    event->draft_s = spec_step_.draft_s;
    spec_step_ = {};
    event->kv_usage = kv_.pool().usage();
    event->block_size = kv_.block_size();
    event->kv_bytes_per_block = backend_.kv_bytes_per_block();
    event->kv_type = backend_.kv_type();
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
