// Gathers what an Engine streams, per request, for tests: safe to feed from
// the engine thread and read after Engine::wait_idle().
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "folio/engine.h"

struct CollectedRequest {
    std::string text;
    std::vector<int32_t> tokens;
    std::vector<float> logprobs;  // each token's, then its top ids and logprobs, flattened
    int n_outputs = 0;
    int n_finished = 0;  // must end up exactly 1
    folio::FinishReason reason = folio::FinishReason::Length;
    std::string error;
    folio::RequestTimings timings;
};

class EngineCollector {
public:
    // Sample i of a request with n > 1 goes under key + 1000 * i.
    folio::OutputCallback callback(int key) {
        return [this, key](const folio::RequestOutput& out) {
            std::lock_guard lock(mutex_);
            CollectedRequest& r = requests_[key + 1000 * out.index];
            r.text += out.text;
            r.tokens.insert(r.tokens.end(), out.token_ids.begin(), out.token_ids.end());
            for (const folio::SampleInfo& info : out.logprobs) {
                r.logprobs.push_back(info.logprob);
                for (const folio::TokenLogprob& t : info.top)
                    r.logprobs.insert(r.logprobs.end(), {static_cast<float>(t.id), t.logprob});
            }
            ++r.n_outputs;
            if (out.finished) {
                ++r.n_finished;
                r.reason = out.reason;
                r.error = out.error;
                r.timings = out.timings;
            }
        };
    }
    CollectedRequest get(int key) {
        std::lock_guard lock(mutex_);
        return requests_[key];
    }
    size_t size() {
        std::lock_guard lock(mutex_);
        return requests_.size();
    }

private:
    std::mutex mutex_;
    std::map<int, CollectedRequest> requests_;
};

// Keeps the latest step event.
class StepRecorder {
public:
    folio::StepCallback callback() {
        return [this](std::shared_ptr<const folio::StepEvent> e) {
            std::lock_guard lock(mutex_);
            max_running_ = std::max(max_running_, e->running);
            max_swapped_ = std::max(max_swapped_, e->swapped);
            preempted_ += e->preempted;
            last_ = std::move(e);
        };
    }
    std::shared_ptr<const folio::StepEvent> last() {
        std::lock_guard lock(mutex_);
        return last_;
    }
    int max_running() {
        std::lock_guard lock(mutex_);
        return max_running_;
    }
    int preempted() {
        std::lock_guard lock(mutex_);
        return preempted_;
    }
    int max_swapped() {
        std::lock_guard lock(mutex_);
        return max_swapped_;
    }

private:
    std::mutex mutex_;
    std::shared_ptr<const folio::StepEvent> last_;
    int max_running_ = 0, preempted_ = 0, max_swapped_ = 0;
};
