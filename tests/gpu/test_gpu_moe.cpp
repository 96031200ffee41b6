// The mixture-of-experts kernels (folio_kernels/moe.h) against the engine's
// routing rule (model::route_experts) and the plain matmul:
//   - routing: the same experts, best first, as the CPU's rule, weights
//     within float rounding, ties to the lower id; the groups a partition of
//     the entries by expert, in expert order, position the inverse of order;
//   - a grouped product equals matmul() of each row with its expert's matrix
//     bit for bit, for every weight type and tile size (1, 3 and 37 rows);
//   - combine_experts is the weighted sum in slot order;
//   - the whole chain gives the same bits inside a CUDA graph.
// Skips without a CUDA GPU.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "folio_kernels/elementwise.h"
#include "folio_kernels/moe.h"
#include "folio_test.h"
#include "gpu_matrix.h"
#include "model/moe.h"

namespace fk = folio::kernels;
using folio::TensorType;
using namespace gpu_matrix;

namespace {

const TensorType kTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q4_0,
                             TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,
                             TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};

// n_expert matrices of rows x cols, each expert_stride apart on the device.
struct GpuExperts {
    std::unique_ptr<DeviceBuffer> data;
    fk::DeviceExperts e;
    std::vector<GpuMatrix> each;  // the same matrices one by one, for matmul()
};

cudaError_t upload_experts(TensorType type, int32_t n_expert, int64_t rows, int64_t cols, uint32_t seed,
                           GpuExperts& out) {
    const size_t stride = fk::expert_stride(kind(type), rows, cols);
    out.data = std::make_unique<DeviceBuffer>(stride * static_cast<size_t>(n_expert));
    if (!out.data->ok()) return cudaErrorMemoryAllocation;
    out.each.resize(static_cast<size_t>(n_expert));
    for (int32_t e = 0; e < n_expert; ++e) {
        const std::vector<std::byte> gguf = random_gguf(type, rows, cols, seed + static_cast<uint32_t>(e));
        GpuMatrix& m = out.each[static_cast<size_t>(e)];
        if (cudaError_t err = upload(type, gguf, rows, cols, m); err != cudaSuccess) return err;
        if (cudaError_t err = cudaMemcpy(out.data->get<std::byte>() + e * stride, m.m.data,
                                         fk::device_matrix_bytes(kind(type), rows, cols), cudaMemcpyDeviceToDevice);
            err != cudaSuccess)
            return err;
    }
    out.e = fk::DeviceExperts{kind(type), out.data->get(), stride, rows, cols, n_expert};
    return cudaSuccess;
}

// Router logits with some exact ties, so that the tie rule is exercised.
std::vector<float> random_logits(int64_t n, int32_t n_expert, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 2.0f);
    std::vector<float> l(static_cast<size_t>(n * n_expert));
    for (float& v : l) v = d(rng);
    for (int64_t r = 0; r < n; r += 3) l[static_cast<size_t>(r * n_expert + n_expert - 1)] = l[static_cast<size_t>(r * n_expert)];
    return l;
}

// A routing on the device and its arrays read back.
struct Routed {
    std::unique_ptr<DeviceBuffer> buffer;
    fk::ExpertRouting r;
    std::vector<int32_t> ids, order, x_row, position;
    std::vector<float> weights;
    std::vector<int4> groups;
    int32_t n_groups = 0;
};

template <typename T>
cudaError_t read(const T* device, size_t count, std::vector<T>& host) {
    host.resize(count);
    return cudaMemcpy(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost);
}

cudaError_t route(const DeviceBuffer& logits, int64_t n, int32_t n_expert, int32_t k, bool norm, Routed& out) {
    out.buffer = std::make_unique<DeviceBuffer>(fk::expert_routing_bytes(n, k, n_expert));
    if (!out.buffer->ok()) return cudaErrorMemoryAllocation;
    cudaMemset(out.buffer->get(), 0xff, out.buffer->bytes());
    out.r = fk::expert_routing(out.buffer->get(), n, k, n_expert);
    cudaError_t e = fk::route_and_group_experts(logits.get<float>(), n, n_expert, k, norm, out.r, nullptr);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    const auto entries = static_cast<size_t>(n * k);
    if (e == cudaSuccess) e = read<int32_t>(out.r.ids, entries, out.ids);
    if (e == cudaSuccess) e = read<float>(out.r.weights, entries, out.weights);
    if (e == cudaSuccess) e = read<int32_t>(out.r.order, entries, out.order);
    if (e == cudaSuccess) e = read<int32_t>(out.r.x_row, entries, out.x_row);
    if (e == cudaSuccess) e = read<int32_t>(out.r.position, entries, out.position);
    std::vector<int32_t> count;
    if (e == cudaSuccess) e = read<int32_t>(out.r.n_groups, 1, count);
    if (e == cudaSuccess) out.n_groups = count[0];
    if (e == cudaSuccess && (out.n_groups < 0 || out.n_groups > fk::max_expert_groups(n * k, n_expert)))
        return cudaErrorUnknown;
    if (e == cudaSuccess) e = read<int4>(out.r.groups, static_cast<size_t>(out.n_groups), out.groups);
    return e;
}

cudaError_t upload_floats(const std::vector<float>& host, std::unique_ptr<DeviceBuffer>& out) {
    out = std::make_unique<DeviceBuffer>(host.size() * sizeof(float));
    if (!out->ok()) return cudaErrorMemoryAllocation;
    return cudaMemcpy(out->get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
}

// The grouped product of `experts` over x's rows through the routing's
// x_row: y [n * k][rows]; the same product over the rows gathered into
// sorted order first (x_row null, as the down projection reads its input)
// must give the same bits, else cudaErrorUnknown.
cudaError_t grouped(const GpuExperts& experts, const DeviceBuffer& x, int64_t n, int32_t k, const Routed& routed,
                    std::vector<float>& y, cudaStream_t s = nullptr) {
    const int64_t entries = n * k, cols = experts.e.cols, rows = experts.e.rows;
    DeviceBuffer sorted(static_cast<size_t>(entries * cols) * 4), dy(static_cast<size_t>(entries * rows) * 4);
    DeviceBuffer ws(std::max<size_t>(256, fk::grouped_matmul_workspace_bytes(experts.e.type, entries, cols)));
    if (!sorted.ok() || !dy.ok() || !ws.ok()) return cudaErrorMemoryAllocation;
    std::vector<float> y_sorted;
    for (const bool through_x_row : {true, false}) {
        cudaMemset(dy.get(), 0xff, dy.bytes());  // NaN: an unwritten output shows
        cudaError_t e = cudaSuccess;
        if (through_x_row) {
            e = fk::grouped_matmul(experts.e, x.get<float>(), routed.r.x_row, entries, n, routed.r, dy.get<float>(),
                                   ws.get(), false, s);
        } else {
            e = fk::gather_rows_f32(x.get<float>(), routed.r.x_row, entries, cols, sorted.get<float>(), s);
            if (e == cudaSuccess)
                e = fk::grouped_matmul(experts.e, sorted.get<float>(), nullptr, entries, n, routed.r, dy.get<float>(),
                                       ws.get(), false, s);
        }
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        if (e == cudaSuccess) e = read<float>(dy.get<float>(), static_cast<size_t>(entries * rows), through_x_row ? y : y_sorted);
        if (e != cudaSuccess) return e;
    }
    return std::memcmp(y.data(), y_sorted.data(), y.size() * sizeof(float)) == 0 ? cudaSuccess : cudaErrorUnknown;
}

}  // namespace

class GpuMoeTest : public QObject {
    Q_OBJECT

    bool gpu_ = false;
    cublasHandle_t cublas_ = nullptr;

    // "" when routed is what model::route_experts / group_by_expert give for these logits.
    static std::string check_routing(const std::vector<float>& logits, int64_t n, int32_t n_expert, int32_t k,
                                     bool norm, const Routed& routed) {
        const auto entries = static_cast<size_t>(n * k);
        std::vector<int32_t> ids(entries);
        std::vector<float> weights(entries);
        folio::model::route_experts(logits.data(), n, n_expert, k, norm, ids.data(), weights.data());
        std::string report;
        for (size_t i = 0; i < entries && report.size() < 2000; ++i) {
            if (routed.ids[i] != ids[i])
                report += "entry " + std::to_string(i) + ": expert " + std::to_string(routed.ids[i]) + ", CPU " +
                          std::to_string(ids[i]) + "\n";
            else if (std::fabs(routed.weights[i] - weights[i]) > 1e-5f * std::fabs(weights[i]) + 1e-12f)
                report += "entry " + std::to_string(i) + ": weight " + std::to_string(routed.weights[i]) + ", CPU " +
                          std::to_string(weights[i]) + "\n";
        }
        folio::model::ExpertGroups cpu;
        folio::model::group_by_expert(ids.data(), n, k, n_expert, cpu);
        int32_t g = 0;
        for (int32_t e = 0; e < n_expert; ++e) {
            if (cpu.rows(e) == 0) continue;
            if (g >= routed.n_groups) return report + "fewer groups than experts chosen\n";
            const int4 group = routed.groups[static_cast<size_t>(g++)];
            if (group.x != e || group.y != cpu.offsets[static_cast<size_t>(e)] || group.z != cpu.rows(e))
                report += "group " + std::to_string(g - 1) + " is (" + std::to_string(group.x) + ", " +
                          std::to_string(group.y) + ", " + std::to_string(group.z) + ")\n";
        }
        if (g != routed.n_groups) report += "more groups than experts chosen\n";
        std::vector<int> seen(entries, 0);
        for (size_t p = 0; p < entries; ++p) {
            const int32_t i = routed.order[p];
            if (i < 0 || static_cast<size_t>(i) >= entries || seen[static_cast<size_t>(i)]++)
                return report + "order is not a permutation\n";
            if (routed.position[static_cast<size_t>(i)] != static_cast<int32_t>(p) || routed.x_row[p] != i / k)
                return report + "position / x_row do not match order at " + std::to_string(p) + "\n";
            const int32_t e = ids[static_cast<size_t>(i)];
            if (static_cast<int32_t>(p) < cpu.offsets[static_cast<size_t>(e)] ||
                static_cast<int32_t>(p) >= cpu.offsets[static_cast<size_t>(e) + 1])
                return report + "entry " + std::to_string(i) + " lies outside its expert's group\n";
        }
        return report;
    }

private slots:
    void initTestCase() {
        gpu_ = gpu_present();
        if (gpu_ && cublasCreate(&cublas_) != CUBLAS_STATUS_SUCCESS) cublas_ = nullptr;
    }
    void cleanupTestCase() {
        if (cublas_) cublasDestroy(cublas_);
    }

    void routingFollowsTheEngineRule() {
        if (!gpu_) QSKIP("no CUDA GPU");
        struct Case {
            int64_t n;
            int32_t n_expert, k;
            bool norm;
        };
        // Mixtral's 8 / 2, Qwen3-MoE's 128 / 8, DeepSeek's 256 / 8, the limits, and more rows than warps.
        for (const Case c : {Case{1, 8, 2, true}, Case{5, 8, 2, false}, Case{37, 128, 8, true}, Case{1, 128, 8, true},
                             Case{300, 256, 8, true}, Case{3, 1024, 32, true}, Case{2, 4, 4, true}}) {
            const std::vector<float> logits = random_logits(c.n, c.n_expert, static_cast<uint32_t>(c.n * 31 + c.k));
            std::unique_ptr<DeviceBuffer> dl;
            QVERIFY(upload_floats(logits, dl) == cudaSuccess);
            Routed routed;
            const cudaError_t e = route(*dl, c.n, c.n_expert, c.k, c.norm, routed);
            QVERIFY2(e == cudaSuccess, cuda_message(e, "routing").c_str());
            const std::string report = check_routing(logits, c.n, c.n_expert, c.k, c.norm, routed);
            QVERIFY2(report.empty(), (std::to_string(c.n) + " rows, " + std::to_string(c.k) + " of " +
                                      std::to_string(c.n_expert) + ":\n" + report)
                                         .c_str());
        }
        // Out of range: a clear refusal, nothing launched.
        fk::ExpertRouting none;
        QCOMPARE(fk::route_and_group_experts(nullptr, 1, fk::kMaxExperts + 1, 2, true, none, nullptr), cudaErrorInvalidValue);
        QCOMPARE(fk::route_and_group_experts(nullptr, 1, 8, 9, true, none, nullptr), cudaErrorInvalidValue);
    }

    // The router's logits: each row's bits the same alone and among 100 rows
    // (two blocks of rows; matmul() would take cuBLAS), and close to the host's sums.
    void routerLogitsAreBatchInvariant() {
        if (!gpu_) QSKIP("no CUDA GPU");
        struct Shape {
            int64_t n_expert, n_embd;
        };
        for (const TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16})
            for (const Shape sh : {Shape{128, 2048}, Shape{8, 4096}, Shape{60, 1000}}) {
                const std::vector<std::byte> gguf = random_gguf(t, sh.n_expert, sh.n_embd, 21);
                GpuMatrix m;
                QVERIFY(upload(t, gguf, sh.n_expert, sh.n_embd, m) == cudaSuccess);
                QVERIFY(fk::router_logits_supported(m.m));
                const int64_t n = 100;
                const std::vector<float> x = random_activations(n, sh.n_embd, 22);
                std::unique_ptr<DeviceBuffer> dx;
                QVERIFY(upload_floats(x, dx) == cudaSuccess);
                DeviceBuffer dl(static_cast<size_t>(n * sh.n_expert) * 4);
                QVERIFY(fk::router_logits(m.m, dx->get<float>(), n, dl.get<float>(), nullptr) == cudaSuccess);
                std::vector<float> all, one;
                QVERIFY(read<float>(dl.get<float>(), static_cast<size_t>(n * sh.n_expert), all) == cudaSuccess);
                const std::vector<float> w = dequantized(t, gguf, sh.n_expert, sh.n_embd);
                for (int64_t r = 0; r < n; ++r) {
                    QVERIFY(fk::router_logits(m.m, dx->get<float>() + r * sh.n_embd, 1, dl.get<float>(), nullptr) ==
                            cudaSuccess);
                    QVERIFY(read<float>(dl.get<float>(), static_cast<size_t>(sh.n_expert), one) == cudaSuccess);
                    QVERIFY(std::memcmp(one.data(), all.data() + r * sh.n_expert, one.size() * 4) == 0);
                    for (int64_t e = 0; e < sh.n_expert; ++e) {
                        double want = 0, mag = 0;
                        for (int64_t c = 0; c < sh.n_embd; ++c) {
                            const double p = double(w[static_cast<size_t>(e * sh.n_embd + c)]) * x[static_cast<size_t>(r * sh.n_embd + c)];
                            want += p;
                            mag += std::fabs(p);
                        }
                        QVERIFY2(std::fabs(one[static_cast<size_t>(e)] - want) <= 1e-5 * mag + 1e-30,
                                 (name_of(t) + " expert " + std::to_string(e)).c_str());
                    }
                }
            }
        // A quantized router is not this kernel's: matmul() takes it.
        GpuMatrix q;
        QVERIFY(upload(TensorType::Q8_0, random_gguf(TensorType::Q8_0, 8, 256, 3), 8, 256, q) == cudaSuccess);
        QVERIFY(!fk::router_logits_supported(q.m));
    }

    // Each sorted position's row times its expert, against matmul() of all
    // rows with that expert (batch-invariant: a row's bits are its own).
    void groupedProductsEqualMatmulPerExpert() {
        if (!gpu_) QSKIP("no CUDA GPU");
        QVERIFY(cublas_ != nullptr);
        std::string report;
        uint32_t seed = 1000;
        for (const TensorType t : kTypes) {
            const int32_t n_expert = 8, k = 2;
            const int64_t rows = 96, cols = 512;
            GpuExperts experts;
            cudaError_t e = upload_experts(t, n_expert, rows, cols, seed, experts);
            QVERIFY2(e == cudaSuccess, cuda_message(e, "experts").c_str());
            for (const int64_t n : {int64_t{1}, int64_t{3}, int64_t{37}}) {
                const std::vector<float> x = random_activations(n, cols, seed + 77);
                std::unique_ptr<DeviceBuffer> dx, dl;
                QVERIFY(upload_floats(x, dx) == cudaSuccess);
                QVERIFY(upload_floats(random_logits(n, n_expert, seed + 5), dl) == cudaSuccess);
                Routed routed;
                QVERIFY(route(*dl, n, n_expert, k, true, routed) == cudaSuccess);
                std::vector<float> y;
                e = grouped(experts, *dx, n, k, routed, y);
                QVERIFY2(e == cudaSuccess, cuda_message(e, "grouped product").c_str());
                // matmul() of one row at a time for float weights (more rows go
                // through cuBLAS, another order), of all rows for the quantized.
                const bool one_by_one = t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
                for (int32_t ex = 0; ex < n_expert; ++ex) {
                    std::vector<float> ref(static_cast<size_t>(n * rows));
                    if (one_by_one) {
                        for (int64_t r = 0; r < n; ++r) {
                            std::vector<float> xr(x.begin() + r * cols, x.begin() + (r + 1) * cols), yr;
                            QVERIFY(gpu_matmul(experts.each[static_cast<size_t>(ex)], xr, 1, yr, cublas_) == cudaSuccess);
                            std::copy(yr.begin(), yr.end(), ref.begin() + r * rows);
                        }
                    } else {
                        QVERIFY(gpu_matmul(experts.each[static_cast<size_t>(ex)], x, n, ref, cublas_) == cudaSuccess);
                    }
                    for (size_t p = 0; p < static_cast<size_t>(n * k); ++p) {
                        if (routed.ids[static_cast<size_t>(routed.order[p])] != ex) continue;
                        const float* got = y.data() + p * rows;
                        const float* want = ref.data() + routed.x_row[p] * rows;
                        if (std::memcmp(got, want, rows * sizeof(float)) != 0) {
                            int64_t c = 0;
                            while (got[c] == want[c]) ++c;
                            report += name_of(t) + ", " + std::to_string(n) + " rows: position " + std::to_string(p) +
                                      " (expert " + std::to_string(ex) + ") column " + std::to_string(c) + ": " +
                                      std::to_string(got[c]) + " vs matmul " + std::to_string(want[c]) + "\n";
                        }
                    }
                }
            }
            seed += 100;
        }
        QVERIFY2(report.empty(), report.c_str());
    }

    // Qwen3-30B-A3B's shapes (128 experts of 768, 8 a token; n_embd 2048) in
    // its file's types: every chosen row written, the down product read back
    // through combine_experts as the host sums it.
    void qwen3MoeShapesAndCombine() {
        if (!gpu_) QSKIP("no CUDA GPU");
        const int32_t n_expert = 128, k = 8;
        const int64_t n_embd = 2048, n_ff = 768;
        for (const TensorType t : {TensorType::Q4_K, TensorType::Q6_K}) {
            GpuExperts down;
            QVERIFY(upload_experts(t, n_expert, n_embd, n_ff, 7, down) == cudaSuccess);
            for (const int64_t n : {int64_t{1}, int64_t{64}}) {
                std::unique_ptr<DeviceBuffer> dx, dl;
                QVERIFY(upload_floats(random_activations(n, n_ff, 8), dx) == cudaSuccess);
                const std::vector<float> logits = random_logits(n, n_expert, 9);
                QVERIFY(upload_floats(logits, dl) == cudaSuccess);
                Routed routed;
                QVERIFY(route(*dl, n, n_expert, k, true, routed) == cudaSuccess);
                QVERIFY(check_routing(logits, n, n_expert, k, true, routed).empty());
                // Each row's input repeated for its k entries: x_row picks it.
                std::vector<float> y;
                QVERIFY(grouped(down, *dx, n, k, routed, y) == cudaSuccess);
                for (const float v : y) QVERIFY(std::isfinite(v));
                std::unique_ptr<DeviceBuffer> dy;
                QVERIFY(upload_floats(y, dy) == cudaSuccess);
                DeviceBuffer dout(static_cast<size_t>(n * n_embd) * 4);
                QVERIFY(fk::combine_experts(dy->get<float>(), routed.r, n, k, n_embd, dout.get<float>(), nullptr) ==
                        cudaSuccess);
                std::vector<float> out;
                QVERIFY(read<float>(dout.get<float>(), static_cast<size_t>(n * n_embd), out) == cudaSuccess);
                for (int64_t r = 0; r < n; ++r)
                    for (int64_t j = 0; j < n_embd; ++j) {
                        const float* w = routed.weights.data() + r * k;
                        const int32_t* p = routed.position.data() + r * k;
                        float want = w[0] * y[static_cast<size_t>(p[0] * n_embd + j)];
                        for (int32_t s = 1; s < k; ++s) want = want + w[s] * y[static_cast<size_t>(p[s] * n_embd + j)];
                        if (out[static_cast<size_t>(r * n_embd + j)] != want)
                            QFAIL(("combine differs at row " + std::to_string(r) + " column " + std::to_string(j)).c_str());
                    }
            }
        }
    }

    // The chain captured in a graph gives the bits it gives launched directly.
    void groupedChainIsGraphCapturable() {
        if (!gpu_) QSKIP("no CUDA GPU");
        const int32_t n_expert = 16, k = 4;
        const int64_t n = 5, rows = 256, cols = 256;
        GpuExperts experts;
        QVERIFY(upload_experts(TensorType::Q4_K, n_expert, rows, cols, 3, experts) == cudaSuccess);
        std::unique_ptr<DeviceBuffer> dx, dl;
        QVERIFY(upload_floats(random_activations(n, cols, 4), dx) == cudaSuccess);
        QVERIFY(upload_floats(random_logits(n, n_expert, 5), dl) == cudaSuccess);
        Routed direct;
        QVERIFY(route(*dl, n, n_expert, k, true, direct) == cudaSuccess);
        std::vector<float> y_direct;
        QVERIFY(grouped(experts, *dx, n, k, direct, y_direct) == cudaSuccess);

        const int64_t entries = n * k;
        DeviceBuffer routing(fk::expert_routing_bytes(n, k, n_expert)), dy(static_cast<size_t>(entries * rows) * 4),
            ws(fk::grouped_matmul_workspace_bytes(experts.e.type, entries, cols));
        const fk::ExpertRouting r = fk::expert_routing(routing.get(), n, k, n_expert);
        cudaStream_t s = nullptr;
        QVERIFY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
        cudaGraph_t graph = nullptr;
        QVERIFY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
        cudaError_t e = fk::route_and_group_experts(dl->get<float>(), n, n_expert, k, true, r, s);
        if (e == cudaSuccess)
            e = fk::grouped_matmul(experts.e, dx->get<float>(), r.x_row, entries, n, r, dy.get<float>(), ws.get(), false, s);
        const cudaError_t ce = cudaStreamEndCapture(s, &graph);
        QVERIFY2(e == cudaSuccess, cuda_message(e, "capture").c_str());
        QVERIFY(ce == cudaSuccess);
        cudaGraphExec_t exec = nullptr;
        QVERIFY(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
        QVERIFY(cudaGraphLaunch(exec, s) == cudaSuccess);
        QVERIFY(cudaStreamSynchronize(s) == cudaSuccess);
        std::vector<float> y;
        QVERIFY(read<float>(dy.get<float>(), static_cast<size_t>(entries * rows), y) == cudaSuccess);
        std::vector<int32_t> pos;
        QVERIFY(read<int32_t>(r.position, static_cast<size_t>(entries), pos) == cudaSuccess);
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
        cudaStreamDestroy(s);
        // Positions within a group may differ between runs: compare entry by entry.
        for (int64_t i = 0; i < entries; ++i)
            QVERIFY(std::memcmp(y.data() + pos[static_cast<size_t>(i)] * rows,
                                y_direct.data() + direct.position[static_cast<size_t>(i)] * rows, rows * 4) == 0);
    }
};

FOLIO_TEST_MAIN(GpuMoeTest)
#include "test_gpu_moe.moc"
