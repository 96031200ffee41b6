#include "prefill_progress.h"

#include <algorithm>
#include <cstdio>
#include <unistd.h>

namespace folio::cli {

namespace {
constexpr std::chrono::milliseconds kFirstAfter{500}, kEvery{500};
}

PrefillProgress::PrefillProgress(const Engine& engine, int64_t prompt_tokens)
    : engine_(engine),
      prompt_tokens_(prompt_tokens),
      counter_at_start_(engine.metrics().prompt_tokens_total),
      started_(std::chrono::steady_clock::now()),
      last_print_(started_),
      tty_(::isatty(STDERR_FILENO) == 1) {}

void PrefillProgress::update() {
    if (finished_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - started_ < kFirstAfter || (shown_ && now - last_print_ < kEvery)) return;
    const uint64_t counted = engine_.metrics().prompt_tokens_total - counter_at_start_;
    print(std::min<int64_t>(static_cast<int64_t>(counted), prompt_tokens_), false);
    last_print_ = now;
}

void PrefillProgress::finish(const RequestTimings& timings) {
    if (finished_) return;
    finished_ = true;
    // Only a line already shown is closed: a short prefill stays silent.
    if (shown_) print(std::max<int64_t>(timings.prompt_tokens, prompt_tokens_), true);
}

void PrefillProgress::print(int64_t done, bool final_line) {
    shown_ = true;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    std::fprintf(stderr, "%sfolio: prompt %lld/%lld tokens (%.1f s)%s", tty_ ? "\r" : "", static_cast<long long>(done),
                 static_cast<long long>(prompt_tokens_), seconds, tty_ && !final_line ? "" : "\n");
    std::fflush(stderr);
}

}  // namespace folio::cli
