// Progress of a long prompt's prefill on stderr ("prompt 512/1162 tokens"),
// for the verbs that stream one reply (run, chat): a prompt of thousands of
// tokens takes seconds on a CPU before the first token, and a silent
// terminal looks hung. Nothing is printed for a prefill shorter than half a
// second; on a terminal the line is rewritten in place, elsewhere (a pipe, a
// log) one line per update.
#pragma once

#include <chrono>
#include <cstdint>

#include "folio/engine.h"

namespace folio::cli {

class PrefillProgress {
public:
    // `prompt_tokens`: the request's prompt; `engine`: where its prefill is
    // counted (the engine's prompt-token counter; the CLI runs one reply at a time).
    PrefillProgress(const Engine& engine, int64_t prompt_tokens);
    // Called while waiting for the first token: prints when due.
    void update();
    // The first token came (or the request ended): closes the line if one was shown.
    void finish(const RequestTimings& timings);

private:
    void print(int64_t done, bool final_line);

    const Engine& engine_;
    int64_t prompt_tokens_;
    uint64_t counter_at_start_;
    std::chrono::steady_clock::time_point started_, last_print_;
    bool shown_ = false, finished_ = false, tty_ = false;
};

}  // namespace folio::cli
