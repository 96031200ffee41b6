// The in-memory description of a model, the same whichever file form it came
// from (a GGUF file or a Hugging Face folder): architecture and
// hyper-parameters, tensors as zero-copy views into mapped files, tokenizer
// and chat template. load_model_description() is the one entry point.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "folio/error.h"
#include "folio/mapped_file.h"
#include "folio/tensor_type.h"
#include "folio/tokenizer_spec.h"

namespace folio {

// How RoPE pairs the dimensions of a head. GGUF `llama` files store Q/K rows
// permuted so that interleaved pairs (2i, 2i+1) are rotated together (GGML's
// "normal" mode); Hugging Face weights rotate (i, i + d/2) ("rotate_half",
// GGML's NEOX mode). Gemma uses split halves in both forms.
enum class RopeStyle { Interleaved, SplitHalf };

struct HParams {
    std::string architecture;       // "llama", "gemma3", ... (GGUF general.architecture)
    uint32_t n_vocab = 0;
    uint32_t n_ctx_train = 0;
    uint32_t n_embd = 0;
    uint32_t n_layer = 0;
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;          // key/value length per head
    uint32_t n_ff = 0;
    float rms_norm_eps = 1e-5f;
    float rope_freq_base = 10000.0f;
    float rope_freq_base_swa = 0.0f;      // sliding-window layers' own base (gemma3: 10000), 0 = same
    float rope_scale_linear = 1.0f;       // positions are divided by this
    // YaRN (GGUF rope.scaling.type = yarn, HF rope_type "yarn"): the context
    // extension factor; 0 = none. Trained at rope_orig_context, magnitude
    // times rope_attn_factor (model::yarn_rope computes the rest).
    float rope_yarn_factor = 0.0f;
    // Llama 3.1's RoPE frequency factors: pair i turns at base^(-2i/head_dim)
    // divided by factor i (head_dim / 2 values; empty = none). GGUF files
    // carry them as the tensor rope_freqs.weight; Hugging Face folders as
    // rope_scaling {"rope_type": "llama3", ...}, from which they are computed.
    std::vector<float> rope_freq_factors;
    // Phi-3's LongRoPE (its 128k variants): two sets of such divisors, the
    // long ones for a context longer than rope_orig_context (the one the
    // model was trained at before its extension), the short ones otherwise,
    // as llama.cpp chooses; GGUF rope_factors_long.weight /
    // rope_factors_short.weight. Empty = none.
    std::vector<float> rope_factors_long, rope_factors_short;
    uint32_t rope_orig_context = 0;       // rope.scaling.original_context_length; 0 = n_ctx_train
    // Multiplies RoPE's cos and sin, so q·k by its square (GGUF
    // rope.scaling.attn_factor; LongRoPE: sqrt(1 + ln(n_ctx_train / orig) / ln(orig))).
    float rope_attn_factor = 1.0f;
    RopeStyle rope_style = RopeStyle::Interleaved;
    uint32_t sliding_window = 0;          // 0 = no sliding-window layers
    uint32_t sliding_window_pattern = 0;  // every Nth layer is global (gemma3: 6); 0 = none
    float final_logit_softcap = 0.0f;     // 0 = off
    float attn_logit_softcap = 0.0f;      // 0 = off
    float query_pre_attn_scalar = 0.0f;   // 0 = head_dim (attention scale 1/sqrt of it)
    bool tied_embeddings = false;         // output projection reuses token_embd
    // Hugging Face Gemma checkpoints store RMSNorm weights as w - 1 (the layer
    // scales by 1 + w); GGUF converters add the 1. Added to every *_norm weight.
    float norm_weight_offset = 0.0f;
    // Mixture of experts (Mixtral's `llama` files, qwen3moe): every layer's
    // FFN is n_expert experts of hidden width n_ff_expert, of which a router
    // picks n_expert_used per token; n_expert 0 = a dense FFN of n_ff.
    uint32_t n_expert = 0;
    uint32_t n_expert_used = 0;
    uint32_t n_ff_expert = 0;
    bool expert_weights_norm = true;      // the chosen experts' probabilities renormalised to sum to 1
};

// A tensor as stored: GGML dimension order (shape[0] is the contiguous one,
// i.e. in_features for a weight matrix), data pointing into a mapped file.
struct TensorView {
    std::string name;               // GGUF naming: "blk.0.attn_q.weight"
    TensorType type = TensorType::F32;
    std::vector<int64_t> shape;
    const std::byte* data = nullptr;
    uint64_t nbytes = 0;

    int64_t n_elements() const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return n;
    }
};

enum class SourceFormat { Gguf, HuggingFaceFolder };

struct ModelDescription {
    std::string path;
    SourceFormat format = SourceFormat::Gguf;
    std::string name;                     // general.name, or the folder name
    HParams hparams;
    std::vector<TensorView> tensors;      // in file order
    TokenizerSpec tokenizer;
    std::string chat_template;            // Jinja source; empty when the model has none
    std::vector<std::shared_ptr<const MappedFile>> storage;  // keeps tensor data alive
    // A dummy model (--load-format dummy) whose matrices were not generated
    // on the host: their data is reserved address space (reads as zeros) and
    // a GPU backend fills them with random values from random_seed.
    bool random_weights = false;
    uint64_t random_seed = 0;

    const TensorView* find_tensor(std::string_view tensor_name) const;
    uint64_t weight_bytes() const;
    // The weight bytes one decode token reads: weight_bytes(), save that of
    // each layer's stacked experts (ffn_*_exps) only n_expert_used of
    // n_expert count, and of an untied embedding table one row.
    uint64_t active_weight_bytes() const;
    // KV cache bytes for one token across all layers, at `element_bytes` per value (F16: 2).
    uint64_t kv_bytes_per_token(uint32_t element_bytes = 2) const;
};

// --load-format dummy: a model of a named shape with random weights, for
// measuring speed at real sizes without a file. Matrices are of `type`,
// norms F32 1.0 (plus noise); the tokenizer is SentencePiece with byte
// fallback (every text encodes). `on_host`: the weights are generated in
// memory (any backend runs them, identically); otherwise only reserved, and
// a GPU backend generates them on the device (random_weights).
struct DummyModelOptions {
    std::string shape;                  // dummy_model_shapes()
    TensorType type = TensorType::F16;
    bool on_host = true;
    uint64_t seed = 1;
};
Result<ModelDescription> make_dummy_model(const DummyModelOptions& options);

// The tokenizer of a model without a vocabulary (a dummy model, or a GGUF
// whose tokenizer.ggml.model is "none", as llama.cpp's benchmark files are):
// <unk> <s> </s>, the 256 byte tokens, then numbered unused tokens up to
// n_vocab. Every text encodes (as bytes); it is for measuring speed, not for
// reading what the model says. n_vocab >= kByteVocabularyMin.
inline constexpr uint32_t kByteVocabularyMin = 3 + 256;
TokenizerSpec byte_vocabulary(uint32_t n_vocab);
// "llama-3-8b, llama-3.2-1b, ..." for messages.
std::string dummy_model_shapes();

// Reads a GGUF file or a Hugging Face folder (config.json + *.safetensors +
// tokenizer.json). Every count, shape and offset is validated first.
Result<ModelDescription> load_model_description(const std::string& path);

}  // namespace folio
