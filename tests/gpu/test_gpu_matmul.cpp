// The CUDA matrix kernels (folio_kernels/matmul.h) against the CPU backend:
// quantized products must equal the CPU kernels' up to float summation order
// (same activation quantization, same integer dots), every type against a
// double-precision product of the engine's dequantized weights, a row's
// result must not depend on the batch around it, matmul_parts must equal
// matmul() split into parts, and gather_rows must reproduce the dequantizer
// bit for bit. Skips without a CUDA GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "folio_kernels/elementwise.h"
#include "folio_test.h"
#include "gpu_matrix.h"

namespace fk = folio::kernels;
using folio::TensorType;
using namespace gpu_matrix;

namespace {

const TensorType kQuantized[] = {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
                                 TensorType::Q8_0, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};
const TensorType kAllTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q4_0,
                                TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,
                                TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};
const int64_t kBatchSizes[] = {1, 2, 3, 8, 9, 64, 300};

// Runs matmul_parts with the parts laid out in one NaN-poisoned buffer:
// kPartGuard floats, part 0 ([n][widths[0]]), kPartGuard floats, part 1, ...,
// kPartGuard floats. `out` is that whole buffer, read back.
constexpr int64_t kPartGuard = 64;
cudaError_t gpu_matmul_parts(const GpuMatrix& w, const std::vector<float>& x, int64_t n,
                             const std::vector<int64_t>& widths, std::vector<float>& out, cublasHandle_t cublas) {
    const int64_t rows = w.m.rows, cols = w.m.cols;
    const size_t total = static_cast<size_t>(kPartGuard * static_cast<int64_t>(widths.size() + 1) + n * rows);
    DeviceBuffer dx(x.size() * sizeof(float)), dout(total * sizeof(float));
    DeviceBuffer ws(fk::matmul_parts_workspace_bytes(w.m.type, n, rows, cols));
    if (!dx.ok() || !dout.ok() || !ws.ok()) return cudaErrorMemoryAllocation;
    cudaError_t e = cudaMemcpy(dx.get(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemset(dout.get(), 0xff, dout.bytes());  // NaN
    if (e != cudaSuccess) return e;
    fk::SplitParts parts;
    int64_t at = kPartGuard;
    for (const int64_t width : widths) {
        parts.dst[parts.count] = dout.get<float>() + at;
        parts.width[parts.count++] = width;
        at += n * width + kPartGuard;
    }
    const fk::MatmulWorkspace workspace{ws.get(), ws.bytes(), cublas};
    e = fk::matmul_parts(w.m, dx.get<float>(), n, parts, workspace, nullptr);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return e;
    out.resize(total);
    return cudaMemcpy(out.data(), dout.get(), dout.bytes(), cudaMemcpyDeviceToHost);
}

// y of the CPU backend's kernels: quantize each activation row, then dot.
bool cpu_matmul(TensorType type, const std::vector<std::byte>& gguf, int64_t rows, int64_t cols,
                const std::vector<float>& x, int64_t n, std::vector<float>& y) {
    const folio::cpu::DotKernels* k = folio::cpu::dot_kernels(type, folio::cpu::best_isa());
    if (!k) return false;
    const size_t w_row = gguf.size() / static_cast<size_t>(rows);
    const size_t a_row = folio::cpu::activation_row_bytes(k->activation, cols);
    std::vector<std::byte> a(a_row);
    y.assign(static_cast<size_t>(n * rows), 0.0f);
    for (int64_t j = 0; j < n; ++j) {
        const void* act = x.data() + j * cols;
        if (k->quantize) {
            k->quantize(x.data() + j * cols, a.data(), cols);
            act = a.data();
        }
        for (int64_t r = 0; r < rows; ++r) y[j * rows + r] = k->dot(cols, gguf.data() + r * w_row, act);
    }
    return true;
}

struct Error {
    double norm = 0;  // ||a - b|| / ||b||
    double max = 0;   // max |a - b| / max |b|
    bool finite = true;
};

Error compare(const std::vector<float>& got, const std::vector<double>& want) {
    double diff2 = 0, ref2 = 0, max_diff = 0, max_ref = 0;
    Error e;
    for (size_t i = 0; i < want.size(); ++i) {
        if (!std::isfinite(got[i])) e.finite = false;
        const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
        diff2 += d * d;
        ref2 += want[i] * want[i];
        max_diff = std::max(max_diff, d);
        max_ref = std::max(max_ref, std::fabs(want[i]));
    }
    e.norm = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    e.max = max_ref > 0 ? max_diff / max_ref : max_diff;
    return e;
}

std::vector<double> widened(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// Double-precision product with the dequantized weights, for rows j of x
// listed in `which` (all when empty); returns the matching GPU values too.
void double_reference(const std::vector<float>& w, int64_t rows, int64_t cols, const std::vector<float>& x,
                      const std::vector<float>& y_gpu, const std::vector<int64_t>& which, std::vector<double>& ref,
                      std::vector<float>& got) {
    ref.clear();
    got.clear();
    for (const int64_t j : which) {
        for (int64_t r = 0; r < rows; ++r) {
            double s = 0;
            for (int64_t c = 0; c < cols; ++c) s += static_cast<double>(w[r * cols + c]) * x[j * cols + c];
            ref.push_back(s);
            got.push_back(y_gpu[j * rows + r]);
        }
    }
}

std::vector<int64_t> sample_rows(int64_t n) {
    if (n <= 9) {
        std::vector<int64_t> all;
        for (int64_t j = 0; j < n; ++j) all.push_back(j);
        return all;
    }
    return {0, 5, 7, 8, n / 2, n - 1};
}

// Tolerance against the double product: the activation quantization (8-bit
// quants of each block) dominates for quantized types, ~1% with 32-element
// blocks and ~3-5% with Q8_K's 256-element blocks, whose one step is set by
// the block's largest |x| (the activations have a 40-sigma outlier); the CPU
// backend has the same error (it computes the same integers). F16 / BF16
// activations on the cuBLAS path (n > 1) round x to 11 / 8 bits.
double double_tolerance(TensorType t, int64_t n) {
    if (t == TensorType::F32) return 1e-5;
    if (t == TensorType::F16) return n > fk::kFloatMatvecMaxRows ? 3e-3 : 1e-5;
    if (t == TensorType::BF16) return n > fk::kFloatMatvecMaxRows ? 2e-2 : 1e-5;
    return folio::traits(t).block_elems == 256 ? 8e-2 : 2.5e-2;
}

}  // namespace

class GpuMatmulTest : public QObject {
    Q_OBJECT

private:
    bool gpu_ = false;
    cublasHandle_t cublas_ = nullptr;

    // One type and shape over every batch size: GPU vs CPU kernel vs double.
    void check_type(TensorType type, int64_t rows, int64_t cols, const std::vector<int64_t>& batches, uint32_t seed,
                    std::string& report, bool& ok) {
        const std::vector<std::byte> gguf = random_gguf(type, rows, cols, seed);
        const std::vector<float> w = dequantized(type, gguf, rows, cols);
        GpuMatrix gm;
        const cudaError_t e = upload(type, gguf, rows, cols, gm);
        if (e != cudaSuccess || w.empty()) {
            report += name_of(type) + ": " + cuda_message(e, "upload") + "\n";
            ok = false;
            return;
        }
        double worst_cpu = 0, worst_ref = 0;
        for (const int64_t n : batches) {
            const std::vector<float> x = random_activations(n, cols, seed + static_cast<uint32_t>(n));
            std::vector<float> y;
            const cudaError_t me = gpu_matmul(gm, x, n, y, cublas_);
            const std::string what = name_of(type) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                                     " n=" + std::to_string(n);
            if (me != cudaSuccess) {
                report += what + ": " + cuda_message(me, "matmul") + "\n";
                ok = false;
                continue;
            }
            std::vector<float> y_cpu;
            if (cpu_matmul(type, gguf, rows, cols, x, n, y_cpu)) {
                const Error ec = compare(y, widened(y_cpu));
                worst_cpu = std::max(worst_cpu, ec.max);
                const bool quantized = folio::traits(type).block_elems > 1;
                // Quantized: same integers and scales, only the float sums differ.
                const double tol = quantized ? 2e-5 : double_tolerance(type, n) * 2;
                if (!ec.finite || ec.max > tol || ec.norm > tol) {
                    char buf[160];
                    std::snprintf(buf, sizeof buf, ": vs CPU kernel norm %.3g max %.3g (tol %.1g)%s\n", ec.norm,
                                  ec.max, tol, ec.finite ? "" : " NON-FINITE");
                    report += what + buf;
                    ok = false;
                }
            }
            std::vector<double> ref;
            std::vector<float> got;
            double_reference(w, rows, cols, x, y, sample_rows(n), ref, got);
            const Error er = compare(got, ref);
            worst_ref = std::max(worst_ref, er.norm);
            bool all_finite = true;
            for (const float v : y) all_finite = all_finite && std::isfinite(v);
            if (!all_finite || er.norm > double_tolerance(type, n)) {
                char buf[160];
                std::snprintf(buf, sizeof buf, ": vs double norm %.3g max %.3g (tol %.1g)%s\n", er.norm, er.max,
                              double_tolerance(type, n), all_finite ? "" : " NON-FINITE (unwritten?)");
                report += what + buf;
                ok = false;
            }
        }
        std::printf("  %-5s %6lldx%-6lld max rel err vs CPU kernel %.2e, norm rel err vs double %.2e\n",
                    name_of(type).c_str(), static_cast<long long>(rows), static_cast<long long>(cols), worst_cpu,
                    worst_ref);
    }

private slots:
    void initTestCase() {
        gpu_ = gpu_present();
        if (gpu_ && cublasCreate(&cublas_) != CUBLAS_STATUS_SUCCESS) cublas_ = nullptr;
    }
    void cleanupTestCase() {
        if (cublas_) cublasDestroy(cublas_);
    }

    void quantizedTypesMatchCpuKernels() {
        if (!gpu_) QSKIP("no CUDA GPU");
        std::string report;
        bool ok = true;
        const std::vector<int64_t> batches(std::begin(kBatchSizes), std::end(kBatchSizes));
        uint32_t seed = 100;
        for (const TensorType t : kQuantized) check_type(t, 576, 1536, batches, seed++, report, ok);
        // Few columns (fewer blocks than lanes) and an odd row count.
        for (const TensorType t : kQuantized) check_type(t, 37, 256, {1, 3, 9}, seed++, report, ok);
        QVERIFY2(ok, report.c_str());
    }

    void floatTypesMatchReference() {
        if (!gpu_) QSKIP("no CUDA GPU");
        QVERIFY(cublas_ != nullptr);
        std::string report;
        bool ok = true;
        const std::vector<int64_t> batches(std::begin(kBatchSizes), std::end(kBatchSizes));
        uint32_t seed = 200;
        for (const TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
            check_type(t, 576, 1536, batches, seed++, report, ok);
            check_type(t, 33, 100, {1, 3, 9}, seed++, report, ok);  // rows not whole 16-byte chunks
        }
        QVERIFY2(ok, report.c_str());
    }

    // Gemma-3-270M-like embedding / output shapes: a long matrix with 640 columns.
    void longMatrices() {
        if (!gpu_) QSKIP("no CUDA GPU");
        std::string report;
        bool ok = true;
        check_type(TensorType::Q8_0, 262144, 640, {1, 3}, 300, report, ok);
        check_type(TensorType::F16, 65536, 640, {1, 9}, 301, report, ok);
        check_type(TensorType::Q4_0, 4099, 640, {2, 17}, 302, report, ok);
        check_type(TensorType::Q6_K, 4099, 768, {1, 10}, 303, report, ok);
        QVERIFY2(ok, report.c_str());
    }

    // A row's y is bit-identical alone, in a small batch or in a large one.
    // 5120 columns: 160 blocks of 32, more than the 128 units a warp's lanes
    // hold at once, so a lone row's second round is loaded after the first.
    void quantizedResultsAreBatchInvariant() {
        if (!gpu_) QSKIP("no CUDA GPU");
        std::string report;
        uint32_t seed = 400;
        const int64_t rows = 330, n = 203;  // 203: six tensor-core tiles of 32 and a tail
        for (const int64_t cols : {int64_t{1024}, int64_t{5120}}) {
            for (const TensorType t : kQuantized) {
                GpuMatrix gm;
                const cudaError_t e = upload(t, random_gguf(t, rows, cols, seed), rows, cols, gm);
                QVERIFY2(e == cudaSuccess, cuda_message(e, "upload").c_str());
                const std::vector<float> x = random_activations(n, cols, seed++);
                std::vector<float> y_all;
                QVERIFY(gpu_matmul(gm, x, n, y_all, cublas_) == cudaSuccess);
                for (const int64_t j : {int64_t{0}, int64_t{7}, int64_t{8}, int64_t{101}, int64_t{202}}) {
                    for (const int64_t batch : {int64_t{1}, int64_t{3}, int64_t{9}}) {
                        // Row j placed last in a batch of `batch` rows taken from the start of x.
                        std::vector<float> xb;
                        for (int64_t k = 0; k < batch - 1; ++k)
                            xb.insert(xb.end(), x.begin() + (k + 1) * cols, x.begin() + (k + 2) * cols);
                        xb.insert(xb.end(), x.begin() + j * cols, x.begin() + (j + 1) * cols);
                        std::vector<float> yb;
                        QVERIFY(gpu_matmul(gm, xb, batch, yb, cublas_) == cudaSuccess);
                        if (std::memcmp(yb.data() + (batch - 1) * rows, y_all.data() + j * rows, rows * sizeof(float)))
                            report += name_of(t) + " cols " + std::to_string(cols) + ": row " + std::to_string(j) +
                                      " differs in a batch of " + std::to_string(batch) + " from the batch of " +
                                      std::to_string(n) + "\n";
                    }
                }
            }
        }
        QVERIFY2(report.empty(), report.c_str());
    }

    void gatherRowsMatchesDequantizer() {
        if (!gpu_) QSKIP("no CUDA GPU");
        std::string report;
        uint32_t seed = 500;
        const int64_t rows = 97, cols = 768;
        const std::vector<int32_t> ids = {0, 96, 13, 13, 50};
        for (const TensorType t : kAllTypes) {
            const std::vector<std::byte> gguf = random_gguf(t, rows, cols, seed++);
            const std::vector<float> w = dequantized(t, gguf, rows, cols);
            GpuMatrix gm;
            const cudaError_t e = upload(t, gguf, rows, cols, gm);
            QVERIFY2(e == cudaSuccess, cuda_message(e, "upload").c_str());
            DeviceBuffer dids(ids.size() * 4), dout(ids.size() * cols * 4);
            QVERIFY(cudaMemcpy(dids.get(), ids.data(), ids.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
            QVERIFY(cudaMemset(dout.get(), 0xff, dout.bytes()) == cudaSuccess);
            QVERIFY(fk::gather_rows(gm.m, dids.get<int32_t>(), static_cast<int64_t>(ids.size()), dout.get<float>(),
                                    nullptr) == cudaSuccess);
            std::vector<float> out(ids.size() * cols);
            QVERIFY(cudaMemcpy(out.data(), dout.get(), dout.bytes(), cudaMemcpyDeviceToHost) == cudaSuccess);
            for (size_t i = 0; i < ids.size(); ++i)
                if (std::memcmp(out.data() + i * cols, w.data() + ids[i] * cols, cols * sizeof(float)) != 0) {
                    report += name_of(t) + ": gathered row " + std::to_string(ids[i]) + " differs\n";
                    break;
                }
        }
        QVERIFY2(report.empty(), report.c_str());
    }

    // Every byte written, deterministic, finite values of about the asked scale.
    void randomMatricesAreFiniteAndScaled() {
        if (!gpu_) QSKIP("no CUDA GPU");
        std::string report;
        const int64_t rows = 64, cols = 512;
        const float scale = 0.02f;
        for (const TensorType t : kAllTypes) {
            const size_t bytes = fk::device_matrix_bytes(kind(t), rows, cols);
            DeviceBuffer a(bytes), b(bytes);
            QVERIFY(a.ok() && b.ok());
            QVERIFY(cudaMemset(a.get(), 0x00, bytes) == cudaSuccess);
            QVERIFY(cudaMemset(b.get(), 0xff, bytes) == cudaSuccess);
            QVERIFY(fk::fill_random_matrix(kind(t), a.get(), rows, cols, 7, scale, nullptr) == cudaSuccess);
            QVERIFY(fk::fill_random_matrix(kind(t), b.get(), rows, cols, 7, scale, nullptr) == cudaSuccess);
            std::vector<uint8_t> ha(bytes), hb(bytes);
            QVERIFY(cudaMemcpy(ha.data(), a.get(), bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
            QVERIFY(cudaMemcpy(hb.data(), b.get(), bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
            if (ha != hb) report += name_of(t) + ": bytes left unwritten or not deterministic\n";
            std::vector<int32_t> ids(rows);
            for (int64_t r = 0; r < rows; ++r) ids[r] = static_cast<int32_t>(r);
            DeviceBuffer dids(rows * 4), dout(rows * cols * 4);
            QVERIFY(cudaMemcpy(dids.get(), ids.data(), rows * 4, cudaMemcpyHostToDevice) == cudaSuccess);
            const fk::DeviceMatrix m{kind(t), a.get(), rows, cols};
            QVERIFY(fk::gather_rows(m, dids.get<int32_t>(), rows, dout.get<float>(), nullptr) == cudaSuccess);
            std::vector<float> w(rows * cols);
            QVERIFY(cudaMemcpy(w.data(), dout.get(), dout.bytes(), cudaMemcpyDeviceToHost) == cudaSuccess);
            double sum2 = 0;
            bool finite = true;
            for (const float v : w) {
                finite = finite && std::isfinite(v);
                sum2 += static_cast<double>(v) * v;
            }
            const double rms = std::sqrt(sum2 / static_cast<double>(w.size()));
            std::printf("  %-5s random weights rms %.4f (scale %.3f)\n", name_of(t).c_str(), rms, scale);
            if (!finite || rms < 0.2 * scale || rms > 5 * scale)
                report += name_of(t) + ": rms " + std::to_string(rms) + " for scale " + std::to_string(scale) + "\n";
        }
        QVERIFY2(report.empty(), report.c_str());
    }

    // matmul_parts puts each part's rows where matmul() and then split_columns()
    // put them, bit for bit: every element written, nothing around the parts.
    // Widths that are not multiples of a block's 4 rows put part boundaries
    // inside a block; F32 / F16 / BF16 with n > 1 take the cuBLAS-then-split
    // path, a column at a time for those widths and four at a time for
    // {256, 64, 64} (Q, K, V's proportions).
    void partsMatchMatmulThenSplit() {
        if (!gpu_) QSKIP("no CUDA GPU");
        QVERIFY(cublas_ != nullptr);
        const int64_t cols = 512;
        const std::vector<std::vector<int64_t>> splits = {{130, 67}, {61, 3, 70}, {256, 64, 64}};
        std::string report;
        uint32_t seed = 700;
        for (const TensorType t : kAllTypes) {
            for (const std::vector<int64_t>& widths : splits) {
                int64_t rows = 0;
                for (const int64_t width : widths) rows += width;
                GpuMatrix gm;
                const cudaError_t ue = upload(t, random_gguf(t, rows, cols, seed++), rows, cols, gm);
                QVERIFY2(ue == cudaSuccess, cuda_message(ue, "upload").c_str());
                for (const int64_t n : {1, 2, 3, 8, 9, 64}) {
                    const std::string what = name_of(t) + " " + std::to_string(widths.size()) + " parts n=" +
                                             std::to_string(n);
                    const std::vector<float> x = random_activations(n, cols, seed++);
                    std::vector<float> y, out;
                    const cudaError_t me = gpu_matmul(gm, x, n, y, cublas_);
                    const cudaError_t pe = gpu_matmul_parts(gm, x, n, widths, out, cublas_);
                    if (me != cudaSuccess || pe != cudaSuccess) {
                        report += what + ": " + cuda_message(me != cudaSuccess ? me : pe, "matmul") + "\n";
                        continue;
                    }
                    int64_t at = 0, first = 0;
                    std::string problem;
                    for (const int64_t width : widths) {
                        for (int64_t g = 0; g < kPartGuard; ++g)
                            if (!std::isnan(out[at + g])) problem = "written outside the parts";
                        at += kPartGuard;
                        for (int64_t j = 0; j < n; ++j) {
                            const float* got = out.data() + at + j * width;
                            const float* want = y.data() + j * rows + first;
                            for (int64_t c = 0; c < width; ++c)
                                if (std::isnan(got[c])) problem = "element left unwritten";
                            if (problem.empty() && std::memcmp(got, want, width * sizeof(float)) != 0)
                                problem = "differs from matmul()";
                        }
                        at += n * width;
                        first += width;
                    }
                    for (int64_t g = 0; g < kPartGuard; ++g)
                        if (!std::isnan(out[at + g])) problem = "written after the last part";
                    if (!problem.empty()) report += what + ": " + problem + "\n";
                }
            }
        }
        QVERIFY2(report.empty(), report.c_str());
    }

    // A producer that quantizes (or converts to F16 / BF16) its output for the
    // next matmul (a norm, a gated activation; elementwise.h ActivationQuant)
    // writes what the matmul would write itself, bit for bit, and leaves its
    // float output as it is without: the matmul told x_in_workspace gives the
    // same y. Shapes include rows whose float4s end mid-warp (576 columns: 144
    // lanes).
    void producersQuantizeAsTheMatmulDoes() {
        if (!gpu_) QSKIP("no CUDA GPU");
        std::string report;
        uint32_t seed = 900;
        enum Producer { Norm, AddNorm, Silu, Gelu };
        for (const TensorType t : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q8_0,
                                   TensorType::F16, TensorType::BF16}) {
            const fk::ActivationFormat format = fk::fused_activation_format(kind(t));
            const bool is_float = t == TensorType::F16 || t == TensorType::BF16;
            for (const int64_t cols : {int64_t{576}, int64_t{640}, int64_t{4096}}) {
                const int64_t rows = 96;
                GpuMatrix gm;
                QVERIFY(upload(t, random_gguf(t, rows, cols, seed++), rows, cols, gm) == cudaSuccess);
                for (const int64_t n : {1, 3, 9}) {
                    if (is_float && n == 1) continue;  // the matvec reads x as it is
                    for (const Producer producer : {Norm, AddNorm, Silu, Gelu}) {
                        const std::string what = name_of(t) + " cols=" + std::to_string(cols) + " n=" +
                                                 std::to_string(n) + " producer " + std::to_string(producer);
                        const size_t count = static_cast<size_t>(n * cols);
                        const std::vector<float> a = random_activations(n, cols, seed++),
                                                 b = random_activations(n, cols, seed++),
                                                 w = random_activations(1, cols, seed++);
                        const size_t ws_bytes = fk::matmul_workspace_bytes(kind(t), n, rows, cols);
                        DeviceBuffer da(count * 4), db(count * 4), dw(cols * 4), dout(count * 4), dy(n * rows * 4),
                            ws(ws_bytes);
                        QVERIFY(da.ok() && db.ok() && dw.ok() && dout.ok() && dy.ok() && ws.ok());
                        // Twice: the matmul quantizing x itself, then the producer doing it.
                        std::vector<float> out[2], y[2];
                        std::vector<uint8_t> blocks[2];
                        for (int fused = 0; fused < 2; ++fused) {
                            QVERIFY(cudaMemcpy(da.get(), a.data(), count * 4, cudaMemcpyHostToDevice) == cudaSuccess);
                            QVERIFY(cudaMemcpy(db.get(), b.data(), count * 4, cudaMemcpyHostToDevice) == cudaSuccess);
                            QVERIFY(cudaMemcpy(dw.get(), w.data(), cols * 4, cudaMemcpyHostToDevice) == cudaSuccess);
                            QVERIFY(cudaMemset(ws.get(), 0xa5, ws_bytes) == cudaSuccess);
                            const fk::ActivationQuant q =
                                fused ? fk::ActivationQuant{format, ws.get()} : fk::ActivationQuant{};
                            float* x = dout.get<float>();
                            cudaError_t e = cudaSuccess;
                            switch (producer) {
                                case Norm: e = fk::rms_norm(da.get<float>(), dw.get<float>(), 1e-5f, n, cols, x, nullptr, q); break;
                                case AddNorm:
                                    e = fk::add_rms_norm(da.get<float>(), db.get<float>(), dw.get<float>(), 1e-5f, n, cols,
                                                         x, nullptr, q);
                                    break;
                                case Silu: x = da.get<float>(); e = fk::silu_mul(x, db.get<float>(), n * cols, nullptr, q); break;
                                case Gelu: x = da.get<float>(); e = fk::gelu_mul(x, db.get<float>(), n * cols, nullptr, q); break;
                            }
                            QVERIFY2(e == cudaSuccess, cuda_message(e, what.c_str()).c_str());
                            fk::MatmulWorkspace mw{ws.get(), ws_bytes, cublas_};
                            mw.x_in_workspace = fused == 1;
                            e = fk::matmul(gm.m, x, n, dy.get<float>(), mw, nullptr);
                            QVERIFY2(e == cudaSuccess, cuda_message(e, what.c_str()).c_str());
                            out[fused].resize(count);
                            y[fused].resize(static_cast<size_t>(n * rows));
                            blocks[fused].resize(ws_bytes);
                            QVERIFY(cudaMemcpy(out[fused].data(), x, count * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
                            QVERIFY(cudaMemcpy(y[fused].data(), dy.get(), y[fused].size() * 4, cudaMemcpyDeviceToHost) ==
                                    cudaSuccess);
                            QVERIFY(cudaMemcpy(blocks[fused].data(), ws.get(), ws_bytes, cudaMemcpyDeviceToHost) ==
                                    cudaSuccess);
                        }
                        // Float weights: the converted x; cuBLAS's own scratch follows it.
                        const size_t compared = is_float ? static_cast<size_t>(count * 2) : blocks[0].size();
                        if (out[0] != out[1]) report += what + ": the float output changed\n";
                        else if (std::memcmp(blocks[0].data(), blocks[1].data(), compared) != 0)
                            report += what + ": the matmul's input differs\n";
                        else if (std::memcmp(y[0].data(), y[1].data(), y[0].size() * 4) != 0) report += what + ": y differs\n";
                    }
                }
            }
        }
        // The K-quants quantize their own super-blocks: told otherwise, the matmul refuses.
        GpuMatrix gk;
        QVERIFY(upload(TensorType::Q4_K, random_gguf(TensorType::Q4_K, 32, 256, 950), 32, 256, gk) == cudaSuccess);
        DeviceBuffer dx(256 * 4), dy(32 * 4), ws(1 << 20);
        QVERIFY(dx.ok() && dy.ok() && ws.ok());
        fk::MatmulWorkspace mw{ws.get(), ws.bytes(), cublas_};
        mw.x_in_workspace = true;
        QVERIFY(fk::matmul(gk.m, dx.get<float>(), 1, dy.get<float>(), mw, nullptr) == cudaErrorInvalidValue);
        QVERIFY2(report.empty(), report.c_str());
    }

    // A gated activation reading a stacked gate/up product in place
    // (silu_mul_rows, gelu_mul_rows: CudaOps::gated_matmuls) gives what
    // splitting it and silu_mul / gelu_mul give, bit for bit: the float
    // output and what it writes for the next matmul in every format. Widths
    // of whole 32-blocks, and one (36; 8 rows of it are whole blocks) whose
    // quantization runs as a launch of its own.
    void gatedRowsMatchSplitThenActivation() {
        if (!gpu_) QSKIP("no CUDA GPU");
        std::string report;
        uint32_t seed = 1200;
        for (const int64_t width : {int64_t{36}, int64_t{576}, int64_t{4096}}) {
            for (const int64_t n : {1, 3, 8, 9}) {
                const std::vector<float> stacked = random_activations(n, 2 * width, seed++);
                std::vector<float> gate(static_cast<size_t>(n * width)), up(gate.size());
                for (int64_t r = 0; r < n; ++r)
                    for (int64_t c = 0; c < width; ++c) {
                        gate[static_cast<size_t>(r * width + c)] = stacked[static_cast<size_t>(r * 2 * width + c)];
                        up[static_cast<size_t>(r * width + c)] = stacked[static_cast<size_t>(r * 2 * width + width + c)];
                    }
                const size_t count = gate.size();
                for (const fk::ActivationFormat format :
                     {fk::ActivationFormat::None, fk::ActivationFormat::Q8_0, fk::ActivationFormat::Q8_1,
                      fk::ActivationFormat::F16, fk::ActivationFormat::BF16}) {
                    if (format != fk::ActivationFormat::None && count % 32 != 0) continue;
                    for (const bool gelu : {false, true}) {
                        const std::string what = std::string(gelu ? "gelu" : "silu") + " width=" +
                                                 std::to_string(width) + " n=" + std::to_string(n) + " format " +
                                                 std::to_string(static_cast<int>(format));
                        const size_t ws_bytes = std::max<size_t>(256, fk::activation_workspace_bytes(format, n * width));
                        DeviceBuffer ds(stacked.size() * 4), dg(count * 4), du(count * 4), dout(count * 4),
                            ws_split(ws_bytes), ws_rows(ws_bytes);
                        QVERIFY(ds.ok() && dg.ok() && du.ok() && dout.ok() && ws_split.ok() && ws_rows.ok());
                        QVERIFY(cudaMemcpy(ds.get(), stacked.data(), stacked.size() * 4, cudaMemcpyHostToDevice) ==
                                cudaSuccess);
                        QVERIFY(cudaMemcpy(dg.get(), gate.data(), count * 4, cudaMemcpyHostToDevice) == cudaSuccess);
                        QVERIFY(cudaMemcpy(du.get(), up.data(), count * 4, cudaMemcpyHostToDevice) == cudaSuccess);
                        QVERIFY(cudaMemset(ws_split.get(), 0xa5, ws_bytes) == cudaSuccess);
                        QVERIFY(cudaMemset(ws_rows.get(), 0xa5, ws_bytes) == cudaSuccess);
                        const bool quant = format != fk::ActivationFormat::None;
                        const fk::ActivationQuant q_split{format, quant ? ws_split.get() : nullptr},
                            q_rows{format, quant ? ws_rows.get() : nullptr};
                        cudaError_t e = gelu ? fk::gelu_mul(dg.get<float>(), du.get<float>(), n * width, nullptr, q_split)
                                             : fk::silu_mul(dg.get<float>(), du.get<float>(), n * width, nullptr, q_split);
                        QVERIFY2(e == cudaSuccess, cuda_message(e, what.c_str()).c_str());
                        e = gelu ? fk::gelu_mul_rows(ds.get<float>(), n, width, dout.get<float>(), nullptr, q_rows)
                                 : fk::silu_mul_rows(ds.get<float>(), n, width, dout.get<float>(), nullptr, q_rows);
                        QVERIFY2(e == cudaSuccess, cuda_message(e, what.c_str()).c_str());
                        std::vector<float> a(count), b(count);
                        std::vector<uint8_t> wa(ws_bytes), wb(ws_bytes);
                        QVERIFY(cudaMemcpy(a.data(), dg.get(), count * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
                        QVERIFY(cudaMemcpy(b.data(), dout.get(), count * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
                        QVERIFY(cudaMemcpy(wa.data(), ws_split.get(), ws_bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
                        QVERIFY(cudaMemcpy(wb.data(), ws_rows.get(), ws_bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
                        if (std::memcmp(a.data(), b.data(), count * 4) != 0) report += what + ": the output differs\n";
                        else if (wa != wb) report += what + ": the next matmul's input differs\n";
                    }
                }
            }
        }
        // A width that is not whole float4s, or an unaligned product, is refused.
        DeviceBuffer ds(4096), dout(4096);
        QVERIFY(ds.ok() && dout.ok());
        QVERIFY(fk::silu_mul_rows(ds.get<float>(), 2, 6, dout.get<float>(), nullptr) == cudaErrorInvalidValue);
        QVERIFY(fk::silu_mul_rows(ds.get<float>() + 1, 2, 8, dout.get<float>(), nullptr) == cudaErrorInvalidValue);
        QVERIFY(cudaDeviceSynchronize() == cudaSuccess);
        QVERIFY2(report.empty(), report.c_str());
    }

    // Parts whose widths do not add up to the matrix's rows are refused.
    void partsMustCoverTheRows() {
        if (!gpu_) QSKIP("no CUDA GPU");
        const int64_t rows = 64, cols = 256;
        GpuMatrix gm;
        QVERIFY(upload(TensorType::Q4_0, random_gguf(TensorType::Q4_0, rows, cols, 800), rows, cols, gm) ==
                cudaSuccess);
        DeviceBuffer dx(cols * sizeof(float)), dy(rows * sizeof(float)), ws(1 << 20);
        QVERIFY(dx.ok() && dy.ok() && ws.ok() && cudaMemset(dx.get(), 0, dx.bytes()) == cudaSuccess);
        const fk::MatmulWorkspace workspace{ws.get(), ws.bytes(), cublas_};
        fk::SplitParts parts;
        parts.dst[0] = dy.get<float>();
        parts.dst[1] = dy.get<float>() + 32;
        parts.width[0] = 32;
        parts.width[1] = 31;
        parts.count = 2;
        QVERIFY(fk::matmul_parts(gm.m, dx.get<float>(), 1, parts, workspace, nullptr) == cudaErrorInvalidValue);
        parts.width[1] = 32;
        parts.count = 0;
        QVERIFY(fk::matmul_parts(gm.m, dx.get<float>(), 1, parts, workspace, nullptr) == cudaErrorInvalidValue);
        parts.count = 2;
        QVERIFY(fk::matmul_parts(gm.m, dx.get<float>(), 1, parts, workspace, nullptr) == cudaSuccess);
        QVERIFY(cudaDeviceSynchronize() == cudaSuccess);
    }

    // The product is capturable in a CUDA graph and its replay gives the same y.
    void matmulIsGraphCapturable() {
        if (!gpu_) QSKIP("no CUDA GPU");
        const int64_t rows = 256, cols = 512, n = 16;
        for (const TensorType t : {TensorType::Q4_K, TensorType::F16}) {
            GpuMatrix gm;
            QVERIFY(upload(t, random_gguf(t, rows, cols, 600), rows, cols, gm) == cudaSuccess);
            const std::vector<float> x = random_activations(n, cols, 601);
            std::vector<float> y_direct;
            QVERIFY(gpu_matmul(gm, x, n, y_direct, cublas_) == cudaSuccess);
            DeviceBuffer dx(x.size() * 4), dy(n * rows * 4), ws(fk::matmul_workspace_bytes(kind(t), n, rows, cols));
            QVERIFY(cudaMemcpy(dx.get(), x.data(), x.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess);
            QVERIFY(cudaMemset(dy.get(), 0xff, dy.bytes()) == cudaSuccess);
            cudaStream_t s;
            QVERIFY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
            cudaGraph_t graph = nullptr;
            QVERIFY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
            const fk::MatmulWorkspace workspace{ws.get(), ws.bytes(), cublas_};
            const cudaError_t me = fk::matmul(gm.m, dx.get<float>(), n, dy.get<float>(), workspace, s);
            const cudaError_t ce = cudaStreamEndCapture(s, &graph);
            QVERIFY2(me == cudaSuccess, cuda_message(me, "matmul in capture").c_str());
            QVERIFY2(ce == cudaSuccess, cuda_message(ce, "end capture").c_str());
            cudaGraphExec_t exec = nullptr;
            QVERIFY(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
            QVERIFY(cudaGraphLaunch(exec, s) == cudaSuccess);
            QVERIFY(cudaStreamSynchronize(s) == cudaSuccess);
            std::vector<float> y(n * rows);
            QVERIFY(cudaMemcpy(y.data(), dy.get(), dy.bytes(), cudaMemcpyDeviceToHost) == cudaSuccess);
            cudaGraphExecDestroy(exec);
            cudaGraphDestroy(graph);
            cudaStreamDestroy(s);
            QVERIFY2(std::memcmp(y.data(), y_direct.data(), y.size() * 4) == 0, name_of(t).c_str());
        }
    }
};

FOLIO_TEST_MAIN(GpuMatmulTest)
#include "test_gpu_matmul.moc"
