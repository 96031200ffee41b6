// int4-self's draft: the target's own matrices quantized at load to a 4-bit
// GGUF type in memory (Q4_1 by default: a block's own minimum and step keep
// skewed rows' resolution, and drafts accept more often than with Q4_0's
// symmetric scale), by the quantizer's block quantizers (folio/quant.h,
// ggml's reference rounding), so a
// full-precision model drafts for itself at a quarter of its weight bytes,
// sharing its tokenizer by construction. As llama.cpp's quantizer does, the
// token embeddings and output head (tied in small models) are kept at 8
// bits (Q8_0): at 4 bits they cost most of the draft's accuracy. Norm
// vectors stay as they are.
#include <algorithm>

#include "folio/dequant.h"
#include "folio/quant.h"
#include "folio/spec.h"

namespace folio {

namespace {

constexpr int64_t kBlock = 32;

bool is_head(const TensorView& t) { return t.name == "token_embd.weight" || t.name == "output.weight"; }

bool is_matrix(const TensorView& t) {
    return t.shape.size() == 2 && t.shape[0] % kBlock == 0 && t.name.find("norm") == std::string::npos &&
           t.type != TensorType::Q4_0 && t.type != TensorType::Q4_1;
}

}  // namespace

Result<std::unique_ptr<InMemoryModel>> quantize_to_4_bits(const ModelDescription& target, TensorType four_bits) {
    if (four_bits != TensorType::Q4_0 && four_bits != TensorType::Q4_1)
        return make_error("int4-self quantizes to Q4_0 or Q4_1");
    auto draft = std::make_unique<InMemoryModel>();
    draft->model = target;  // norms and anything else: the same mapped data
    draft->model.name = target.name + (four_bits == TensorType::Q4_1 ? " (Q4_1" : " (Q4_0") + " in memory, head Q8_0)";
    std::vector<float> row;
    for (TensorView& t : draft->model.tensors) {
        if (!is_matrix(t)) continue;
        const int64_t n = t.n_elements();
        row.resize(static_cast<size_t>(n));
        if (Status s = dequantize(t.type, t.data, t.nbytes, row.data(), n); !s)
            return make_error("int4-self: " + t.name + ": " + s.error().message);
        const TensorType type = is_head(t) ? TensorType::Q8_0 : four_bits;
        std::vector<std::byte>& q = draft->weights.emplace_back(static_cast<size_t>(quantized_size(type, n)));
        if (Status s = quantize_row(type, row, q); !s) return make_error("int4-self: " + t.name + ": " + s.error().message);
        t.type = type;
        t.data = q.data();
        t.nbytes = q.size();
    }
    if (draft->weights.empty()) return make_error("int4-self: the model has no matrices to quantize");
    return draft;
}

}  // namespace folio
