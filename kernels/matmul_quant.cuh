// Internal to the quantized products: the activation rows as the kernels
// read them (matmul_quant.cu writes them) and the small helpers both the
// warp-per-row kernels (matmul_quant.cu) and the tensor-core ones
// (matmul_quant_mma.cu) unpack weights with, so that both compute the same
// integers and the same float epilogue.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "matmul_layout.cuh"

namespace folio::kernels::detail {

// The activation rows quantized in the workspace: qs int8 [n][cols], then
// per block either float2 meta [n][cols/32] (d, and s for Q8_1 or the exact
// sum of the quants for Q8_0), or for Q8_K float d [n][cols/256] and int16
// bsums [n][cols/16].
struct ActQ8 {
    const int8_t* qs = nullptr;
    const float2* meta = nullptr;    // legacy partners
    const float* d = nullptr;        // Q8_K
    const int16_t* bsums = nullptr;  // Q8_K
    int64_t cols = 0;
};

__device__ __forceinline__ uint4 load16(const uint8_t* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }
__device__ __forceinline__ int4 load16(const int8_t* p) { return *reinterpret_cast<const int4*>(p); }
__device__ __forceinline__ uint32_t load4(const uint8_t* p) { return __ldg(reinterpret_cast<const uint32_t*>(p)); }
__device__ __forceinline__ int load4(const int8_t* p) { return *reinterpret_cast<const int*>(p); }

__device__ __forceinline__ uint32_t word_of(const uint4& v, int k) {
    return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w;
}
__device__ __forceinline__ int int_of(const int4& v, int k) {
    return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w;
}
__device__ __forceinline__ int byte_of(const uint4& v, int i) {  // i may be a run-time value
    return static_cast<int>((word_of(v, i >> 2) >> (8 * (i & 3))) & 0xffu);
}
__device__ __forceinline__ int low_half(int word) { return static_cast<int16_t>(word & 0xffff); }
__device__ __forceinline__ int high_half(int word) { return static_cast<int16_t>(static_cast<uint32_t>(word) >> 16); }

// The 6-bit scales and mins of sub-blocks 2p and 2p + 1 of a Q4_K / Q5_K
// super-block, from its first 16 bytes (d, dmin, scales[12]).
__device__ __forceinline__ void pair_scales(const uint4& header, int p, int (&sc)[2], int (&mn)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int j = 2 * p + h;
        if (j < 4) {
            sc[h] = byte_of(header, 4 + j) & 63;
            mn[h] = byte_of(header, 8 + j) & 63;
        } else {
            sc[h] = (byte_of(header, 8 + j) & 0xF) | ((byte_of(header, j) >> 6) << 4);
            mn[h] = (byte_of(header, 8 + j) >> 4) | ((byte_of(header, 4 + j) >> 6) << 4);
        }
    }
}
__device__ __forceinline__ float header_d(const uint4& header) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(header.x & 0xffffu)));
}
__device__ __forceinline__ float header_dmin(const uint4& header) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(header.x >> 16)));
}

// The float epilogues of a unit (64 elements) of a K-quant row times a Q8_K
// row, from the unit's exact integers: the same operations, in the same
// order, in every kernel.
// Q4_K / Q5_K: da * (d * (sc0 dot_lo + sc1 dot_hi) - dmin * (mn0 (bs0 + bs1) + mn1 (bs2 + bs3))).
__device__ __forceinline__ float pair_k_value(float da, float d, float dmin, int scaled, int offsets) {
    return __fmul_rn(da, __fsub_rn(__fmul_rn(d, static_cast<float>(scaled)), __fmul_rn(dmin, static_cast<float>(offsets))));
}
// Q6_K: (da * d) * sum over the four runs of sc * (dot - 32 bsum).
__device__ __forceinline__ float q6_k_value(float da, float d, int sumi) {
    return __fmul_rn(__fmul_rn(da, d), static_cast<float>(sumi));
}

// Tensor-core products of K-quant weights (matmul_quant_mma.cu): y[j][row]
// for the activation rows j_begin .. j_begin + 32 tiles, bit for bit as the
// warp-per-row kernel computes them. Supported: Q4_K / Q5_K / Q6_K weights of
// at most 65535 x 64 rows (others take the warp-per-row kernels).
inline constexpr int kMmaTileRows = 32;
cudaError_t mma_quantized_rows(const DeviceMatrix& w, const ActQ8& a, int64_t j_begin, int64_t tiles,
                               const SplitParts& y, cudaStream_t s);
bool mma_quantized_supported(const DeviceMatrix& w);

}  // namespace folio::kernels::detail
