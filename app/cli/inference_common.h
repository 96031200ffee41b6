// What the inference verbs (run, chat, perplexity, bench) share: loading a
// model onto the CPU backend with a tokenizer, and the sampling flags.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "folio/backend.h"
#include "folio/chat_template.h"
#include "folio/model.h"
#include "folio/sampling.h"
#include "folio/tokenizer.h"

namespace folio::cli {

struct LoadedModel {
    ModelDescription model;
    Tokenizer tokenizer;
    std::unique_ptr<Backend> backend;
};

// -m, -t, -c from `args`; `default_context` when -c is absent.
Result<std::unique_ptr<LoadedModel>> load_for_inference(const Args& args, uint32_t default_context);

// A float flag within [min, max]; the error names the flag.
Result<float> get_float(const Args& args, const std::string& long_name, float fallback, float min, float max);

// --temp --seed --top-k --top-p --min-p --repeat-penalty --repeat-last-n into params.
Status read_sampling_flags(const Args& args, SamplingParams& params);

// The conversation rendered by the model's chat template (or the built-in
// fallback, announced on stderr when `announce`), ready for generation.
Result<std::string> render_chat(const LoadedModel& m, const std::vector<ChatMessage>& messages, bool announce);
// Tokens of a rendered chat: BOS added unless the template already wrote it.
std::vector<int32_t> tokenize_chat(const LoadedModel& m, const std::string& text);

// The flags above, for a verb's flag table.
std::vector<FlagSpec> model_flags();
std::vector<FlagSpec> sampling_flags();

}  // namespace folio::cli
