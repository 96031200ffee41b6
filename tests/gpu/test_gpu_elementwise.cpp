// The CUDA element-wise kernels (RMSNorm, add + RMSNorm, bias, row gather,
// SwiGLU / GeGLU, add, scale, softcap) against double-precision references
// written here: random inputs (never zeros), NaN-poisoned outputs, row
// lengths that are and are not whole float4s. Skips without a GPU. (Their
// fused activation quantization is checked bit for bit in test_gpu_matmul.)
// Also the importance matrix's column sums.
#include <cmath>
#include <cstring>
#include <cstdint>
#include <utility>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "folio_kernels/elementwise.h"
#include "folio_test.h"
#include "gpu_test_support.h"

namespace fk = folio::kernels;

class TestGpuElementwise : public QObject {
    Q_OBJECT
#if !FOLIO_TEST_WITH_QT
    friend int main();
#endif

private slots:
    // The importance matrix's column sums: against double sums, for row
    // counts that are and are not whole slices; the same bits twice.
    void column_stats_match_reference() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        std::mt19937 rng(5);
        for (const auto& [rows, dim] : {std::pair<int64_t, int64_t>{512, 576}, {77, 300}, {1, 33}, {33, 14336}}) {
            const auto x = random_floats(rng, static_cast<size_t>(rows * dim), -3, 3);
            std::vector<double> ref(static_cast<size_t>(2 * dim));
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < dim; ++c) {
                    const double v = x[static_cast<size_t>(r * dim + c)];
                    ref[static_cast<size_t>(c)] += v * v;
                    ref[static_cast<size_t>(dim + c)] += std::fabs(v);
                }
            DeviceArray<float> dx(x), out(static_cast<size_t>(2 * dim));
            DeviceArray<float> work(static_cast<size_t>(fk::column_stats_workspace_floats(rows, dim)));
            QCOMPARE(cuda_error(out.poison(), "poison"), std::string());
            QCOMPARE(cuda_error(fk::column_stats(dx.ptr, rows, dim, out.ptr, work.ptr, nullptr), "column_stats"),
                     std::string());
            std::vector<float> got, again;
            QCOMPARE(cuda_error(out.download(got), "download"), std::string());
            QCOMPARE(cuda_error(fk::column_stats(dx.ptr, rows, dim, out.ptr, work.ptr, nullptr), "column_stats"),
                     std::string());
            QCOMPARE(cuda_error(out.download(again), "download"), std::string());
            size_t non_finite = 0;
            const double err = rel_error(got, ref, &non_finite);
            QCOMPARE(non_finite, size_t{0});
            QVERIFY2(err < 1e-5, (std::to_string(rows) + "x" + std::to_string(dim) + ": " + std::to_string(err)).c_str());
            QVERIFY(got == again);
        }
        QCOMPARE(fk::column_stats(nullptr, 0, 8, nullptr, nullptr, nullptr), cudaErrorInvalidValue);
    }

    void elementwise_kernels_match_reference() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        std::mt19937 rng(11);
        for (const int64_t dim : {int64_t{576}, int64_t{2048}, int64_t{33}}) {
            const int64_t rows = 7;
            const size_t n = static_cast<size_t>(rows * dim);
            const auto x = random_floats(rng, n, -2, 2), y = random_floats(rng, n, -2, 2);
            const auto w = random_floats(rng, static_cast<size_t>(dim), 0.5f, 1.5f);
            const float eps = 1e-6f;
            std::vector<double> ref(n), ref_sum(n), ref_add(n);
            for (int64_t r = 0; r < rows; ++r) {
                double ss = 0, ss_sum = 0;
                for (int64_t c = 0; c < dim; ++c) {
                    const size_t i = static_cast<size_t>(r * dim + c);
                    ss += double{x[i]} * x[i];
                    ref_add[i] = double{x[i]} + y[i];
                    ss_sum += ref_add[i] * ref_add[i];
                }
                const double inv = 1 / std::sqrt(ss / dim + eps), inv_sum = 1 / std::sqrt(ss_sum / dim + eps);
                for (int64_t c = 0; c < dim; ++c) {
                    const size_t i = static_cast<size_t>(r * dim + c);
                    ref[i] = x[i] * inv * w[static_cast<size_t>(c)];
                    ref_sum[i] = ref_add[i] * inv_sum * w[static_cast<size_t>(c)];
                }
            }
            DeviceArray<float> dx(x), dy(y), dw(w), dout(n);
            QVERIFY(dx.status == cudaSuccess && dout.status == cudaSuccess);
            std::vector<float> out;
            QVERIFY(dout.poison() == cudaSuccess);
            QVERIFY(fk::rms_norm(dx.ptr, dw.ptr, eps, rows, dim, dout.ptr, nullptr) == cudaSuccess);
            QVERIFY(dout.download(out) == cudaSuccess);
            std::string e = check_close("rms_norm", out, ref, 1e-5);
            QVERIFY2(e.empty(), e.c_str());
            // In place.
            QVERIFY(fk::rms_norm(dx.ptr, dw.ptr, eps, rows, dim, dx.ptr, nullptr) == cudaSuccess);
            QVERIFY(dx.download(out) == cudaSuccess);
            e = check_close("rms_norm in place", out, ref, 1e-5);
            QVERIFY2(e.empty(), e.c_str());
            // Two matrices in one launch (Q's and K's heads): each row's bits as rms_norm alone gives them.
            {
                std::vector<float> alone_a, alone_b, pair_a, pair_b;
                const int64_t b_rows = 3;
                const std::vector<float> xb(x.begin(), x.begin() + b_rows * dim);
                const auto wb = random_floats(rng, static_cast<size_t>(dim), 0.5f, 1.5f);
                DeviceArray<float> a1(x), b1(xb), a2(x), b2(xb), dwb(wb);
                QVERIFY(fk::rms_norm(a1.ptr, dw.ptr, eps, rows, dim, a1.ptr, nullptr) == cudaSuccess);
                QVERIFY(fk::rms_norm(b1.ptr, dwb.ptr, eps, b_rows, dim, b1.ptr, nullptr) == cudaSuccess);
                QVERIFY(fk::rms_norm_pair(a2.ptr, dw.ptr, rows, b2.ptr, dwb.ptr, b_rows, eps, dim, nullptr) == cudaSuccess);
                QVERIFY(a1.download(alone_a) == cudaSuccess && b1.download(alone_b) == cudaSuccess);
                QVERIFY(a2.download(pair_a) == cudaSuccess && b2.download(pair_b) == cudaSuccess);
                QVERIFY(std::memcmp(alone_a.data(), pair_a.data(), alone_a.size() * 4) == 0);
                QVERIFY(std::memcmp(alone_b.data(), pair_b.data(), alone_b.size() * 4) == 0);
            }
            // x + y, then its norm.
            DeviceArray<float> dx2(x);
            QVERIFY(dout.poison() == cudaSuccess);
            QVERIFY(fk::add_rms_norm(dx2.ptr, dy.ptr, dw.ptr, eps, rows, dim, dout.ptr, nullptr) == cudaSuccess);
            QVERIFY(dout.download(out) == cudaSuccess);
            e = check_close("add_rms_norm out", out, ref_sum, 1e-5);
            QVERIFY2(e.empty(), e.c_str());
            QVERIFY(dx2.download(out) == cudaSuccess);
            e = check_close("add_rms_norm x", out, ref_add, 1e-6);
            QVERIFY2(e.empty(), e.c_str());
            // Bias, and gather of rows in a shuffled order with repeats.
            DeviceArray<float> dx3(x);
            QVERIFY(fk::add_bias(dx3.ptr, dw.ptr, rows, dim, nullptr) == cudaSuccess);
            QVERIFY(dx3.download(out) == cudaSuccess);
            std::vector<double> ref_bias(n);
            for (size_t i = 0; i < n; ++i) ref_bias[i] = double{x[i]} + w[i % static_cast<size_t>(dim)];
            e = check_close("add_bias", out, ref_bias, 1e-6);
            QVERIFY2(e.empty(), e.c_str());
            const std::vector<int32_t> rows_wanted = {5, 0, 6, 5, 2};
            DeviceArray<int32_t> drows(rows_wanted);
            DeviceArray<float> dgather(rows_wanted.size() * static_cast<size_t>(dim));
            QVERIFY(dgather.poison() == cudaSuccess);
            QVERIFY(fk::gather_rows_f32(dy.ptr, drows.ptr, static_cast<int64_t>(rows_wanted.size()), dim,
                                        dgather.ptr, nullptr) == cudaSuccess);
            QVERIFY(dgather.download(out) == cudaSuccess);
            std::vector<double> ref_gather;
            for (int32_t r : rows_wanted)
                for (int64_t c = 0; c < dim; ++c) ref_gather.push_back(y[static_cast<size_t>(r * dim + c)]);
            e = check_close("gather_rows_f32", out, ref_gather, 0.0);
            QVERIFY2(e.empty(), e.c_str());
        }
        for (const int64_t n : {int64_t{100003}, int64_t{4096}}) {
            const auto g = random_floats(rng, static_cast<size_t>(n), -6, 6);
            const auto u = random_floats(rng, static_cast<size_t>(n), -2, 2);
            std::vector<double> silu(g.size()), gelu(g.size()), sum(g.size()), scaled(g.size()), capped(g.size());
            for (size_t i = 0; i < g.size(); ++i) {
                const double x = g[i];
                silu[i] = x / (1 + std::exp(-x)) * u[i];
                gelu[i] = 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))) * u[i];
                sum[i] = x + u[i];
                scaled[i] = x * 0.37;
                capped[i] = 3.0 * std::tanh(x / 3.0);
            }
            std::vector<float> out;
            DeviceArray<float> du(u);
            struct Case {
                const char* name;
                const std::vector<double>* ref;
            };
            for (const Case& c : {Case{"silu_mul", &silu}, Case{"gelu_mul", &gelu}, Case{"add", &sum},
                                  Case{"scale", &scaled}, Case{"softcap", &capped}}) {
                DeviceArray<float> dg(g);
                QVERIFY(dg.status == cudaSuccess);
                cudaError_t err = cudaSuccess;
                const std::string name = c.name;
                if (name == "silu_mul") err = fk::silu_mul(dg.ptr, du.ptr, n, nullptr);
                if (name == "gelu_mul") err = fk::gelu_mul(dg.ptr, du.ptr, n, nullptr);
                if (name == "add") err = fk::add(dg.ptr, du.ptr, n, nullptr);
                if (name == "scale") err = fk::scale(dg.ptr, 0.37f, n, nullptr);
                if (name == "softcap") err = fk::softcap(dg.ptr, 3.0f, n, nullptr);
                QVERIFY2(err == cudaSuccess, cuda_error(err, c.name).c_str());
                QVERIFY(dg.download(out) == cudaSuccess);
                const std::string e = check_close(c.name, out, *c.ref, 1e-6);
                QVERIFY2(e.empty(), e.c_str());
            }
        }
    }
};

FOLIO_TEST_MAIN(TestGpuElementwise)
#include "test_gpu_elementwise.moc"
