// GGML's quantized block layouts, byte for byte as they sit in a GGUF file,
// so kernels read mapped weights in place. Scales are IEEE halves (uint16_t
// bits, see cpu/fp16.h) except Q8_K's float. The Q8_* blocks are the
// activation formats that the dot-product kernels pair with each weight type.
#pragma once

#include <cstddef>
#include <cstdint>

namespace folio::cpu {

inline constexpr int kBlock32 = 32;    // elements per block of the legacy formats
inline constexpr int kSuperBlock = 256;  // elements per K-quant super-block
inline constexpr int kKScaleBytes = 12;  // packed 6-bit scales and mins of Q4_K / Q5_K

// x = d * (q - 8), q a nibble: element i in the low nibble of qs[i % 16] for
// i < 16, high nibble for i >= 16.
struct BlockQ4_0 {
    uint16_t d;
    uint8_t qs[kBlock32 / 2];
};

// x = d * q + m, q a nibble (same nibble order as Q4_0).
struct BlockQ4_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qs[kBlock32 / 2];
};

// x = d * (q - 16), q five bits: the nibble as in Q4_0, bit 4 is bit i of qh.
struct BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[kBlock32 / 2];
};

// x = d * q + m, q five bits as in Q5_0.
struct BlockQ5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[kBlock32 / 2];
};

// x = d * q, q a signed byte.
struct BlockQ8_0 {
    uint16_t d;
    int8_t qs[kBlock32];
};

// Q8_0 plus s = d * sum(q): the activation partner of Q4_1 / Q5_1, whose
// per-block offset m multiplies the sum of the activations.
struct BlockQ8_1 {
    uint16_t d;
    uint16_t s;
    int8_t qs[kBlock32];
};

// Eight sub-blocks of 32: x = d * sc[j] * q - dmin * m[j], q a nibble, sc and
// m six bits packed in `scales`. qs[32 * p + l] holds element 64 p + l in its
// low nibble and 64 p + 32 + l in its high nibble.
struct BlockQ4_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[kKScaleBytes];
    uint8_t qs[kSuperBlock / 2];
};

// Q4_K with a fifth bit: element 64 p + l takes bit 2p of qh[l], element
// 64 p + 32 + l takes bit 2p + 1.
struct BlockQ5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[kKScaleBytes];
    uint8_t qh[kSuperBlock / 8];
    uint8_t qs[kSuperBlock / 2];
};

// Sixteen sub-blocks of 16: x = d * scales[j] * (q - 32), q six bits (four in
// ql, two in qh; see the scalar kernel for the order).
struct BlockQ6_K {
    uint8_t ql[kSuperBlock / 2];
    uint8_t qh[kSuperBlock / 4];
    int8_t scales[kSuperBlock / 16];
    uint16_t d;
};

// Activation partner of the K-quants: x = d * q, with the sums of each run
// of 16 quants precomputed for the sub-block offsets (mins, Q6_K's -32).
struct BlockQ8_K {
    float d;
    int8_t qs[kSuperBlock];
    int16_t bsums[kSuperBlock / 16];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
// Blocks are read in place from unaligned file offsets: 2-byte alignment at most.
static_assert(alignof(BlockQ6_K) == 2 && alignof(BlockQ8_0) == 2);

// Unpacks the 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block.
inline void k_scale_min(int j, const uint8_t* scales, uint8_t& sc, uint8_t& m) {
    if (j < 4) {
        sc = scales[j] & 63;
        m = scales[j + 4] & 63;
    } else {
        sc = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
        m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
    }
}

}  // namespace folio::cpu
