// Internal to the kernels: a matmul's activation rows in the form its weights
// read them (Q8_0 / Q8_1 blocks, or F16 / BF16 for cuBLAS), written by the
// kernel that produces them (a norm, a gated activation) while the values are
// in registers, bit for bit as the matmul's own quantize kernel
// (quantize_block32 in matmul_quant.cu: d = amax / 127, q = round_even(x *
// (1 / d)), d and s rounded to half) or conversion (round to nearest even) does.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "folio_kernels/elementwise.h"
#include "matmul_layout.cuh"

namespace folio::kernels::detail {

// Where a quantized block's pieces go: quants [count] int8, then per block
// of 32 a float2 {d, s} (Q8_1: s = d * sum of the quants; Q8_0: the sum).
struct ActivationBlocks {
    int8_t* qs = nullptr;
    float2* meta = nullptr;
    int format = 0;  // ActivationFormat
};

inline ActivationBlocks activation_blocks(const ActivationQuant& q, int64_t count) {
    auto* base = static_cast<uint8_t*>(q.workspace);
    return {reinterpret_cast<int8_t*>(base), reinterpret_cast<float2*>(base + align256(static_cast<size_t>(count))),
            static_cast<int>(q.format)};
}

// Four consecutive values v, starting at flat index `first` (a multiple of
// 4), of a block of 32 held by eight consecutive lanes (lanes 8g .. 8g + 7 of
// a warp, all of them calling): each lane writes its four quants, the
// group's first lane the block's {d, s}.
__device__ __forceinline__ void quantize_four(const float4& v, int64_t first, const ActivationBlocks& out) {
    const unsigned group = 0xffu << (threadIdx.x % 32 / 8 * 8);
    float amax = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
#pragma unroll
    for (int o = 4; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(group, amax, o));
    const float d = __fdiv_rn(amax, 127.0f);
    const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
    const int q0 = __float2int_rn(__fmul_rn(v.x, id)), q1 = __float2int_rn(__fmul_rn(v.y, id));
    const int q2 = __float2int_rn(__fmul_rn(v.z, id)), q3 = __float2int_rn(__fmul_rn(v.w, id));
    *reinterpret_cast<int*>(out.qs + first) = (q0 & 0xff) | ((q1 & 0xff) << 8) | ((q2 & 0xff) << 16) | (q3 << 24);
    int sum = q0 + q1 + q2 + q3;
#pragma unroll
    for (int o = 4; o > 0; o >>= 1) sum += __shfl_xor_sync(group, sum, o);
    if (first % 32 == 0) {
        const float dh = __half2float(__float2half_rn(d));
        const float s = out.format == static_cast<int>(ActivationFormat::Q8_1)
                            ? __half2float(__float2half_rn(__fmul_rn(d, static_cast<float>(sum))))
                            : static_cast<float>(sum);
        out.meta[first / 32] = make_float2(dh, s);
    }
}

// The same quantization as a launch of its own (matmul_quant.cu), for
// producers whose shape the fused path does not take.
cudaError_t quantize_activations(const float* x, int64_t count, const ActivationQuant& q, cudaStream_t s);

// Four consecutive values at flat index `first` (a multiple of 4) in the
// format `out` asks for; the Q8 formats need all eight lanes of the group.
__device__ __forceinline__ void store_activations(const float4& v, int64_t first, const ActivationBlocks& out) {
    if (out.format == static_cast<int>(ActivationFormat::F16)) {
        auto* h = reinterpret_cast<__half2*>(out.qs) + first / 2;
        h[0] = __floats2half2_rn(v.x, v.y);
        h[1] = __floats2half2_rn(v.z, v.w);
    } else if (out.format == static_cast<int>(ActivationFormat::BF16)) {
        auto* h = reinterpret_cast<__nv_bfloat162*>(out.qs) + first / 2;
        h[0] = __floats2bfloat162_rn(v.x, v.y);
        h[1] = __floats2bfloat162_rn(v.z, v.w);
    } else {
        quantize_four(v, first, out);
    }
}

}  // namespace folio::kernels::detail
