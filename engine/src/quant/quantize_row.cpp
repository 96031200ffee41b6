// quantize_row(): checks a row against its type and hands each block to the
// block quantizer of that type.
#include <cmath>
#include <cstring>
#include <string>

#include "folio/dequant.h"
#include "folio/quant.h"
#include "quant/kquant_blocks.h"
#include "quant/legacy_blocks.h"

namespace folio {

namespace {

uint16_t fp32_to_bf16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return uint16_t((uint64_t(bits) + (0x7fff + ((bits >> 16) & 1))) >> 16);  // nearest even
}

// Runs `quantize_block(x, importance, block)` over every block of the row,
// each block written to `out` through a local copy (file offsets are unaligned).
template <typename Block, typename Fn>
void for_each_block(std::span<const float> row, std::span<const float> importance, std::span<std::byte> out,
                    int block_elems, Fn quantize_block) {
    const size_t n_blocks = row.size() / size_t(block_elems);
    for (size_t b = 0; b < n_blocks; ++b) {
        Block block{};
        const float* w = importance.empty() ? nullptr : importance.data() + b * size_t(block_elems);
        quantize_block(row.data() + b * size_t(block_elems), w, block);
        std::memcpy(out.data() + b * sizeof(Block), &block, sizeof(Block));
    }
}

// llama.cpp's imatrix path for the legacy types: each value weighs its
// importance times its magnitude against the row's spread.
template <typename Block>
void weighted_legacy_row(std::span<const float> row, std::span<const float> importance, std::span<std::byte> out,
                         void (*fn)(const float*, const float*, Block&)) {
    float sum_x2 = 0;
    for (float v : row) sum_x2 += v * v;
    const float sigma2 = sum_x2 / float(row.size());
    float weights[32];
    for (size_t b = 0; b < row.size() / 32; ++b) {
        const float* x = row.data() + 32 * b;
        const float* qw = importance.data() + 32 * b;
        for (int j = 0; j < 32; ++j) weights[j] = qw[j] * std::sqrt(sigma2 + x[j] * x[j]);
        Block block{};
        fn(x, weights, block);
        std::memcpy(out.data() + b * sizeof(Block), &block, sizeof(Block));
    }
}

template <typename Block>
auto legacy(void (*fn)(const float*, Block&)) {
    return [fn](const float* x, const float*, Block& block) { fn(x, block); };
}

}  // namespace

bool can_quantize_to(TensorType type) {
    switch (type) {
        case TensorType::F32: case TensorType::F16: case TensorType::BF16:
        case TensorType::Q4_0: case TensorType::Q4_1: case TensorType::Q5_0: case TensorType::Q5_1:
        case TensorType::Q8_0: case TensorType::Q4_K: case TensorType::Q5_K: case TensorType::Q6_K:
            return true;
    }
    return false;
}

uint64_t quantized_size(TensorType type, int64_t n_elements) {
    const TensorTypeTraits t = traits(type);
    return uint64_t(n_elements) / t.block_elems * t.block_bytes;
}

Status quantize_row(TensorType type, std::span<const float> row, std::span<std::byte> out,
                    std::span<const float> importance) {
    const auto t = tensor_type_traits(uint32_t(type));
    if (!t || !can_quantize_to(type))
        return make_error("quantize: cannot quantize to type id " + std::to_string(uint32_t(type)));
    const std::string what = "quantize " + std::string(t->name) + ": ";
    if (row.size() % t->block_elems != 0)
        return make_error(what + "a row of " + std::to_string(row.size()) + " values is not a whole number of " +
                          std::to_string(t->block_elems) + "-value blocks");
    if (out.size() != quantized_size(type, int64_t(row.size())))
        return make_error(what + std::to_string(row.size()) + " values need " +
                          std::to_string(quantized_size(type, int64_t(row.size()))) + " bytes, got " +
                          std::to_string(out.size()));
    if (!importance.empty() && importance.size() != row.size())
        return make_error(what + "the importance vector has " + std::to_string(importance.size()) +
                          " weights for a row of " + std::to_string(row.size()));
    for (size_t i = 0; i < row.size(); ++i)
        if (!std::isfinite(row[i]))
            return make_error(what + "value " + std::to_string(i) + " of the row is " +
                              (std::isnan(row[i]) ? "NaN" : "infinite") + "; the source weights are damaged");
    for (size_t i = 0; i < importance.size(); ++i)
        if (!(importance[i] >= 0) || !std::isfinite(importance[i]))
            return make_error(what + "importance weight " + std::to_string(i) + " is not a finite value >= 0");

    using namespace quant;
    switch (type) {
        case TensorType::F32:
            std::memcpy(out.data(), row.data(), out.size());
            return {};
        case TensorType::F16:
        case TensorType::BF16:
            for (size_t i = 0; i < row.size(); ++i) {
                const uint16_t h = type == TensorType::F16 ? fp32_to_fp16(row[i]) : fp32_to_bf16(row[i]);
                std::memcpy(out.data() + 2 * i, &h, 2);
            }
            return {};
        case TensorType::Q4_0:
            if (!importance.empty()) return weighted_legacy_row<cpu::BlockQ4_0>(row, importance, out, quantize_block_q4_0_weighted), Status{};
            for_each_block<cpu::BlockQ4_0>(row, {}, out, 32, legacy(quantize_block_q4_0)); return {};
        case TensorType::Q4_1:
            if (!importance.empty()) return weighted_legacy_row<cpu::BlockQ4_1>(row, importance, out, quantize_block_q4_1_weighted), Status{};
            for_each_block<cpu::BlockQ4_1>(row, {}, out, 32, legacy(quantize_block_q4_1)); return {};
        case TensorType::Q5_0:
            if (!importance.empty()) return weighted_legacy_row<cpu::BlockQ5_0>(row, importance, out, quantize_block_q5_0_weighted), Status{};
            for_each_block<cpu::BlockQ5_0>(row, {}, out, 32, legacy(quantize_block_q5_0)); return {};
        case TensorType::Q5_1:
            if (!importance.empty()) return weighted_legacy_row<cpu::BlockQ5_1>(row, importance, out, quantize_block_q5_1_weighted), Status{};
            for_each_block<cpu::BlockQ5_1>(row, {}, out, 32, legacy(quantize_block_q5_1)); return {};
        case TensorType::Q8_0: for_each_block<cpu::BlockQ8_0>(row, {}, out, 32, legacy(quantize_block_q8_0)); return {};
        case TensorType::Q4_K: for_each_block<cpu::BlockQ4_K>(row, importance, out, 256, quantize_block_q4_k); return {};
        case TensorType::Q5_K: for_each_block<cpu::BlockQ5_K>(row, importance, out, 256, quantize_block_q5_k); return {};
        case TensorType::Q6_K: for_each_block<cpu::BlockQ6_K>(row, importance, out, 256, quantize_block_q6_k); return {};
    }
    return make_error(what + "no quantizer");
}

}  // namespace folio
