// int4-self's draft: the target's own matrices quantized at load to a 4-bit
// GGUF type in memory (Q4_1 by default; Q4_0 too), with ggml's reference
// rounding (Q4_0: d = the signed value of largest magnitude / -8, q = x / d
// + 8.5 truncated, clamped to 15; Q4_1 below), so a
// full-precision model drafts for itself at a quarter of its weight bytes,
// sharing its tokenizer by construction. As llama.cpp's quantizer does, the
// token embeddings and output head (tied in small models) are kept at 8
// bits (Q8_0): at 4 bits they cost most of the draft's accuracy. Norm
// vectors stay as they are.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "folio/dequant.h"
#include "folio/spec.h"

namespace folio {

namespace {

constexpr int64_t kBlock = 32;
constexpr size_t kBlockBytes = 18;  // fp16 scale + 16 bytes of nibbles

void quantize_q4_0(const float* x, int64_t n, std::byte* out) {
    for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock, out += kBlockBytes) {
        float amax = 0.0f, max = 0.0f;
        for (int64_t i = 0; i < kBlock; ++i)
            if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t d16 = fp32_to_fp16(d);
        std::memcpy(out, &d16, 2);
        for (int64_t j = 0; j < kBlock / 2; ++j) {
            const auto q0 = static_cast<uint8_t>(std::min(15, static_cast<int>(x[j] * id + 8.5f)));
            const auto q1 = static_cast<uint8_t>(std::min(15, static_cast<int>(x[j + kBlock / 2] * id + 8.5f)));
            out[2 + j] = static_cast<std::byte>(q0 | (q1 << 4));
        }
    }
}

// Q4_1 (x = d q + m, ggml's reference rounding): a block's own minimum
// and step, so skewed rows keep their resolution; drafts accept more often
// than Q4_0's symmetric scale lets them.
constexpr size_t kQ4_1Bytes = 20;  // fp16 step, fp16 minimum, 16 bytes of nibbles
void quantize_q4_1(const float* x, int64_t n, std::byte* out) {
    for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock, out += kQ4_1Bytes) {
        float lo = x[0], hi = x[0];
        for (int64_t i = 1; i < kBlock; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
        const float d = (hi - lo) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t d16 = fp32_to_fp16(d), m16 = fp32_to_fp16(lo);
        std::memcpy(out, &d16, 2);
        std::memcpy(out + 2, &m16, 2);
        for (int64_t j = 0; j < kBlock / 2; ++j) {
            const auto q0 = static_cast<uint8_t>(std::min(15, static_cast<int>((x[j] - lo) * id + 0.5f)));
            const auto q1 = static_cast<uint8_t>(std::min(15, static_cast<int>((x[j + kBlock / 2] - lo) * id + 0.5f)));
            out[4 + j] = static_cast<std::byte>(q0 | (q1 << 4));
        }
    }
}

void quantize_q8_0(const float* x, int64_t n, std::byte* out) {
    for (int64_t b = 0; b < n / kBlock; ++b, x += kBlock, out += 2 + kBlock) {
        float amax = 0.0f;
        for (int64_t i = 0; i < kBlock; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t d16 = fp32_to_fp16(d);
        std::memcpy(out, &d16, 2);
        for (int64_t i = 0; i < kBlock; ++i)
            out[2 + i] = static_cast<std::byte>(static_cast<int8_t>(std::lround(x[i] * id)));
    }
}

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
        const bool head = is_head(t);
        const TensorType type = head ? TensorType::Q8_0 : four_bits;
        const size_t block_bytes = head ? 2 + kBlock : type == TensorType::Q4_1 ? kQ4_1Bytes : kBlockBytes;
        std::vector<std::byte>& q = draft->weights.emplace_back(static_cast<size_t>(n / kBlock) * block_bytes);
        if (head) quantize_q8_0(row.data(), n, q.data());
        else if (type == TensorType::Q4_1) quantize_q4_1(row.data(), n, q.data());
        else quantize_q4_0(row.data(), n, q.data());
        t.type = type;
        t.data = q.data();
        t.nbytes = q.size();
    }
    if (draft->weights.empty()) return make_error("int4-self: the model has no matrices to quantize");
    return draft;
}

}  // namespace folio
