// SamplingParams checks, finish reasons, and the penalties (pipeline step 1).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "folio/sampling.h"

namespace folio {

std::string_view to_string(FinishReason reason) {
    switch (reason) {
        case FinishReason::Stop: return "stop";
        case FinishReason::StopString: return "stop_string";
        case FinishReason::Length: return "length";
        case FinishReason::Abort: return "abort";
        case FinishReason::Error: return "error";
    }
    return "error";
}

namespace {

std::string show(double value) {
    char text[64];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
}

Error out_of_range(const char* field, double value, const char* allowed) {
    return make_error(std::string("sampling: ") + field + " is " + show(value) + "; " + allowed);
}

}  // namespace

Status SamplingParams::validate() const {
    // NaN fails every comparison, so each test is written as "inside the range".
    if (!(std::isfinite(temperature) && temperature >= 0.0f))
        return out_of_range("temperature", temperature, "it must be 0 (greedy) or a positive number");
    if (top_k < 0) return out_of_range("top_k", top_k, "it must be 0 (off) or a positive count");
    if (!(top_p > 0.0f && top_p <= 1.0f))
        return out_of_range("top_p", top_p, "it must be in (0, 1]; 1 turns it off");
    if (!(min_p >= 0.0f && min_p <= 1.0f))
        return out_of_range("min_p", min_p, "it must be in [0, 1]; 0 turns it off");
    if (!(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f))
        return out_of_range("repetition_penalty", repetition_penalty,
                            "it must be a positive number; 1 turns it off");
    if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f))
        return out_of_range("frequency_penalty", frequency_penalty, "it must be in [-2, 2]; 0 turns it off");
    if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f))
        return out_of_range("presence_penalty", presence_penalty, "it must be in [-2, 2]; 0 turns it off");
    if (penalty_last_n < -1)
        return out_of_range("penalty_last_n", penalty_last_n,
                            "it must be -1 (the whole context), 0 (off) or a positive count");
    if (n_logprobs < 0) return out_of_range("n_logprobs", n_logprobs, "it must be 0 (none) or a positive count");
    return {};
}

bool SamplingParams::has_penalties() const {
    return penalty_last_n != 0 &&
           (repetition_penalty != 1.0f || frequency_penalty != 0.0f || presence_penalty != 0.0f);
}

namespace {

// fn(id, count) for each distinct token of the penalty window, in id order.
template <typename Fn>
void for_each_penalized(std::span<const int32_t> recent_tokens, const SamplingParams& params,
                        std::vector<int32_t>& scratch, Fn&& fn) {
    if (!params.has_penalties() || recent_tokens.empty()) return;
    size_t window = recent_tokens.size();
    if (params.penalty_last_n > 0) window = std::min(window, static_cast<size_t>(params.penalty_last_n));
    const auto tokens = recent_tokens.last(window);

    // Sorting a copy groups equal ids: counts without a hash map or a
    // vocabulary-sized table.
    scratch.assign(tokens.begin(), tokens.end());
    std::sort(scratch.begin(), scratch.end());
    for (size_t begin = 0; begin < scratch.size();) {
        size_t end = begin;
        while (end < scratch.size() && scratch[end] == scratch[begin]) ++end;
        fn(scratch[begin], static_cast<float>(end - begin));
        begin = end;
    }
}

}  // namespace

void apply_penalties(std::span<float> logits, std::span<const int32_t> recent_tokens,
                     const SamplingParams& params, std::vector<int32_t>& scratch) {
    const auto vocab = static_cast<int64_t>(logits.size());
    for_each_penalized(recent_tokens, params, scratch, [&](int32_t id, float count) {
        if (id < 0 || id >= vocab) return;
        float& logit = logits[static_cast<size_t>(id)];
        logit = penalized_logit(logit, count, params);
    });
}

void penalty_counts(std::span<const int32_t> recent_tokens, const SamplingParams& params,
                    std::vector<int32_t>& scratch, std::vector<int32_t>& ids, std::vector<float>& counts) {
    for_each_penalized(recent_tokens, params, scratch, [&](int32_t id, float count) {
        ids.push_back(id);
        counts.push_back(count);
    });
}

float penalized_logit(float logit, float count, const SamplingParams& params) {
    // llama.cpp's order and arithmetic (llama_sampler_penalties_apply).
    if (logit <= 0.0f) {
        logit *= params.repetition_penalty;
    } else {
        logit /= params.repetition_penalty;
    }
    return logit - (count * params.frequency_penalty + params.presence_penalty);
}

}  // namespace folio
