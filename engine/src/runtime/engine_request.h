// A request's state on the engine thread (engine.cpp, engine_step.cpp).
#pragma once

#include <string>
#include <vector>

#include "folio/engine.h"

namespace folio {

// A request's state on the engine thread: its sampler, detokenizer and stop
// conditions, what it has streamed, and its clock readings.
struct Engine::Request {
    RequestId id = -1;         // the scheduler's sequence id
    RequestId public_id = -1;  // what submit() returned; shared by the n samples of a request
    int32_t index = 0;         // which of the n samples
    GenerationRequest params;
    OutputCallback on_output;
    Sampler sampler;
    StreamingDecoder decoder;
    StopChecker stop;
    std::vector<int32_t> history;  // prompt and generated tokens, for the penalties
    SampleInfo info;
    RequestTimings timings;
    SpecRoute* spec = nullptr;                // speculative decoding: its proposer (null: none)
    DraftLengthTuner::Acceptance acceptance;  // its recent verdicts, for adaptive K
    std::vector<float> draft_q;  // its drafts' distributions when a draft model sampled them (n_vocab each)
    std::string rejected;  // why submit() could not accept it (reported from the engine thread)
    double submitted_s = 0, scheduled_s = -1, first_token_s = -1, last_token_s = -1;

    Request(RequestId rid, GenerationRequest p, OutputCallback cb, Sampler s, const Tokenizer& tok)
        : id(rid),
          public_id(rid),
          params(std::move(p)),
          on_output(std::move(cb)),
          sampler(std::move(s)),
          decoder(tok, /*skip_control=*/true) {}
};

}  // namespace folio
