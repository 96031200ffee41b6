// What a draft model must share with the target (its vocabulary), and the
// layer-skip draft made from the target's own description.
#include <string>

#include "folio/spec.h"

namespace folio {

Status check_draft_vocabulary(const Tokenizer& target, const Tokenizer& draft) {
    const std::string why = "the draft model's vocabulary is not the target's: ";
    if (target.vocab_size() != draft.vocab_size())
        return make_error(why + "it has " + std::to_string(draft.vocab_size()) + " tokens, the target " +
                          std::to_string(target.vocab_size()));
    const std::pair<const char*, int32_t (Tokenizer::*)() const> specials[] = {
        {"BOS", &Tokenizer::bos_id}, {"EOS", &Tokenizer::eos_id}, {"EOT", &Tokenizer::eot_id}};
    for (const auto& [name, id] : specials)
        if ((target.*id)() != (draft.*id)())
            return make_error(why + "its " + name + " token is " + std::to_string((draft.*id)()) + ", the target's " +
                              std::to_string((target.*id)()));
    for (int32_t t = 0; t < target.vocab_size(); ++t)
        if (target.token_text(t) != draft.token_text(t) || target.is_control(t) != draft.is_control(t))
            return make_error(why + "token " + std::to_string(t) + " is '" + draft.token_text(t) + "', the target's '" +
                              target.token_text(t) + "'");
    return {};
}

Result<ModelDescription> layer_skip_model(const ModelDescription& target, uint32_t n_layers) {
    if (n_layers == 0 || n_layers >= target.hparams.n_layer)
        return make_error("--draft-layers must be between 1 and " + std::to_string(target.hparams.n_layer - 1) +
                          " (the target has " + std::to_string(target.hparams.n_layer) + " layers), not " +
                          std::to_string(n_layers));
    ModelDescription draft = target;  // the same mapped weights
    draft.hparams.n_layer = n_layers;
    draft.name = target.name + " (first " + std::to_string(n_layers) + " layers)";
    // The architectures read blk.<l> for l < n_layer only; the later layers'
    // tensors are left out so that nothing (a GPU upload) takes them.
    std::erase_if(draft.tensors, [&](const TensorView& t) {
        if (t.name.rfind("blk.", 0) != 0) return false;
        return std::stoul(t.name.substr(4)) >= n_layers;
    });
    return draft;
}

}  // namespace folio
