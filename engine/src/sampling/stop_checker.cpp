// Stop strings over streamed text.
//
// Invariant: no stop string lies wholly inside the text already let through,
// and the held-back text `pending_` starts at the earliest place from which
// the text so far could still grow into a stop string. So an occurrence can
// only begin inside `pending_`, and searching it alone is enough.
#include <algorithm>
#include <string>
#include <utility>

#include "folio/sampling.h"

namespace folio {

StopChecker::StopChecker(std::vector<int32_t> stop_token_ids, std::vector<std::string> stop_strings)
    : stop_token_ids_(std::move(stop_token_ids)) {
    for (auto& stop : stop_strings) {
        if (stop.empty()) continue;
        longest_stop_ = std::max(longest_stop_, stop.size());
        stop_strings_.push_back(std::move(stop));
    }
}

bool StopChecker::is_stop_token(int32_t id) const {
    return std::find(stop_token_ids_.begin(), stop_token_ids_.end(), id) != stop_token_ids_.end();
}

StopUpdate StopChecker::push(std::string_view text_delta) {
    StopUpdate update;
    if (stopped_) {
        update.stopped = true;
        return update;
    }
    if (stop_strings_.empty()) {
        update.text.assign(text_delta);
        return update;
    }
    pending_.append(text_delta);

    // The earliest complete stop string; the first listed wins a tie.
    size_t first_at = std::string::npos;
    const std::string* first_stop = nullptr;
    for (const auto& stop : stop_strings_) {
        const size_t at = pending_.find(stop);
        if (at < first_at) {
            first_at = at;
            first_stop = &stop;
        }
    }
    if (first_stop) {
        update.text = pending_.substr(0, first_at);
        update.stopped = true;
        update.reason = FinishReason::StopString;
        update.matched = *first_stop;
        stopped_ = true;
        pending_.clear();
        return update;
    }

    // Hold back the longest suffix that is a proper prefix of some stop string.
    const size_t size = pending_.size();
    size_t hold_from = size;
    for (size_t start = size - std::min(size, longest_stop_ - 1); start < size; ++start) {
        const std::string_view tail = std::string_view(pending_).substr(start);
        const bool could_grow = std::any_of(stop_strings_.begin(), stop_strings_.end(), [&](const std::string& stop) {
            return stop.size() > tail.size() && std::string_view(stop).substr(0, tail.size()) == tail;
        });
        if (could_grow) {
            hold_from = start;
            break;
        }
    }
    update.text = pending_.substr(0, hold_from);
    pending_.erase(0, hold_from);
    return update;
}

std::string StopChecker::flush() {
    std::string rest;
    rest.swap(pending_);
    return rest;
}

}  // namespace folio
