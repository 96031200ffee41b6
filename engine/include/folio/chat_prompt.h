// A conversation turned into the prompt a model continues: rendered through
// its chat template with the tokenizer's BOS/EOS texts and a generation
// prompt, then tokenized with control tokens parsed; BOS is added unless
// the template already wrote it. One place for the CLI, the studio and
// (later) the server, so the three send the model the same tokens.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "folio/chat_template.h"
#include "folio/error.h"
#include "folio/tokenizer.h"

namespace folio {

Result<std::vector<int32_t>> chat_prompt_tokens(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                                std::span<const ChatMessage> messages);

}  // namespace folio
