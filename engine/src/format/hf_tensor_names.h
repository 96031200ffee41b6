// Hugging Face tensor names ("model.layers.3.self_attn.q_proj.weight") turned
// into the GGUF names the rest of Folio uses ("blk.3.attn_q.weight"), so a
// model reads the same whichever form it was loaded from.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace folio::hf {

// The GGUF name of a Hugging Face tensor for `architecture` ("llama", "qwen2",
// "gemma3"), or nullopt when the mapping does not know the tensor.
std::optional<std::string> gguf_tensor_name(std::string_view hf_name, std::string_view architecture);

// Tensors that checkpoints sometimes carry but that are not weights
// (precomputed RoPE frequencies): skipped rather than refused.
bool is_ignored_tensor(std::string_view hf_name);

}  // namespace folio::hf
