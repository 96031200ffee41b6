// What the Engine suites on a FakeBackend run (test_engine_unit,
// test_engine_spec): prompts over the tiny byte vocabulary, half of them
// sharing a "system prompt" (prefix-cache hits), greedy requests, and the
// check that a step event shows every block free.
#pragma once

#include <algorithm>
#include <random>
#include <vector>

#include "folio/engine.h"

namespace fake_workload {

constexpr int32_t kEos = 265;

inline std::vector<std::vector<int32_t>> make_prompts(int n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> system(21);
    for (auto& t : system) t = static_cast<int32_t>('a' + rng() % 26);
    std::vector<std::vector<int32_t>> prompts;
    for (int i = 0; i < n; ++i) {
        std::vector<int32_t> p;
        if (i % 2 == 0) p = system;  // half share a "system prompt": prefix-cache hits
        const int extra = 1 + static_cast<int>(rng() % 40);
        for (int k = 0; k < extra; ++k) p.push_back(static_cast<int32_t>('a' + rng() % 26));
        prompts.push_back(p);
    }
    return prompts;
}

inline folio::GenerationRequest greedy(const std::vector<int32_t>& prompt, int32_t max_tokens) {
    folio::GenerationRequest r;
    r.prompt_tokens = prompt;
    r.sampling.temperature = 0;
    r.max_tokens = max_tokens;
    return r;
}

inline bool all_free(const folio::StepEvent& e) {
    return std::all_of(e.blocks.begin(), e.blocks.end(), [](const folio::BlockCell& c) { return c.ref_count == 0; });
}

}  // namespace fake_workload
