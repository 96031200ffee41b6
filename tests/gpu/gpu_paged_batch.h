// What the attention suites share (test_gpu_attention, test_gpu_attention_quant): IEEE half on the host,
// and a paged batch of sequences with its half K/V cache, on the host and on the device. Unused cache slots
// hold NaN, so that a read outside a sequence's blocks shows up.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include <cuda_runtime.h>

#include "folio_kernels/attention.h"
#include "gpu_test_support.h"

namespace fk = folio::kernels;

// ---- IEEE half on the host ---------------------------------------------------

inline float half_to_float(uint16_t h) {
    const uint32_t sign = uint32_t{h & 0x8000u} << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else {  // subnormal: 2^-24 * mant
        const float f = std::ldexp(static_cast<float>(mant), -24);
        return sign ? -f : f;
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline uint16_t float_to_half(float f) {
    // Round to nearest even through the exact value in double (inputs here are finite and small).
    if (std::isnan(f)) return 0x7e00;
    const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    double a = std::fabs(static_cast<double>(f));
    if (a >= 65520.0) return sign | 0x7c00;
    int e;
    std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    const int exp = std::max(e - 1, -14);  // half exponents from -14 (subnormals share it)
    const double q = std::nearbyint(std::ldexp(a, 10 - exp));  // units of the last place
    uint32_t mant = static_cast<uint32_t>(q);
    int biased = exp + 15;
    if (mant >= 2048) mant >>= 1, ++biased;  // rounded up to the next binade
    if (mant < 1024) return sign | static_cast<uint16_t>(mant);  // subnormal
    if (biased >= 31) return sign | 0x7c00;
    return sign | static_cast<uint16_t>((biased << 10) | (mant - 1024));
}

inline float round_half(float f) { return half_to_float(float_to_half(f)); }

inline uint16_t float_to_bf16(float f) {  // round to nearest even (finite inputs)
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

inline constexpr uint16_t kHalfNaN = 0x7e00;

// ---- a paged batch -------------------------------------------------------------

struct SeqSpec {
    int n_query;
    int seq_len;
};

struct Shape {
    int n_head, n_head_kv, head_dim, block_size;
    int window = 0;
    float softcap = 0.0f;
    float q_range = 1.0f;  // |q| bound: larger makes the softmax peakier (and softcap bite)
};

// Host copy of a batch and its cache; unused cache slots hold NaN so that a
// read outside a sequence's blocks shows up.
struct HostBatch {
    std::vector<int32_t> positions, row_seq, query_start, n_query, seq_len, block_tables;
    std::vector<int64_t> slot_mapping;
    std::vector<uint16_t> k_cache, v_cache;
    int n_tokens = 0, n_seqs = 0, max_blocks = 0, n_blocks = 0;
};

inline HostBatch make_batch(std::mt19937& rng, const Shape& sh, const std::vector<SeqSpec>& seqs) {
    HostBatch hb;
    hb.n_seqs = static_cast<int>(seqs.size());
    int total_blocks = 0;
    for (const auto& s : seqs) {
        const int blocks = (s.seq_len + sh.block_size - 1) / sh.block_size;
        total_blocks += blocks;
        hb.max_blocks = std::max(hb.max_blocks, blocks);
    }
    hb.max_blocks += 3;  // tables wider than needed, the tail unused
    hb.n_blocks = total_blocks + 11;
    std::vector<int32_t> pool(static_cast<size_t>(hb.n_blocks));
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng);
    const size_t slot_values = static_cast<size_t>(sh.n_head_kv) * sh.head_dim;
    hb.k_cache.assign(static_cast<size_t>(hb.n_blocks) * sh.block_size * slot_values, kHalfNaN);
    hb.v_cache = hb.k_cache;
    hb.block_tables.assign(static_cast<size_t>(hb.n_seqs) * hb.max_blocks, -1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    size_t next = 0;
    for (int s = 0; s < hb.n_seqs; ++s) {
        const SeqSpec& spec = seqs[static_cast<size_t>(s)];
        const int blocks = (spec.seq_len + sh.block_size - 1) / sh.block_size;
        for (int b = 0; b < blocks; ++b) hb.block_tables[static_cast<size_t>(s * hb.max_blocks + b)] = pool[next++];
        hb.query_start.push_back(hb.n_tokens);
        hb.n_query.push_back(spec.n_query);
        hb.seq_len.push_back(spec.seq_len);
        for (int i = 0; i < spec.n_query; ++i) {
            const int pos = spec.seq_len - spec.n_query + i;
            const int64_t block = hb.block_tables[static_cast<size_t>(s * hb.max_blocks + pos / sh.block_size)];
            hb.positions.push_back(pos);
            hb.row_seq.push_back(s);
            hb.slot_mapping.push_back(block * sh.block_size + pos % sh.block_size);
        }
        hb.n_tokens += spec.n_query;
        // Every token of the sequence (prefix and this step's rows) has K and V.
        for (int j = 0; j < spec.seq_len; ++j) {
            const int64_t block = hb.block_tables[static_cast<size_t>(s * hb.max_blocks + j / sh.block_size)];
            for (int h = 0; h < sh.n_head_kv; ++h)
                for (int d = 0; d < sh.head_dim; ++d) {
                    const size_t at =
                        static_cast<size_t>(((block * sh.n_head_kv + h) * sh.block_size + j % sh.block_size) *
                                                sh.head_dim +
                                            d);
                    float x;
                    do x = dist(rng);
                    while (x == 0.0f);
                    hb.k_cache[at] = float_to_half(x);
                    do x = dist(rng);
                    while (x == 0.0f);
                    hb.v_cache[at] = float_to_half(x);
                }
        }
    }
    return hb;
}

// Device copies of a HostBatch's arrays.
struct DeviceBatch {
    DeviceArray<int32_t> positions, row_seq, query_start, n_query, seq_len, block_tables;
    DeviceArray<int64_t> slot_mapping;
    DeviceArray<uint16_t> k_cache, v_cache;
    fk::AttentionBatch b;
    fk::PagedKvLayer kv;
    DeviceBatch(const HostBatch& hb, const Shape& sh, int slack)
        : positions(hb.positions), row_seq(hb.row_seq), query_start(hb.query_start), n_query(hb.n_query),
          seq_len(hb.seq_len), block_tables(hb.block_tables), slot_mapping(hb.slot_mapping), k_cache(hb.k_cache),
          v_cache(hb.v_cache) {
        b.positions = positions.ptr;
        b.slot_mapping = slot_mapping.ptr;
        b.row_seq = row_seq.ptr;
        b.query_start = query_start.ptr;
        b.n_query = n_query.ptr;
        b.seq_len = seq_len.ptr;
        b.block_tables = block_tables.ptr;
        b.n_tokens = hb.n_tokens;
        b.n_seqs = hb.n_seqs;
        b.max_blocks = hb.max_blocks;
        // Host-side bounds need not be tight (a captured graph serves many steps).
        b.max_seq_len = *std::max_element(hb.seq_len.begin(), hb.seq_len.end()) + slack;
        // (A decode-only batch keeps its bound of 1: that picks the decode tiles.)
        const int max_n_query = *std::max_element(hb.n_query.begin(), hb.n_query.end());
        b.max_n_query = max_n_query + (slack && max_n_query > 1 ? 1 : 0);
        // The lower bound tight (a prefill-only batch skips the decode kernel), or with slack not known.
        b.min_n_query = slack ? 0 : *std::min_element(hb.n_query.begin(), hb.n_query.end());
        kv.k = k_cache.ptr;
        kv.v = v_cache.ptr;
        kv.n_blocks = hb.n_blocks;
        kv.block_size = sh.block_size;
        kv.n_head_kv = sh.n_head_kv;
        kv.head_dim = sh.head_dim;
    }
    cudaError_t status() const {
        for (cudaError_t e : {positions.status, row_seq.status, query_start.status, n_query.status, seq_len.status,
                              block_tables.status, slot_mapping.status, k_cache.status, v_cache.status})
            if (e != cudaSuccess) return e;
        return cudaSuccess;
    }
};

// A named batch of sequences of one shape.
struct BatchCase {
    const char* name;
    Shape shape;
    std::vector<SeqSpec> seqs;
};
