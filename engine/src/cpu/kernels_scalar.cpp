// Reference kernels in plain C++: the definition the vector paths are tested
// against, and the path on CPUs without AVX2.
#include <cmath>

#include "cpu/fp16.h"
#include "cpu/kernels_impl.h"
#include "cpu/quant_blocks.h"

namespace folio::cpu {
namespace {

float amax_of(const float* x, int n) {
    float amax = 0.0f;
    for (int i = 0; i < n; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    return amax;
}

// Round to nearest, ties to even: what the vector code's rounding does.
int round_even(float v) { return static_cast<int>(std::nearbyint(v)); }

}  // namespace

void quantize_row_q8_0_scalar(const float* x, void* out, int64_t n) {
    auto* blocks = static_cast<BlockQ8_0*>(out);
    for (int64_t b = 0; b < n / kBlock32; ++b, x += kBlock32) {
        const float d = amax_of(x, kBlock32) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        blocks[b].d = fp32_to_fp16(d);
        for (int i = 0; i < kBlock32; ++i) blocks[b].qs[i] = static_cast<int8_t>(round_even(x[i] * id));
    }
}

void quantize_row_q8_1_scalar(const float* x, void* out, int64_t n) {
    auto* blocks = static_cast<BlockQ8_1*>(out);
    for (int64_t b = 0; b < n / kBlock32; ++b, x += kBlock32) {
        const float d = amax_of(x, kBlock32) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        int sum = 0;
        for (int i = 0; i < kBlock32; ++i) {
            const int q = round_even(x[i] * id);
            blocks[b].qs[i] = static_cast<int8_t>(q);
            sum += q;
        }
        blocks[b].d = fp32_to_fp16(d);
        blocks[b].s = fp32_to_fp16(d * static_cast<float>(sum));
    }
}

void quantize_row_q8_K_scalar(const float* x, void* out, int64_t n) {
    auto* blocks = static_cast<BlockQ8_K*>(out);
    for (int64_t b = 0; b < n / kSuperBlock; ++b, x += kSuperBlock) {
        BlockQ8_K& block = blocks[b];
        const float amax = amax_of(x, kSuperBlock);
        if (amax == 0.0f) {
            std::memset(&block, 0, sizeof block);
            continue;
        }
        const float iscale = 127.0f / amax;
        for (int i = 0; i < kSuperBlock; ++i) block.qs[i] = static_cast<int8_t>(round_even(x[i] * iscale));
        for (int g = 0; g < kSuperBlock / 16; ++g) {
            int sum = 0;
            for (int i = 0; i < 16; ++i) sum += block.qs[16 * g + i];
            block.bsums[g] = static_cast<int16_t>(sum);
        }
        block.d = 1.0f / iscale;
    }
}

namespace {

float dot_f32(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const float*>(w);
    const auto* y = static_cast<const float*>(a);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += x[i] * y[i];
    return sum;
}

float dot_f16(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const uint16_t*>(w);
    const auto* y = static_cast<const float*>(a);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum += fp16_to_fp32(x[i]) * y[i];
    return sum;
}

float dot_q4_0(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kBlock32; ++b) {
        int sumi = 0;
        for (int j = 0; j < kBlock32 / 2; ++j)
            sumi += ((x[b].qs[j] & 0xF) - 8) * y[b].qs[j] + ((x[b].qs[j] >> 4) - 8) * y[b].qs[j + 16];
        sum += static_cast<float>(sumi) * fp16_to_fp32(x[b].d) * fp16_to_fp32(y[b].d);
    }
    return sum;
}

float dot_q4_1(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kBlock32; ++b) {
        int sumi = 0;
        for (int j = 0; j < kBlock32 / 2; ++j)
            sumi += (x[b].qs[j] & 0xF) * y[b].qs[j] + (x[b].qs[j] >> 4) * y[b].qs[j + 16];
        sum += static_cast<float>(sumi) * fp16_to_fp32(x[b].d) * fp16_to_fp32(y[b].d) +
               fp16_to_fp32(x[b].m) * fp16_to_fp32(y[b].s);
    }
    return sum;
}

// The five-bit quants of a Q5_0 / Q5_1 block, before any offset.
template <typename Block>
void q5_values(const Block& x, int (&q)[kBlock32]) {
    const uint32_t qh = load_u32(x.qh);
    for (int j = 0; j < kBlock32 / 2; ++j) {
        q[j] = (x.qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4);
        q[j + 16] = (x.qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
    }
}

float dot_q5_0(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kBlock32; ++b) {
        int q[kBlock32];
        q5_values(x[b], q);
        int sumi = 0;
        for (int j = 0; j < kBlock32; ++j) sumi += (q[j] - 16) * y[b].qs[j];
        sum += static_cast<float>(sumi) * fp16_to_fp32(x[b].d) * fp16_to_fp32(y[b].d);
    }
    return sum;
}

float dot_q5_1(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kBlock32; ++b) {
        int q[kBlock32];
        q5_values(x[b], q);
        int sumi = 0;
        for (int j = 0; j < kBlock32; ++j) sumi += q[j] * y[b].qs[j];
        sum += static_cast<float>(sumi) * fp16_to_fp32(x[b].d) * fp16_to_fp32(y[b].d) +
               fp16_to_fp32(x[b].m) * fp16_to_fp32(y[b].s);
    }
    return sum;
}

float dot_q8_0(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ8_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kBlock32; ++b) {
        int sumi = 0;
        for (int j = 0; j < kBlock32; ++j) sumi += x[b].qs[j] * y[b].qs[j];
        sum += static_cast<float>(sumi) * fp16_to_fp32(x[b].d) * fp16_to_fp32(y[b].d);
    }
    return sum;
}

// Q4_K and Q5_K: sum over sub-blocks of d*sc*sum(q*a) - dmin*m*sum(a).
template <bool kFiveBit, typename Block>
float dot_q45_k(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const Block*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kSuperBlock; ++b) {
        int scaled = 0, offsets = 0;
        for (int p = 0; p < 4; ++p) {  // pairs of sub-blocks share 32 bytes of qs
            uint8_t sc_lo, m_lo, sc_hi, m_hi;
            k_scale_min(2 * p, x[b].scales, sc_lo, m_lo);
            k_scale_min(2 * p + 1, x[b].scales, sc_hi, m_hi);
            int dot_lo = 0, dot_hi = 0;
            for (int l = 0; l < 32; ++l) {
                int q_lo = x[b].qs[32 * p + l] & 0xF, q_hi = x[b].qs[32 * p + l] >> 4;
                if constexpr (kFiveBit) {
                    q_lo |= ((x[b].qh[l] >> (2 * p)) & 1) << 4;
                    q_hi |= ((x[b].qh[l] >> (2 * p + 1)) & 1) << 4;
                }
                dot_lo += q_lo * y[b].qs[64 * p + l];
                dot_hi += q_hi * y[b].qs[64 * p + 32 + l];
            }
            scaled += sc_lo * dot_lo + sc_hi * dot_hi;
            offsets += m_lo * (y[b].bsums[4 * p] + y[b].bsums[4 * p + 1]) +
                       m_hi * (y[b].bsums[4 * p + 2] + y[b].bsums[4 * p + 3]);
        }
        sum += y[b].d * (fp16_to_fp32(x[b].d) * static_cast<float>(scaled) -
                         fp16_to_fp32(x[b].dmin) * static_cast<float>(offsets));
    }
    return sum;
}

float dot_q6_k(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ6_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / kSuperBlock; ++b) {
        int q[kSuperBlock];
        for (int half = 0; half < 2; ++half) {
            const uint8_t* ql = x[b].ql + 64 * half;
            const uint8_t* qh = x[b].qh + 32 * half;
            int* out = q + 128 * half;
            for (int l = 0; l < 32; ++l) {
                out[l] = (ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4);
                out[l + 32] = (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4);
                out[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
                out[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
            }
        }
        int sumi = 0;
        for (int g = 0; g < kSuperBlock / 16; ++g) {
            int dot = 0;
            for (int i = 0; i < 16; ++i) dot += (q[16 * g + i] - 32) * y[b].qs[16 * g + i];
            sumi += x[b].scales[g] * dot;
        }
        sum += y[b].d * fp16_to_fp32(x[b].d) * static_cast<float>(sumi);
    }
    return sum;
}

template <VecDotFn Dot>
constexpr DotKernels make(TensorType weight, ActivationType activation, int block, size_t act_block,
                          QuantizeRowFn quantize) {
    return DotKernels{weight, activation, block, act_block, quantize, Dot, &tile_by_dots<Dot>};
}

const DotKernels kScalar[] = {
    make<dot_f32>(TensorType::F32, ActivationType::F32, 1, sizeof(float), nullptr),
    make<dot_f16>(TensorType::F16, ActivationType::F32, 1, sizeof(float), nullptr),
    make<dot_q4_0>(TensorType::Q4_0, ActivationType::Q8_0, kBlock32, sizeof(BlockQ8_0), quantize_row_q8_0_scalar),
    make<dot_q4_1>(TensorType::Q4_1, ActivationType::Q8_1, kBlock32, sizeof(BlockQ8_1), quantize_row_q8_1_scalar),
    make<dot_q5_0>(TensorType::Q5_0, ActivationType::Q8_0, kBlock32, sizeof(BlockQ8_0), quantize_row_q8_0_scalar),
    make<dot_q5_1>(TensorType::Q5_1, ActivationType::Q8_1, kBlock32, sizeof(BlockQ8_1), quantize_row_q8_1_scalar),
    make<dot_q8_0>(TensorType::Q8_0, ActivationType::Q8_0, kBlock32, sizeof(BlockQ8_0), quantize_row_q8_0_scalar),
    make<dot_q45_k<false, BlockQ4_K>>(TensorType::Q4_K, ActivationType::Q8_K, kSuperBlock, sizeof(BlockQ8_K),
                                      quantize_row_q8_K_scalar),
    make<dot_q45_k<true, BlockQ5_K>>(TensorType::Q5_K, ActivationType::Q8_K, kSuperBlock, sizeof(BlockQ8_K),
                                     quantize_row_q8_K_scalar),
    make<dot_q6_k>(TensorType::Q6_K, ActivationType::Q8_K, kSuperBlock, sizeof(BlockQ8_K), quantize_row_q8_K_scalar),
};

}  // namespace

const DotKernels* scalar_kernels(TensorType weight) {
    for (const DotKernels& k : kScalar)
        if (k.weight == weight) return &k;
    return nullptr;
}

}  // namespace folio::cpu
