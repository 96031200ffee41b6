#include "ui/engine_host.h"

#include <QFileInfo>

#ifdef FOLIO_HAVE_SERVER
#include "folio/api_server.h"
#endif
#include "folio/backend.h"
#include "folio/chat_prompt.h"
#include "folio/chat_template.h"
#include "folio/model.h"
#include "folio/spec.h"
#include "folio/tokenizer.h"
#include "ui/model_summary.h"

namespace folio::ui {

// A loaded model and the engine that runs it. Members are destroyed in
// reverse order: the engine (which joins its thread) before the backend,
// tokenizer and description it refers to.
struct EngineHost::Loaded {
    folio::ModelDescription model;
    folio::Tokenizer tokenizer;
    std::unique_ptr<folio::Backend> backend;
    folio::ChatTemplate chat_template;
    ModelSummary summary;
    EngineStatus status;
    folio::DraftModel draft;  // speculative decoding by a model: its own description and backend
    std::unique_ptr<folio::Engine> engine;
    int subscription = 0;
};

EngineHost::EngineHost() {
    ticker_ = new QTimer(this);
    ticker_->setInterval(50);
    connect(ticker_, &QTimer::timeout, this, &EngineHost::tick);
    clock_.start();
}

EngineHost::~EngineHost() { release(); }

void EngineHost::inspect(const QString& path) {
    auto model = folio::load_model_description(path.toStdString());
    if (!model) {
        emit inspectFailed(path, QString::fromStdString(model.error().message));
        return;
    }
    emit inspected(summarize_model(*model));
}

void EngineHost::release() {
    if (!loaded_) return;
    ticker_->stop();
#ifdef FOLIO_HAVE_SERVER
    if (server_) {
        server_.reset();  // stops accepting, aborts its requests, joins its threads: before the engine goes
        emit servingChanged(false, {}, {});  // back with the next engine while serve_.on
    }
#endif
    if (loaded_->engine) loaded_->engine->unsubscribe(loaded_->subscription);
    loaded_->engine.reset();  // aborts what is left: every callback gets its finished update
    loaded_.reset();
    std::lock_guard lock(mutex_);
    latest_step_.reset();
    step_pending_ = false;
    spec_ = {};
    tickets_.clear();
    requests_.clear();
    first_token_seen_.clear();
    stages_.clear();
}

void EngineHost::load(const QString& path, const EngineSettings& settings) {
    emit loadStarted(path);
    const bool had_model = loaded_ != nullptr;
    release();
    if (had_model) emit unloaded();
    auto fail = [&](const std::string& message) { emit loadFailed(path, QString::fromStdString(message)); };

    auto model = folio::load_model_description(path.toStdString());
    if (!model) return fail(model.error().message);
    auto tokenizer = folio::Tokenizer::create(model->tokenizer);
    if (!tokenizer) return fail("tokenizer: " + tokenizer.error().message);
    auto fresh = std::make_unique<Loaded>(Loaded{std::move(*model), std::move(*tokenizer), nullptr, {}, {}, {}, {}, nullptr, 0});

    folio::BackendOptions options;
    options.device = settings.device.toLower().toStdString();
    // A GPU that is gone (driver, card) is said so; the CPU runs meanwhile.
    std::string device_note;
    if (options.device != "cpu" && folio::cuda_device_count() == 0) {
        device_note = folio::describe_cuda_devices();
        options.device = "cpu";
    }
    options.n_threads = settings.threads;
    options.block_size = settings.block_size;
    options.kv_budget_bytes = settings.kv_budget_mib << 20;
    options.kv_type = folio::parse_kv_type(settings.kv_type.toStdString()).value_or(folio::KvType::F16);
    options.max_context = settings.max_context;
    // The backend refers to the description inside `fresh`, which never moves.
    auto backend = folio::create_backend(fresh->model, options);
    if (!backend) return fail(backend.error().message);
    fresh->backend = std::move(*backend);

    folio::ChatTemplateChoice choice =
        folio::ChatTemplate::for_model(fresh->model.chat_template, fresh->model.hparams.architecture);
    fresh->chat_template = choice.chat_template;
    fresh->summary = summarize_model(fresh->model);

    folio::EngineConfig config;
    config.scheduler.max_num_seqs = settings.max_num_seqs;
    config.scheduler.max_num_batched_tokens = settings.max_num_batched_tokens;
    config.enable_prefix_caching = settings.prefix_caching;
    auto method = folio::parse_spec_method(settings.spec_method.toStdString());
    if (!method) return fail("speculative decoding: " + method.error().message);
    config.spec.method = *method;
    config.spec.draft_max = settings.draft_max;
    config.spec.adaptive = settings.draft_adaptive;
    if (Status v = config.spec.validate(); !v) return fail("speculative decoding: " + v.error().message);
    folio::DraftOptions draft_options;
    draft_options.path = settings.draft_model.toStdString();
    draft_options.device = options.device;
    draft_options.n_threads = settings.threads;
    auto draft = folio::load_draft_model(*method, fresh->model, fresh->tokenizer, *fresh->backend, draft_options);
    if (!draft) return fail("speculative decoding: " + draft.error().message);
    fresh->draft = std::move(*draft);
    config.spec.draft_backend = fresh->draft.backend.get();
    auto engine = folio::Engine::start(fresh->model, fresh->tokenizer, *fresh->backend, config);
    if (!engine) return fail(engine.error().message);
    fresh->engine = std::move(*engine);
    fresh->subscription =
        fresh->engine->subscribe([this](std::shared_ptr<const folio::StepEvent> e) { on_step(std::move(e)); });

    EngineStatus& st = fresh->status;
    st.device = QString::fromStdString(fresh->backend->name() + (device_note.empty() ? "" : " (" + device_note + ")"));
    st.n_blocks = fresh->backend->n_blocks();
    st.block_size = fresh->backend->block_size();
    st.max_context = fresh->backend->max_context();
    st.kv_cache_bytes = fresh->backend->kv_cache_bytes();
    if (*method != folio::SpecMethod::Off)
        st.speculation = tr("%1, K ≤ %2 (%3)")
                             .arg(QString::fromStdString(std::string(folio::to_string(*method))))
                             .arg(settings.draft_max)
                             .arg(settings.draft_adaptive ? tr("adaptive") : tr("fixed"));
    st.settings = settings;
    loaded_ = std::move(fresh);

    readings_.clear();
    ticker_->start();
    emit loaded(loaded_->summary, loaded_->status);
    if (serve_.on) start_server();
}

void EngineHost::serve(const QString& host, int port, const QString& api_key) {
    if (!loaded_ || !loaded_->engine) {
        emit servingChanged(false, {}, tr("no model is loaded: load one first"));
        return;
    }
    serve_ = {true, host, port, api_key};
#ifdef FOLIO_HAVE_SERVER
    server_.reset();
#endif
    start_server();
}

void EngineHost::stopServing() {
    serve_.on = false;
#ifdef FOLIO_HAVE_SERVER
    server_.reset();
#endif
    emit servingChanged(false, {}, {});
}

void EngineHost::start_server() {
#ifdef FOLIO_HAVE_SERVER
    folio::ApiServerConfig c;
    c.host = serve_.host.toStdString();
    c.port = serve_.port;
    c.api_key = serve_.api_key.toStdString();
    c.model_id = QFileInfo(loaded_->summary.path).fileName().toStdString();
    auto server = folio::ApiServer::start(*loaded_->engine, loaded_->model, c);
    if (!server) {
        serve_.on = false;
        emit servingChanged(false, {}, QString::fromStdString(server.error().message));
        return;
    }
    serve_.port = (*server)->port();
    server_ = std::shared_ptr<folio::ApiServer>(std::move(*server));
    emit servingChanged(true, QStringLiteral("http://%1:%2/v1").arg(serve_.host).arg(serve_.port), {});
#else
    serve_.on = false;
    emit servingChanged(false, {}, tr("this studio was built without cpp-httplib (libcpp-httplib-dev): no server"));
#endif
}

void EngineHost::unload() {
    const bool had_model = loaded_ != nullptr;
    release();
    if (had_model) emit unloaded();
}

void EngineHost::shutdown() { release(); }

void EngineHost::prometheusText() {
    emit prometheusReady(loaded_ && loaded_->engine ? QString::fromStdString(loaded_->engine->prometheus_text())
                                                    : tr("# no engine is running\n"));
}

void EngineHost::submit(const ChatRequest& request) {
    auto reject = [&](const QString& message) {
        RequestUpdate u;
        u.ticket = request.ticket;
        u.finished = true;
        u.reason = finish_reason_name(folio::FinishReason::Error);
        u.error = message;
        emit requestUpdated(u);
    };
    if (!loaded_ || !loaded_->engine)
        return reject(tr("No model is loaded: open one with File > Open Model… (Ctrl+O), or drop a file on the window."));
    const int32_t context = static_cast<int32_t>(loaded_->status.effective_context());
    auto turn = folio::chat_turn_prompt(loaded_->chat_template, loaded_->tokenizer, request.messages, request.overflow,
                                        context, request.max_tokens);
    if (!turn) return reject(tr("The chat does not fit the context: %1.").arg(QString::fromStdString(turn.error().message)));

    folio::GenerationRequest g;
    g.prompt_tokens = std::move(turn->tokens);
    g.overflow = turn->overflow;
    g.keep_tokens = turn->keep_tokens;
    g.sampling = request.sampling;
    g.max_tokens = request.max_tokens;
    g.priority = request.priority;
    if (!request.speculation.isEmpty()) {
        auto method = folio::parse_spec_method(request.speculation.toStdString());
        if (!method) return reject(QString::fromStdString(method.error().message));
        g.spec_method = *method;
    }
    // The chat's K at most the engine's (the settings panel shows it so).
    g.spec_draft_max = std::min<int32_t>(request.draft_max, static_cast<int32_t>(loaded_->status.settings.draft_max));
    const quint64 ticket = request.ticket;
    // The first update says what was left out and where the request stands.
    RequestUpdate first;
    first.ticket = ticket;
    first.stage = RequestStage::Queued;
    first.dropped_messages = static_cast<int>(turn->dropped_messages);
    first.full_prompt_tokens = static_cast<int>(turn->full_tokens);
    first.context_tokens = context;
    {
        // The lock is held across submit() so that the id is mapped before its first callback.
        std::lock_guard lock(mutex_);
        first.ahead = static_cast<int>(tickets_.size());  // every request in flight came first
        const folio::RequestId id = loaded_->engine->submit(
            std::move(g), [this, ticket](const folio::RequestOutput& out) { on_output(ticket, out); });
        first.engine_id = id;
        tickets_.insert(id, ticket);
        requests_.insert(ticket, id);
        stages_.insert(id, {first.stage, first.ahead});
    }
    emit requestUpdated(first);
}

void EngineHost::abort(quint64 ticket) {
    if (!loaded_ || !loaded_->engine) return;
    qint64 id = -1;
    {
        std::lock_guard lock(mutex_);
        id = requests_.value(ticket, -1);
    }
    if (id >= 0) loaded_->engine->abort(id);
}

void EngineHost::on_output(quint64 ticket, const folio::RequestOutput& out) {
    RequestUpdate u;
    u.ticket = ticket;
    u.engine_id = out.id;
    u.set_text(out.text, out.draft_text);
    u.new_tokens = static_cast<int>(out.token_ids.size());
    u.finished = out.finished;
    if (out.finished) u.reason = finish_reason_name(out.reason);
    u.error = QString::fromStdString(out.error);
    u.timings = out.timings;
    {
        std::lock_guard lock(mutex_);
        // The first update of a request with a token in it reports its TTFT.
        if (out.timings.generated_tokens > 0 && !first_token_seen_.contains(out.id)) {
            first_token_seen_.insert(out.id);
            ttft_sum_ += out.timings.ttft_s;
            ++ttft_count_;
        }
        if (out.finished) {
            tickets_.remove(out.id);
            requests_.remove(ticket);
            first_token_seen_.remove(out.id);
        }
        stages_.remove(out.id);  // its first output: it streams from now on
    }
    emit requestUpdated(u);
}

void EngineHost::on_step(std::shared_ptr<const folio::StepEvent> event) {
    std::lock_guard lock(mutex_);
    if (event->spec_sequences > 0) {
        ++spec_.verify_steps;
        spec_.drafts += static_cast<uint64_t>(event->spec_sequences);
        spec_.draft_tokens += static_cast<uint64_t>(event->draft_tokens);
        spec_.accepted_tokens += static_cast<uint64_t>(event->accepted_tokens);
        spec_.draft_s += event->draft_s;
        spec_.verify_s += event->forward_s;
    } else if (event->decode_tokens > 0) {
        ++spec_.plain_decode_steps;
    }
    if (event->decode_tokens > 0) {
        spec_.draft_k = event->draft_k;
        spec_.running = event->running;
    }
    latest_step_ = std::move(event);
    step_pending_ = true;
}

void EngineHost::report_stages(const folio::StepEvent& event) {
    QSet<qint64> holding;  // requests with KV blocks: being read (or already streaming)
    for (const folio::BlockCell& c : event.blocks)
        if (c.owner >= 0) holding.insert(c.owner);
    QVector<RequestUpdate> changed;
    {
        std::lock_guard lock(mutex_);
        for (auto it = stages_.begin(); it != stages_.end(); ++it) {
            Stage now;
            if (holding.contains(it.key())) {
                now.stage = RequestStage::Prefill;
            } else {
                now.stage = RequestStage::Queued;
                // Requests are served first come, first served (the studio gives its chats one priority).
                for (auto t = tickets_.cbegin(); t != tickets_.cend(); ++t)
                    if (t.key() < it.key()) ++now.ahead;
            }
            if (now.stage == it->stage && now.ahead == it->ahead) continue;
            *it = now;
            RequestUpdate u;
            u.ticket = tickets_.value(it.key());
            u.engine_id = it.key();
            u.stage = now.stage;
            u.ahead = now.ahead;
            changed.push_back(u);
        }
    }
    for (const RequestUpdate& u : changed) emit requestUpdated(u);
}

void EngineHost::tick() {
    if (!loaded_ || !loaded_->engine) return;
    {
        BlockMapSnapshot snapshot;
        {
            std::lock_guard lock(mutex_);
            if (step_pending_) {
                snapshot.event = latest_step_;
                snapshot.tickets = tickets_;
                step_pending_ = false;
            }
        }
        if (snapshot.event) {
            emit blockMapUpdated(snapshot);
            report_stages(*snapshot.event);
        }
    }
    if (++ticks_ % 2 != 0) return;

    const folio::EngineMetrics m = loaded_->engine->metrics();
    EngineSample s;
    s.time_s = clock_.elapsed() / 1000.0;
    const CounterReading now{s.time_s, m.prompt_tokens_total, m.generation_tokens_total,
                             m.inter_token_latency_seconds.count(), m.inter_token_latency_seconds.sum()};
    readings_.push_back(now);
    // Rates over the trailing second (the oldest reading at least a second old, when there is one).
    while (readings_.size() > 2 && readings_[1].time_s <= s.time_s - 1.0) readings_.pop_front();
    const CounterReading& then = readings_.front();
    const double dt = s.time_s - then.time_s;
    if (dt > 0) {
        s.prompt_tokens_per_s = static_cast<double>(now.prompt_tokens - then.prompt_tokens) / dt;
        s.generation_tokens_per_s = static_cast<double>(now.generation_tokens - then.generation_tokens) / dt;
    }
    if (now.itl_count > then.itl_count)
        s.inter_token_s = (now.itl_sum - then.itl_sum) / static_cast<double>(now.itl_count - then.itl_count);
    s.kv_usage = m.kv_cache_usage_perc;
    s.running = static_cast<int>(m.num_requests_running);
    s.waiting = static_cast<int>(m.num_requests_waiting);
    s.preemptions_total = m.num_preemptions_total;
    {
        std::lock_guard lock(mutex_);
        if (ttft_count_ > 0) s.ttft_s = ttft_sum_ / ttft_count_;
        ttft_sum_ = 0;
        ttft_count_ = 0;
        s.spec_on = !loaded_->status.speculation.isEmpty();
        if (spec_.verify_steps > 0) {
            const auto steps = static_cast<double>(spec_.verify_steps);
            if (spec_.draft_tokens > 0)
                s.acceptance_rate = static_cast<double>(spec_.accepted_tokens) / static_cast<double>(spec_.draft_tokens);
            s.mean_acceptance_length = 1.0 + static_cast<double>(spec_.accepted_tokens) / static_cast<double>(spec_.drafts);
            s.draft_ms_per_step = 1000.0 * spec_.draft_s / steps;
            s.verify_ms_per_step = 1000.0 * spec_.verify_s / steps;
        }
        s.spec_paused = s.spec_on && spec_.verify_steps == 0 && spec_.plain_decode_steps > 0;
        s.draft_k = spec_.draft_k;
        s.running_batch = spec_.running;
        spec_ = {};
    }
    if (m.spec_decode_num_drafts_total > 0)
        for (const uint64_t accepted : m.spec_decode_num_accepted_tokens_per_pos)
            s.accepted_share_per_position.push_back(static_cast<double>(accepted) /
                                                    static_cast<double>(m.spec_decode_num_drafts_total));
    emit sampled(s);
}

}  // namespace folio::ui
