// matmul: for every weight type, ISA, number of activation rows and thread
// count, each output is bit for bit the row-by-row dot product of the same
// quantized activation, and a row's result does not depend on the rows that
// share its batch; bad shapes and types are errors, not crashes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/matmul.h"
#include "folio/dequant.h"
#include "folio_test.h"
#include "quant_reference.h"

using namespace cpu_test;

namespace {

const TensorType kWeightTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::Q4_0, TensorType::Q4_1,
                                   TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0, TensorType::Q4_K,
                                   TensorType::Q5_K, TensorType::Q6_K};

std::vector<Isa> isas() {
    std::vector<Isa> out{Isa::Scalar};
    if (isa_supported(Isa::Avx2)) out.push_back(Isa::Avx2);
    return out;
}

struct Weights {
    std::vector<std::byte> bytes;
    WeightMatrix matrix;
};

Weights random_weights(TensorType type, int64_t rows, int64_t cols, uint32_t seed) {
    BlockFactory factory(seed);
    Weights w;
    for (int64_t r = 0; r < rows; ++r) {
        const std::vector<std::byte> row = factory.row(type, cols);
        w.bytes.insert(w.bytes.end(), row.begin(), row.end());
    }
    w.matrix = WeightMatrix{type, w.bytes.data(), cols, rows};
    return w;
}

// What matmul must produce: quantize each activation row alone, dot it with each weight row.
std::vector<float> row_by_row(const DotKernels& k, const Weights& w, const std::vector<float>& x, int64_t n_rows) {
    const int64_t in = w.matrix.in_features, out = w.matrix.out_features;
    const size_t w_stride = weight_row_bytes(w.matrix.type, in);
    std::vector<float> y(static_cast<size_t>(n_rows * out));
    std::vector<std::byte> act(activation_row_bytes(k.activation, in));
    for (int64_t c = 0; c < n_rows; ++c) {
        const float* xr = x.data() + c * in;
        const void* a = xr;
        if (k.quantize) {
            k.quantize(xr, act.data(), in);
            a = act.data();
        }
        for (int64_t r = 0; r < out; ++r)
            y[static_cast<size_t>(c * out + r)] = k.dot(in, w.bytes.data() + r * w_stride, a);
    }
    return y;
}

std::vector<float> random_activations(int64_t n_rows, int64_t in, uint32_t seed) {
    BlockFactory factory(seed);
    std::vector<float> x;
    for (int64_t c = 0; c < n_rows; ++c) {
        const std::vector<float> row = factory.activations(in);
        x.insert(x.end(), row.begin(), row.end());
    }
    return x;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::string exact(float v) {  // enough digits to tell neighbouring floats apart
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", static_cast<double>(v));
    return text;
}

std::string describe(TensorType type, Isa isa, int64_t n_rows, int threads) {
    return std::string(folio::traits(type).name) + "/" + isa_name(isa) + " rows " + std::to_string(n_rows) +
           " threads " + std::to_string(threads);
}

}  // namespace

class TestMatmul : public QObject {
    Q_OBJECT
#if !FOLIO_TEST_WITH_QT
    // The no-Qt runner's generated main() takes the slots' addresses.
    friend int main();
#endif

private slots:
    void matches_row_by_row_dots() {
        ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
        ScratchBuffer scratch;
        for (TensorType type : kWeightTypes) {
            const bool k_quant = folio::traits(type).block_elems == 256;
            const int64_t in = k_quant ? 512 : 96, out = 37;  // odd row count: a partial tile
            const Weights w = random_weights(type, out, in, 11 + static_cast<uint32_t>(type));
            for (int64_t n_rows : {1, 3, 7, 64, 67}) {
                const std::vector<float> x = random_activations(n_rows, in, static_cast<uint32_t>(n_rows));
                for (Isa isa : isas()) {
                    const std::vector<float> want = row_by_row(*dot_kernels(type, isa), w, x, n_rows);
                    for (ThreadPool& pool : pools) {
                        std::vector<float> y(want.size(), NAN);
                        const folio::Status status = matmul(w.matrix, x.data(), n_rows, y.data(), pool, scratch, isa);
                        QVERIFY2(status.ok(), (status.ok() ? "" : status.error().message).c_str());
                        for (size_t i = 0; i < y.size(); ++i)
                            QVERIFY2(same_bits(y[i], want[i]),
                                     (describe(type, isa, n_rows, pool.size()) + " output " + std::to_string(i) +
                                      ": " + exact(y[i]) + " vs " + exact(want[i]))
                                         .c_str());
                    }
                }
            }
        }
    }

    // The default entry point (best ISA) at a SmolLM2 shape.
    void default_isa_at_model_shape() {
        ThreadPool pool(2);
        ScratchBuffer scratch;
        const Weights w = random_weights(TensorType::Q4_1, 1536, 576, 5);
        BlockFactory factory(6);
        const std::vector<float> x = factory.activations(576);
        std::vector<float> y(1536);
        QVERIFY(matmul(w.matrix, x.data(), 1, y.data(), pool, scratch).ok());
        const std::vector<float> want = row_by_row(*dot_kernels(TensorType::Q4_1, best_isa()), w, x, 1);
        for (size_t i = 0; i < y.size(); ++i) QVERIFY(same_bits(y[i], want[i]));
    }

    // Continuous batching puts several sequences' rows through one matmul:
    // each row of an n-row matmul must be bit-identical to that row
    // multiplied alone, whatever register tiles and thread split the batch
    // size brings (every activation-row count of a tile and its remainders,
    // weight rows in whole and partial tiles, decode and prefill chunking).
    void rows_are_batch_invariant() {
        ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
        ScratchBuffer scratch;
        for (TensorType type : kWeightTypes) {
            const bool k_quant = folio::traits(type).block_elems == 256;
            const int64_t in = k_quant ? 512 : 160, out = 45;
            const Weights w = random_weights(type, out, in, 101 + static_cast<uint32_t>(type));
            for (int64_t n_rows : {1, 2, 3, 4, 5, 6, 7, 8, 9, 17}) {
                const std::vector<float> x = random_activations(n_rows, in, 1000 + static_cast<uint32_t>(n_rows));
                for (Isa isa : isas())
                    for (ThreadPool& pool : pools) {
                        std::vector<float> batched(static_cast<size_t>(n_rows * out), NAN);
                        QVERIFY(matmul(w.matrix, x.data(), n_rows, batched.data(), pool, scratch, isa).ok());
                        for (int64_t c = 0; c < n_rows; ++c) {
                            std::vector<float> alone(static_cast<size_t>(out), NAN);
                            QVERIFY(matmul(w.matrix, x.data() + c * in, 1, alone.data(), pools[0], scratch, isa).ok());
                            for (int64_t r = 0; r < out; ++r)
                                QVERIFY2(same_bits(batched[static_cast<size_t>(c * out + r)],
                                                   alone[static_cast<size_t>(r)]),
                                         (describe(type, isa, n_rows, pool.size()) + ": row " + std::to_string(c) +
                                          " output " + std::to_string(r) + " batched " +
                                          exact(batched[static_cast<size_t>(c * out + r)]) + " alone " +
                                          exact(alone[static_cast<size_t>(r)]))
                                             .c_str());
                        }
                    }
            }
        }
    }

    // F32 weights are multiplied as register tiles of several weight and
    // activation rows (a verify pass of K + 1 rows reads each weight once):
    // with row lengths that leave a tail past the last 8-wide vector, and
    // every row count a tile and its remainders bring, each output is the
    // dot product of its two rows alone, bit for bit, and close to a double-
    // precision sum (an accumulator mixed up between rows would not be).
    void f32_tiles_with_tails_match_dots() {
        ThreadPool pools[] = {ThreadPool(1), ThreadPool(2)};
        ScratchBuffer scratch;
        for (int64_t in : {7, 8, 13, 101, 576}) {
            const int64_t out = 11;
            const Weights w = random_weights(TensorType::F32, out, in, 7 + static_cast<uint32_t>(in));
            const auto* wf = reinterpret_cast<const float*>(w.bytes.data());
            for (int64_t n_rows : {1, 2, 3, 4, 5, 9}) {
                const std::vector<float> x = random_activations(n_rows, in, 70 + static_cast<uint32_t>(n_rows));
                for (Isa isa : isas()) {
                    const DotKernels& k = *dot_kernels(TensorType::F32, isa);
                    for (ThreadPool& pool : pools) {
                        std::vector<float> y(static_cast<size_t>(n_rows * out), NAN);
                        QVERIFY(matmul(w.matrix, x.data(), n_rows, y.data(), pool, scratch, isa).ok());
                        for (int64_t c = 0; c < n_rows; ++c)
                            for (int64_t r = 0; r < out; ++r) {
                                const float got = y[static_cast<size_t>(c * out + r)];
                                const float want = k.dot(in, wf + r * in, x.data() + c * in);
                                double exact_sum = 0, magnitude = 0;
                                for (int64_t i = 0; i < in; ++i) {
                                    exact_sum += double(wf[r * in + i]) * double(x[static_cast<size_t>(c * in + i)]);
                                    magnitude += std::fabs(double(wf[r * in + i]) * double(x[static_cast<size_t>(c * in + i)]));
                                }
                                const std::string where = describe(TensorType::F32, isa, n_rows, pool.size()) +
                                                          " in " + std::to_string(in) + " row " + std::to_string(c) +
                                                          " output " + std::to_string(r);
                                QVERIFY2(same_bits(got, want), (where + ": " + exact(got) + " vs dot " + exact(want)).c_str());
                                QVERIFY2(std::fabs(double(got) - exact_sum) <= 1e-5 * magnitude + 1e-30,
                                         (where + ": " + exact(got) + " vs " + std::to_string(exact_sum)).c_str());
                            }
                    }
                }
            }
        }
    }

    // Weights of one input in one pass (Q, K, V): each output as its own matmul
    // gives it, bit for bit, also when the types pair with different
    // activation formats (Q4_1 with Q8_1, Q8_0 with Q8_0) and cannot share.
    void many_weights_match_one_by_one() {
        ThreadPool pool(2);
        ScratchBuffer scratch;
        const std::vector<std::vector<TensorType>> groups = {
            {TensorType::Q4_1, TensorType::Q4_1, TensorType::Q4_1},
            {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q4_K},
            {TensorType::Q4_1, TensorType::Q8_0},
            {TensorType::F32, TensorType::F16}};
        for (const auto& types : groups)
            for (int64_t n_rows : {1, 5, 70}) {
                const int64_t in = 512;
                std::vector<Weights> weights;
                std::vector<WeightMatrix> matrices;
                for (size_t i = 0; i < types.size(); ++i) {
                    weights.push_back(random_weights(types[i], 24 + 13 * static_cast<int64_t>(i), in,
                                                     7 + static_cast<uint32_t>(i)));
                    matrices.push_back(weights.back().matrix);
                }
                const std::vector<float> x = random_activations(n_rows, in, 77);
                std::vector<std::vector<float>> together(types.size()), alone(types.size());
                std::vector<float*> outs;
                for (size_t i = 0; i < types.size(); ++i) {
                    together[i].assign(static_cast<size_t>(n_rows * matrices[i].out_features), NAN);
                    alone[i].assign(together[i].size(), NAN);
                    outs.push_back(together[i].data());
                    QVERIFY(matmul(matrices[i], x.data(), n_rows, alone[i].data(), pool, scratch).ok());
                }
                QVERIFY(matmul_many(matrices, x.data(), n_rows, outs, pool, scratch).ok());
                for (size_t i = 0; i < types.size(); ++i)
                    for (size_t e = 0; e < alone[i].size(); ++e)
                        QVERIFY2(same_bits(together[i][e], alone[i][e]),
                                 (std::string(folio::traits(types[i]).name) + " rows " + std::to_string(n_rows) +
                                  " output " + std::to_string(e) + ": " + exact(together[i][e]) + " vs " +
                                  exact(alone[i][e]))
                                     .c_str());
            }
        // Inputs of different widths are an error, not a wrong answer.
        const Weights a = random_weights(TensorType::Q8_0, 8, 64, 1), b = random_weights(TensorType::Q8_0, 8, 96, 2);
        std::vector<float> x(96), ya(8), yb(8);
        const WeightMatrix both[] = {a.matrix, b.matrix};
        float* const outs[] = {ya.data(), yb.data()};
        QVERIFY(!matmul_many(both, x.data(), 1, outs, pool, scratch).ok());
    }

    // F32 activations: each output is bit for bit what the dequantized
    // (F32) weights give through matmul(), for every type and ISA, alone and
    // fused, for decode and prefill row counts and any thread count; and the
    // same arguments are refused as by matmul_many().
    void f32_activations_match_dequantized_weights() {
        ThreadPool pools[] = {ThreadPool(1), ThreadPool(3)};
        ScratchBuffer scratch;
        for (Isa isa : isas())
            for (int64_t n_rows : {1, 5, 70}) {
                const int64_t in = 512;
                std::vector<Weights> quantized;
                std::vector<std::vector<float>> dequantized;
                std::vector<WeightMatrix> matrices;
                for (TensorType type : kWeightTypes) {
                    const int64_t out = 19 + static_cast<int64_t>(matrices.size());
                    quantized.push_back(random_weights(type, out, in, 300 + static_cast<uint32_t>(type)));
                    matrices.push_back(quantized.back().matrix);
                    dequantized.emplace_back(static_cast<size_t>(out * in));
                    QVERIFY(folio::dequantize(type, quantized.back().bytes.data(), quantized.back().bytes.size(),
                                              dequantized.back().data(), out * in)
                                .ok());
                }
                const std::vector<float> x = random_activations(n_rows, in, 500 + static_cast<uint32_t>(n_rows));
                for (ThreadPool& pool : pools)
                    for (size_t first = 0; first < matrices.size(); first += 3) {  // fused in threes
                        const size_t count = std::min<size_t>(3, matrices.size() - first);
                        std::vector<std::vector<float>> ys(count);
                        std::vector<float*> outs;
                        for (size_t i = 0; i < count; ++i) {
                            ys[i].assign(static_cast<size_t>(n_rows * matrices[first + i].out_features), NAN);
                            outs.push_back(ys[i].data());
                        }
                        const folio::Status status = matmul_many_f32(std::span(matrices).subspan(first, count),
                                                                     x.data(), n_rows, outs, pool, scratch, isa);
                        QVERIFY2(status.ok(), (status.ok() ? "" : status.error().message).c_str());
                        for (size_t i = 0; i < count; ++i) {
                            const TensorType type = matrices[first + i].type;
                            const WeightMatrix f32{TensorType::F32,
                                                   reinterpret_cast<const std::byte*>(dequantized[first + i].data()),
                                                   in, matrices[first + i].out_features};
                            std::vector<float> want(ys[i].size(), NAN);
                            QVERIFY(matmul(f32, x.data(), n_rows, want.data(), pool, scratch, isa).ok());
                            for (size_t e = 0; e < want.size(); ++e)
                                QVERIFY2(same_bits(ys[i][e], want[e]),
                                         (describe(type, isa, n_rows, pool.size()) + " F32 activations, output " +
                                          std::to_string(e) + ": " + exact(ys[i][e]) + " vs " + exact(want[e]))
                                             .c_str());
                        }
                    }
            }
        // The same checks as matmul_many: different widths, an unknown type.
        const Weights a = random_weights(TensorType::Q8_0, 8, 64, 1), b = random_weights(TensorType::Q8_0, 8, 96, 2);
        std::vector<float> x(96), ya(8), yb(8);
        const WeightMatrix both[] = {a.matrix, b.matrix};
        float* const outs[] = {ya.data(), yb.data()};
        QVERIFY(!matmul_many_f32(both, x.data(), 1, outs, pools[0], scratch, best_isa()).ok());
        const WeightMatrix unknown[] = {{static_cast<TensorType>(99), a.bytes.data(), 64, 8}};
        QVERIFY(!matmul_many_f32(unknown, x.data(), 1, std::span(outs, 1), pools[0], scratch, best_isa()).ok());
    }

    void rejects_bad_shapes_and_types() {
        ThreadPool pool(1);
        ScratchBuffer scratch;
        std::vector<std::byte> bytes(4096);
        std::vector<float> x(1024), y(1024);
        const auto run = [&](TensorType type, int64_t in, int64_t out, int64_t rows) {
            return matmul(WeightMatrix{type, bytes.data(), in, out}, x.data(), rows, y.data(), pool, scratch);
        };
        folio::Status s = run(TensorType::Q4_K, 576, 2, 1);  // 576 is not a multiple of 256
        QVERIFY(!s.ok());
        QVERIFY2(s.error().message.find("256") != std::string::npos, (s.error().message).c_str());
        QVERIFY(!run(TensorType::Q4_1, 100, 2, 1).ok());
        QVERIFY(!run(TensorType::BF16, 64, 2, 1).ok());
        QVERIFY(!run(TensorType::Q8_0, 0, 2, 1).ok());
        QVERIFY(!run(TensorType::Q8_0, 64, -1, 1).ok());
        QVERIFY(!matmul(WeightMatrix{static_cast<TensorType>(99), bytes.data(), 64, 2}, x.data(), 1, y.data(), pool,
                        scratch)
                     .ok());
        QVERIFY(!matmul(WeightMatrix{TensorType::Q8_0, nullptr, 64, 2}, x.data(), 1, y.data(), pool, scratch).ok());
        QVERIFY(run(TensorType::Q8_0, 64, 2, 0).ok());  // no rows: nothing to do
    }

    // A warm scratch buffer is reused, not reallocated.
    void scratch_is_reused_when_warm() {
        ThreadPool pool(2);
        ScratchBuffer scratch;
        const Weights w = random_weights(TensorType::Q8_0, 8, 256, 3);
        std::vector<float> x(256 * 4, 0.5f), y(8 * 4);
        QVERIFY(matmul(w.matrix, x.data(), 4, y.data(), pool, scratch).ok());
        const size_t capacity = scratch.capacity();
        const std::byte* first = scratch.reserve(1);
        QVERIFY(capacity >= 4 * activation_row_bytes(ActivationType::Q8_0, 256));
        QVERIFY(matmul(w.matrix, x.data(), 4, y.data(), pool, scratch).ok());
        QCOMPARE(scratch.capacity(), capacity);
        QVERIFY(scratch.reserve(1) == first);
    }
};

FOLIO_TEST_MAIN(TestMatmul)
#include "test_matmul.moc"
