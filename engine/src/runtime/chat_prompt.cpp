#include "folio/chat_prompt.h"

namespace folio {

Result<std::vector<int32_t>> chat_prompt_tokens(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                                std::span<const ChatMessage> messages) {
    ChatTemplateInputs inputs;
    inputs.messages.assign(messages.begin(), messages.end());
    inputs.add_generation_prompt = true;
    if (tokenizer.bos_id() >= 0) inputs.bos_token = tokenizer.token_text(tokenizer.bos_id());
    if (tokenizer.eos_id() >= 0) inputs.eos_token = tokenizer.token_text(tokenizer.eos_id());
    auto text = chat_template.render(inputs);
    if (!text) return make_error("chat template: " + text.error().message);
    const bool has_bos = tokenizer.bos_id() >= 0 && text->rfind(inputs.bos_token, 0) == 0;
    std::vector<int32_t> ids = tokenizer.encode(*text, /*add_special=*/!has_bos, /*parse_special=*/true);
    if (ids.empty()) return make_error("the conversation has no tokens");
    return ids;
}

}  // namespace folio
