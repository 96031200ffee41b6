#include "ui/chat_controller.h"

#include "ui/engine_bridge.h"

namespace folio::ui {

namespace {

// The update's text onto the reply, its drafted ranges moved to the reply's
// offsets (one that begins where the last ended extends it).
void append_reply_text(ChatMessageRecord& reply, const RequestUpdate& u) {
    const int offset = static_cast<int>(reply.content.size());
    reply.content += u.text;
    for (const auto& [begin, end] : u.draft_ranges) {
        if (!reply.draft_ranges.isEmpty() && reply.draft_ranges.back().second == offset + begin)
            reply.draft_ranges.back().second = offset + end;
        else
            reply.draft_ranges.push_back({offset + begin, offset + end});
    }
}

}  // namespace

ChatController::ChatController(EngineBridge* bridge, SessionStore store, QObject* parent)
    : QObject(parent), bridge_(bridge), store_(std::move(store)) {
    QString error;
    sessions_ = store_.load(&error);
    if (!error.isEmpty()) last_error_ = error;
    save_timer_.setSingleShot(true);
    connect(&save_timer_, &QTimer::timeout, this, &ChatController::saveNow);
    connect(bridge_, &EngineBridge::requestUpdated, this, &ChatController::onUpdate);
}

ChatController::~ChatController() {
    if (save_timer_.isActive()) saveNow();
}

const ChatSession* ChatController::session(const QString& id) const {
    const int i = indexOf(id);
    return i < 0 ? nullptr : &sessions_[i];
}

ChatSession* ChatController::find(const QString& id) {
    const int i = indexOf(id);
    return i < 0 ? nullptr : &sessions_[i];
}

int ChatController::indexOf(const QString& id) const {
    for (int i = 0; i < sessions_.size(); ++i)
        if (sessions_[i].id == id) return i;
    return -1;
}

QString ChatController::createSession(const QString& title) {
    ChatSession s = ChatSession::create(title.isEmpty() ? tr("New chat") : title);
    if (!sessions_.isEmpty()) {
        // A new chat starts with the settings of the one before it.
        s.system_prompt = sessions_.back().system_prompt;
        s.sampling = sessions_.back().sampling;
    }
    sessions_.push_back(s);
    emit sessionAdded(s.id);
    scheduleSave(0);
    return s.id;
}

void ChatController::removeSession(const QString& id) {
    const int i = indexOf(id);
    if (i < 0) return;
    stop(id);
    sessions_.removeAt(i);
    emit sessionRemoved(id);
    scheduleSave(0);
}

void ChatController::renameSession(const QString& id, const QString& title) {
    ChatSession* s = find(id);
    if (!s || title.trimmed().isEmpty() || s->title == title) return;
    s->title = title.trimmed();
    emit sessionChanged(id);
    scheduleSave(200);
}

void ChatController::setSystemPrompt(const QString& id, const QString& prompt) {
    ChatSession* s = find(id);
    if (!s || s->system_prompt == prompt) return;
    s->system_prompt = prompt;
    emit sessionChanged(id);
    scheduleSave(500);
}

void ChatController::setSampling(const QString& id, const SamplingSettings& sampling) {
    ChatSession* s = find(id);
    if (!s || s->sampling == sampling) return;
    s->sampling = sampling;
    emit sessionChanged(id);
    scheduleSave(500);
}

void ChatController::setOverflow(const QString& id, folio::ChatOverflow overflow) {
    ChatSession* s = find(id);
    if (!s || s->overflow == overflow) return;
    s->overflow = overflow;
    emit sessionChanged(id);
    scheduleSave(500);
}

void ChatController::applyPreset(const QString& id, const ChatPreset& preset) {
    ChatSession* s = find(id);
    if (!s) return;
    s->system_prompt = preset.system_prompt;
    s->sampling = preset.sampling;
    s->overflow = preset.overflow;
    s->preset = preset.name;
    emit sessionChanged(id);
    scheduleSave(0);
}

void ChatController::setPresetName(const QString& id, const QString& name) {
    ChatSession* s = find(id);
    if (!s || s->preset == name) return;
    s->preset = name;
    emit sessionChanged(id);
    scheduleSave(500);
}

bool ChatController::send(const QString& id, const QString& text) {
    ChatSession* s = find(id);
    if (!s || text.trimmed().isEmpty()) return false;
    stop(id);
    ChatMessageRecord user;
    user.role = "user";
    user.content = text;
    user.created = QDateTime::currentDateTimeUtc();
    if (s->messages.isEmpty() && (s->title == tr("New chat") || s->title.isEmpty())) {
        s->title = text.simplified().left(48);
        emit sessionChanged(id);
    }
    s->messages.push_back(user);
    return startReply(*s);
}

bool ChatController::regenerate(const QString& id) {
    ChatSession* s = find(id);
    if (!s) return false;
    stop(id);
    while (!s->messages.isEmpty() && s->messages.back().role != "user") s->messages.pop_back();
    if (s->messages.isEmpty()) return false;
    return startReply(*s);
}

bool ChatController::editAndResend(const QString& id, int index, const QString& text) {
    ChatSession* s = find(id);
    if (!s || index < 0 || index >= s->messages.size() || s->messages[index].role != "user" || text.trimmed().isEmpty())
        return false;
    stop(id);
    s->messages.resize(index + 1);
    s->messages[index].content = text;
    s->messages[index].created = QDateTime::currentDateTimeUtc();
    return startReply(*s);
}

bool ChatController::startReply(ChatSession& s) {
    ChatRequest request;
    if (!s.system_prompt.trimmed().isEmpty()) request.messages.push_back({"system", s.system_prompt.toStdString(), ""});
    for (const ChatMessageRecord& m : s.messages) {
        // Failed or empty replies are not part of the conversation the model sees.
        if (m.role == "assistant" && (m.finish_reason == "error" || m.content.isEmpty())) continue;
        request.messages.push_back({m.role.toStdString(), m.content.toStdString(), ""});
    }
    request.sampling = s.sampling.to_params();
    request.max_tokens = s.sampling.max_tokens;
    request.overflow = s.overflow;
    request.speculation = s.sampling.speculation;
    request.draft_max = s.sampling.draft_max;

    ChatMessageRecord reply;
    reply.role = "assistant";
    reply.created = QDateTime::currentDateTimeUtc();
    // The engine host takes the request once the load in progress is done.
    if (bridge_->isLoading()) reply.waiting = ChatMessageRecord::Waiting::Model;
    s.messages.push_back(reply);
    s.updated = reply.created;

    const quint64 ticket = bridge_->submit(std::move(request));
    active_.insert(s.id, ticket);
    ticket_session_.insert(ticket, s.id);
    emit messagesReset(s.id);
    emit generatingChanged(s.id, true);
    scheduleSave(0);
    return true;
}

void ChatController::stop(const QString& id) {
    const auto it = active_.find(id);
    if (it == active_.end()) return;
    bridge_->abort(it.value());
    // The reply ends here; whatever the engine still sends for it is dropped.
    const quint64 ticket = it.value();
    active_.erase(it);
    ChatSession* s = find(id);
    if (s && !s->messages.isEmpty() && s->messages.back().generating()) {
        s->messages.back().finish_reason = finish_reason_name(folio::FinishReason::Abort);
        emit messageUpdated(id, static_cast<int>(s->messages.size()) - 1);
    }
    Q_UNUSED(ticket);
    emit generatingChanged(id, false);
    scheduleSave(0);
}

void ChatController::onUpdate(const RequestUpdate& u) {
    const QString id = ticket_session_.value(u.ticket);
    if (id.isEmpty() || active_.value(id) != u.ticket) return;  // a reply that was stopped or replaced
    ChatSession* s = find(id);
    if (!s || s->messages.isEmpty() || !s->messages.back().generating()) return;
    ChatMessageRecord& m = s->messages.back();
    if (u.dropped_messages > 0) {
        m.dropped_messages = u.dropped_messages;
        m.full_prompt_tokens = u.full_prompt_tokens;
        m.context_tokens = u.context_tokens;
    }
    if (u.stage != RequestStage::Streaming) {
        m.waiting = u.stage == RequestStage::Loading  ? ChatMessageRecord::Waiting::Model
                    : u.stage == RequestStage::Queued ? ChatMessageRecord::Waiting::Queue
                                                      : ChatMessageRecord::Waiting::Prompt;
        m.waiting_ahead = u.ahead;
        emit messageUpdated(id, static_cast<int>(s->messages.size()) - 1);
        return;
    }
    append_reply_text(m, u);
    const folio::RequestTimings& t = u.timings;
    m.has_stats = true;
    m.stats.queue_s = t.queue_s;
    m.stats.ttft_s = t.ttft_s;
    m.stats.e2e_s = t.e2e_s;
    m.stats.prompt_tokens = t.prompt_tokens;
    m.stats.cached_prompt_tokens = t.cached_prompt_tokens;
    m.stats.generated_tokens = t.generated_tokens;
    m.stats.preemptions = t.preemptions;
    m.stats.truncated_tokens = t.truncated_tokens;
    m.stats.prefill_tokens_per_s = t.prefill_tokens_per_s();
    m.stats.n_drafts = t.n_drafts;
    m.stats.draft_tokens = t.draft_tokens;
    m.stats.accepted_tokens = t.accepted_tokens;
    m.stats.plain_decode_tokens_per_s = t.draft_tokens > 0 ? plain_decode_tokens_per_s_ : 0;
    if (u.finished) {
        m.stats.decode_tokens_per_s = t.decode_tokens_per_s();
        if (t.n_drafts == 0 && t.generated_tokens >= 8 && u.reason != "error")
            plain_decode_tokens_per_s_ = m.stats.decode_tokens_per_s;
        m.finish_reason = u.reason;
        m.error = u.error;
        active_.remove(id);
    } else if (t.generated_tokens > 1) {
        // Cumulative rate so far: e2e is only final at the finish, so use the reply's age.
        const double elapsed = m.created.msecsTo(QDateTime::currentDateTimeUtc()) / 1000.0;
        const double decode_time = elapsed - t.ttft_s;
        if (decode_time > 0) m.stats.decode_tokens_per_s = (t.generated_tokens - 1) / decode_time;
    }
    s->updated = QDateTime::currentDateTimeUtc();
    emit messageUpdated(id, static_cast<int>(s->messages.size()) - 1);
    if (u.finished) {
        if (!u.error.isEmpty()) emit errorOccurred(u.error);
        emit generatingChanged(id, false);
        scheduleSave(0);
    } else {
        scheduleSave(1000);
    }
}

void ChatController::scheduleSave(int delay_ms) {
    if (save_timer_.isActive() && save_timer_.remainingTime() <= delay_ms) return;
    save_timer_.start(delay_ms);
}

bool ChatController::saveNow() {
    save_timer_.stop();
    QString error;
    if (!store_.save(sessions_, &error)) {
        last_error_ = error;
        emit errorOccurred(error);
        return false;
    }
    return true;
}

}  // namespace folio::ui
