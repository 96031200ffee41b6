// Internal to the kernels: a matmul's activation rows in the form its weights
// read them (Q8_0 / Q8_1 blocks, or F16 / BF16 for cuBLAS), written by the
// kernel that produces them (a norm, a gated activation, attention) while the values are
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

// The lanes of this lane's group of kLanes consecutive lanes (kLanes a power of two, at most 32).
template <int kLanes>
__device__ __forceinline__ unsigned lane_group_mask() {
    if constexpr (kLanes == 32) {
        return 0xffffffffu;
    } else {
        return ((1u << kLanes) - 1u) << (threadIdx.x % 32 / kLanes * kLanes);
    }
}

// One block of 32 values spread over a group of kLanes lanes, N values each
// (N * kLanes = 32; all the group's lanes calling): q gets this lane's quants
// and the group's first lane writes the block's {d, s} to meta[block]. The
// same operations in every producer, so that the bits do not depend on how
// the block is spread.
template <int N, int kLanes>
__device__ __forceinline__ void quantize_shared_block(const float (&v)[N], int (&q)[N], int64_t block,
                                                      const ActivationBlocks& out) {
    static_assert(N * kLanes == kQK, "a block of 32");
    const unsigned group = lane_group_mask<kLanes>();
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < N; ++i) amax = fmaxf(amax, fabsf(v[i]));
#pragma unroll
    for (int o = kLanes / 2; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(group, amax, o));
    const float d = __fdiv_rn(amax, 127.0f);
    const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
    int sum = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) {
        q[i] = __float2int_rn(__fmul_rn(v[i], id));
        sum += q[i];
    }
#pragma unroll
    for (int o = kLanes / 2; o > 0; o >>= 1) sum += __shfl_xor_sync(group, sum, o);
    if (threadIdx.x % kLanes == 0) {
        const float dh = __half2float(__float2half_rn(d));
        const float s = out.format == static_cast<int>(ActivationFormat::Q8_1)
                            ? __half2float(__float2half_rn(__fmul_rn(d, static_cast<float>(sum))))
                            : static_cast<float>(sum);
        out.meta[block] = make_float2(dh, s);
    }
}

// Four consecutive values v, starting at flat index `first` (a multiple of
// 4), of a block of 32 held by eight consecutive lanes (lanes 8g .. 8g + 7 of
// a warp, all of them calling): each lane writes its four quants, the
// group's first lane the block's {d, s}.
__device__ __forceinline__ void quantize_four(const float4& v, int64_t first, const ActivationBlocks& out) {
    const float x[4] = {v.x, v.y, v.z, v.w};
    int q[4];
    quantize_shared_block<4, 8>(x, q, first / kQK, out);
    *reinterpret_cast<int*>(out.qs + first) =
        (q[0] & 0xff) | ((q[1] & 0xff) << 8) | ((q[2] & 0xff) << 16) | (q[3] << 24);
}

// A block of 32 in the layout of an mma.sync accumulator row: the four lanes
// of a quad (lanes 4g .. 4g + 3, all calling) hold 8 values each, lane t the
// elements 8k + 2t and 8k + 2t + 1 (k = 0 .. 3) of the block starting at flat
// index `first` (a multiple of 32).
__device__ __forceinline__ void quantize_quad_block(const float (&v)[8], int64_t first, const ActivationBlocks& out) {
    int q[8];
    quantize_shared_block<8, 4>(v, q, first / kQK, out);
    const int t = threadIdx.x % 4;
#pragma unroll
    for (int k = 0; k < 4; ++k)
        *reinterpret_cast<int16_t*>(out.qs + first + 8 * k + 2 * t) =
            static_cast<int16_t>((q[2 * k] & 0xff) | (q[2 * k + 1] << 8));
}

// A block of 32 held one value a lane by a whole warp (all lanes calling):
// lane l holds element l of the block starting at `first`.
__device__ __forceinline__ void quantize_warp_block(float v, int64_t first, const ActivationBlocks& out) {
    const float x[1] = {v};
    int q[1];
    quantize_shared_block<1, 32>(x, q, first / kQK, out);
    out.qs[first + threadIdx.x % 32] = static_cast<int8_t>(q[0]);
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
