#include "backend/cpu/cpu_ops.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/vec.h"
#include "model/batch_check.h"
#include "cpu/matmul.h"
#include "folio/dequant.h"

namespace folio::cpu {

void KvCache::allocate(int layers, int heads_kv, int dim, uint32_t block, uint32_t blocks, KvType kv_type) {
    n_layer = layers;
    n_head_kv = heads_kv;
    head_dim = dim;
    block_size = block;
    n_blocks = blocks;
    type = kv_type;
    const size_t layer_bytes = static_cast<size_t>(blocks) * block * static_cast<size_t>(slot_bytes());
    k.clear();
    v.clear();
    for (int l = 0; l < layers; ++l) {
        // new T[] leaves the pages untouched: they become resident when written.
        k.emplace_back(new uint8_t[layer_bytes]);
        v.emplace_back(new uint8_t[layer_bytes]);
    }
}

uint64_t KvCache::bytes() const {
    return uint64_t{2} * static_cast<uint64_t>(n_layer) * n_blocks * block_size * static_cast<uint64_t>(slot_bytes());
}

CpuOps::CpuOps(int n_threads, KvCache& cache, uint32_t max_context, bool f32_activations)
    : pool_(n_threads), cache_(cache), f32_activations_(f32_activations) {
    scores_.resize(static_cast<size_t>(pool_.size()));
    q_scratch_.resize(static_cast<size_t>(pool_.size()));
    q8_scratch_.resize(static_cast<size_t>(pool_.size()));
    half_rows_.resize(static_cast<size_t>(pool_.size()));
    for (auto& s : scores_) s.resize(static_cast<size_t>(vec::kMaxQueries) * max_context);
}

// Element-wise kernels handle a chunk's last few elements in scalar code that
// rounds differently from their vector body: chunks of whole vectors keep an
// element's result independent of where the batch size puts chunk ends
// (batch invariance).
constexpr int64_t kVectorChunk = 64;

template <typename Fn>
void CpuOps::for_chunks(int64_t n, int64_t min_chunk, int64_t align, Fn&& fn) {
    const int64_t n_chunks = std::min<int64_t>(pool_.size() * 4, (n + min_chunk - 1) / min_chunk);
    if (n_chunks <= 1) return fn(int64_t{0}, n);
    const int64_t chunk = ((n + n_chunks - 1) / n_chunks + align - 1) / align * align;
    pool_.parallel_for(n_chunks, [&](int64_t c, int) {
        const int64_t begin = c * chunk, end = std::min(n, begin + chunk);
        if (begin < end) fn(begin, end);
    });
}

float* CpuOps::buffer(model::Buffer which, int64_t n) {
    std::vector<float>& buf = buffers_[static_cast<size_t>(which)];
    if (buf.size() < static_cast<size_t>(n)) buf.resize(static_cast<size_t>(n));
    return buf.data();
}

Status CpuOps::embed(const model::Weight& table, const Batch& batch, float* out) {
    const std::span<const int32_t> ids = batch.token_ids;
    const int64_t dim = table.in_features;
    const size_t row_bytes = weight_row_bytes(table.type, dim);
    if (row_bytes == 0) return make_error("embedding: rows of type " + std::string(traits(table.type).name) +
                                          " are not whole blocks");
    for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= table.out_features)
            return make_error("token id " + std::to_string(ids[i]) + " is outside the vocabulary");
        const std::byte* row = table.data + static_cast<size_t>(ids[i]) * row_bytes;
        if (Status s = dequantize(table.type, row, row_bytes, out + static_cast<int64_t>(i) * dim, dim); !s) return s;
    }
    return {};
}

void CpuOps::select_logit_rows(const Batch& batch, const float* x, int64_t dim, float* out) {
    for (size_t i = 0; i < batch.logits_rows.size(); ++i)
        std::copy_n(x + batch.logits_rows[i] * dim, dim, out + static_cast<int64_t>(i) * dim);
}

void CpuOps::rms_norm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t dim, float* out) {
    for_chunks(n_rows, std::max<int64_t>(1, 16384 / dim), 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) vec::rms_norm(x + r * dim, weight, eps, dim, out + r * dim);
    });
}

Status CpuOps::matmul(const model::Weight& w, const float* x, int64_t n_rows, float* y) {
    return matmuls(std::span(&w, 1), x, n_rows, std::span(&y, 1));
}

Status CpuOps::matmuls(std::span<const model::Weight> w, const float* x, int64_t n_rows, std::span<float* const> y) {
    if (w.size() > kMaxFused || w.size() != y.size()) return Ops::matmuls(w, x, n_rows, y);
    WeightMatrix matrices[kMaxFused];
    for (size_t i = 0; i < w.size(); ++i) matrices[i] = {w[i].type, w[i].data, w[i].in_features, w[i].out_features};
    const std::span<const WeightMatrix> ws(matrices, w.size());
    if (f32_activations_) return cpu::matmul_many_f32(ws, x, n_rows, y, pool_, scratch_, best_isa());
    return cpu::matmul_many(ws, x, n_rows, y, pool_, scratch_);
}

void CpuOps::rope(float* x, int64_t n_rows, int n_heads, int head_dim, std::span<const int32_t> positions,
                  const model::RopeParams& rope) {
    const float base = rope.base;
    const RopeStyle style = rope.style;
    const int half = head_dim / 2;
    const float theta_scale = std::pow(base, -2.0f / static_cast<float>(head_dim));
    rope_table_.resize(static_cast<size_t>(n_rows) * head_dim);
    for_chunks(n_rows, 8, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            // cos/sin of pair i: RopeParams::angle of position * base^(-2i/d),
            // the power built by repeated multiplication, as GGML does, so
            // that both round alike.
            float* cs = rope_table_.data() + r * head_dim;
            float theta = static_cast<float>(positions[static_cast<size_t>(r)]);
            for (int i = 0; i < half; ++i) {
                const float angle = rope.angle(theta, i);
                cs[2 * i] = std::cos(angle) * rope.mscale;
                cs[2 * i + 1] = std::sin(angle) * rope.mscale;
                theta *= theta_scale;
            }
            for (int h = 0; h < n_heads; ++h) {
                float* head = x + (r * n_heads + h) * head_dim;
                for (int i = 0; i < half; ++i) {
                    const int a = style == RopeStyle::Interleaved ? 2 * i : i;
                    const int b = style == RopeStyle::Interleaved ? 2 * i + 1 : i + half;
                    const float x0 = head[a], x1 = head[b];
                    head[a] = x0 * cs[2 * i] - x1 * cs[2 * i + 1];
                    head[b] = x0 * cs[2 * i + 1] + x1 * cs[2 * i];
                }
            }
        }
    });
}

void CpuOps::silu_mul(float* gate, const float* up, int64_t n) {
    for_chunks(n, 8192, kVectorChunk, [&](int64_t a, int64_t b) { vec::silu_mul(gate + a, up + a, b - a); });
}

void CpuOps::gelu_mul(float* gate, const float* up, int64_t n) {
    for_chunks(n, 8192, kVectorChunk, [&](int64_t a, int64_t b) { vec::gelu_mul(gate + a, up + a, b - a); });
}

void CpuOps::add(float* x, const float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void CpuOps::add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim) {
    for (int64_t r = 0; r < n_rows; ++r)
        for (int64_t c = 0; c < dim; ++c) x[r * dim + c] += bias[c];
}

void CpuOps::scale(float* x, float s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void CpuOps::softcap(float* x, float cap, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

Status CpuOps::top_k(const float* logits, int64_t n_rows, int64_t vocab, int32_t k, std::span<float> values,
                     std::span<int32_t> ids, const RowSums& sums) {
    const auto need = static_cast<size_t>(n_rows) * static_cast<size_t>(k);
    if (k < 1 || k > vocab || values.size() < need || ids.size() < need)
        return make_error("top_k: " + std::to_string(k) + " of " + std::to_string(vocab) + " into too small a buffer");
    if (Status checked = model::check_row_sums(sums, n_rows); !checked) return checked;
    for (int64_t r = 0; r < n_rows; ++r) {
        const std::span<const float> row(logits + r * vocab, static_cast<size_t>(vocab));
        if (!sums.empty()) {
            const auto i = static_cast<size_t>(r);
            const RowSum sum = row_sums(row, sums.temperatures[i]);
            sums.softmax_sums[i] = sum.softmax_sum;
            sums.log_normalizers[i] = sum.log_normalizer;
        }
        select_top_k(row, static_cast<size_t>(k), top_);
        for (int32_t j = 0; j < k; ++j) {
            const size_t at = static_cast<size_t>(r) * static_cast<size_t>(k) + static_cast<size_t>(j);
            values[at] = top_[static_cast<size_t>(j)].logit;
            ids[at] = top_[static_cast<size_t>(j)].id;
        }
    }
    return {};
}

Status CpuOps::choose_tokens(const float* logits, int64_t n_rows, int64_t vocab, std::span<int32_t> ids) {
    // The best entry of each row, in select_top_k's order: the first highest.
    std::vector<float> best(static_cast<size_t>(std::max<int64_t>(n_rows, 0)));
    return top_k(logits, n_rows, vocab, 1, best, ids, {});
}

}  // namespace folio::cpu
