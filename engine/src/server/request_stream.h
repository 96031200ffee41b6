// What the engine streams for one HTTP request, handed from the engine
// thread (its output callbacks) to the HTTP thread that answers. One HTTP
// request may be several engine requests (a completions batch of prompts),
// each with n samples: choice = prompt * n + sample, as OpenAI numbers them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "folio/engine.h"

namespace folio::server {

class RequestStream : public std::enable_shared_from_this<RequestStream> {
public:
    struct Update {
        int32_t choice = 0;
        RequestOutput output;
    };

    RequestStream(size_t n_prompts, int32_t n) : n_(n), prompts_(n_prompts) {}

    // The engine callback for prompt `prompt`; it keeps the stream alive.
    OutputCallback callback(size_t prompt) {
        return [self = shared_from_this(), prompt](const RequestOutput& out) { self->push(prompt, out); };
    }

    // Moves what arrived into `out`, waiting up to `timeout` when nothing
    // has. True once every engine request has finished (and all is taken).
    bool take(std::vector<Update>& out, std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        if (updates_.empty() && !all_done_locked()) changed_.wait_for(lock, timeout);
        while (!updates_.empty()) {
            out.push_back(std::move(updates_.front()));
            updates_.pop_front();
        }
        return all_done_locked();
    }

private:
    struct PromptState {
        std::vector<bool> seen, finished;  // per sample index
        bool done = false;
    };

    void push(size_t prompt, const RequestOutput& out) {
        {
            std::lock_guard lock(mutex_);
            PromptState& p = prompts_[prompt];
            if (p.seen.empty()) {
                p.seen.assign(static_cast<size_t>(n_), false);
                p.finished.assign(static_cast<size_t>(n_), false);
            }
            const size_t index = static_cast<size_t>(out.index) < p.seen.size() ? static_cast<size_t>(out.index) : 0;
            p.seen[index] = true;
            if (out.finished) p.finished[index] = true;
            // A request aborted or failed before its first token never forks
            // its other samples: it is done when every sample seen so far is.
            bool all = true, all_seen = true;
            for (size_t i = 0; i < p.seen.size(); ++i) {
                all = all && p.finished[i];
                all_seen = all_seen && (!p.seen[i] || p.finished[i]);
            }
            const bool ended_early = out.finished && (out.reason == FinishReason::Abort || out.reason == FinishReason::Error);
            if (all || (ended_early && all_seen)) p.done = true;
            updates_.push_back({static_cast<int32_t>(prompt) * n_ + static_cast<int32_t>(index), out});
        }
        changed_.notify_all();
    }

    bool all_done_locked() const {
        if (!updates_.empty()) return false;
        for (const PromptState& p : prompts_)
            if (!p.done) return false;
        return true;
    }

    const int32_t n_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<Update> updates_;
    std::vector<PromptState> prompts_;
};

}  // namespace folio::server
