// Time of kernels::top_k_rows (folio_kernels/sampling.h) on the vocabulary
// sizes of the test and dummy models: for each shape, the median of 21
// launches, one block per row and, where the shape splits, with the workspace
// that spreads a row over several blocks (bench/results/cuda-top-k-*.txt).
// Then kernels::top_p_draw_rows on flat rows (sets of most of the row) and
// peaked ones, and with top_p 0.01 (the cut at the first entry: the sort and
// the softmax sum without the one-by-one chain), so the chain's share shows
// (bench/results/cuda-top-p-draws-*.txt).
// Usage: folio_bench_cuda_top_k
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "folio_kernels/sampling.h"

namespace fk = folio::kernels;

namespace {

void check(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return;
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
}

template <typename T>
T* device_array(size_t n) {
    T* p = nullptr;
    check(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc");
    return p;
}

// Median milliseconds of `reps` runs of launch() between two events.
template <typename Launch>
double median_ms(cudaEvent_t start, cudaEvent_t stop, int reps, Launch launch) {
    std::vector<float> times;
    for (int rep = 0; rep < reps; ++rep) {
        check(cudaEventRecord(start), "record");
        launch();
        check(cudaEventRecord(stop), "record");
        check(cudaEventSynchronize(stop), "sync");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
        times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

}  // namespace

int main() {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::fprintf(stderr, "no CUDA GPU\n");
        return 1;
    }
    struct Case {
        int64_t rows, cols;
        int k;
    };
    const Case cases[] = {{1, 49152, 40},   {1, 128256, 40},  {1, 262144, 40},     {8, 128256, 40},
                          {64, 128256, 40}, {64, 262144, 1024}, {512, 262144, 1024}, {512, 49152, 50}};
    std::mt19937 rng(25);
    std::normal_distribution<float> normal(0.0f, 4.0f);
    cudaEvent_t start, stop;
    check(cudaEventCreate(&start), "event");
    check(cudaEventCreate(&stop), "event");
    for (const Case& c : cases) {
        std::vector<float> x(static_cast<size_t>(c.rows * c.cols));
        for (float& f : x) f = normal(rng);
        float* dx = device_array<float>(x.size());
        float* values = device_array<float>(static_cast<size_t>(c.rows * c.k));
        int32_t* ids = device_array<int32_t>(static_cast<size_t>(c.rows * c.k));
        check(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), "upload");
        const size_t workspace_bytes = fk::top_k_workspace_bytes(c.rows, c.cols, c.k);
        char* workspace = device_array<char>(workspace_bytes);
        for (bool split : {false, true}) {
            if (split && workspace_bytes == 0) continue;
            const double median_s = 1e-3 * median_ms(start, stop, 21, [&] {
                check(fk::top_k_rows(dx, c.rows, c.cols, c.k, values, ids, nullptr, split ? workspace : nullptr,
                                     split ? workspace_bytes : 0),
                      "top_k_rows");
            });
            std::printf("top_k_rows rows %lld cols %lld k %d%s: median %.1f us (%.0f GB/s of one read)\n",
                        static_cast<long long>(c.rows), static_cast<long long>(c.cols), c.k, split ? " split" : "",
                        median_s * 1e6, static_cast<double>(x.size() * sizeof(float)) / median_s / 1e9);
        }
        cudaFree(workspace);
        cudaFree(ids);
        cudaFree(values);
        cudaFree(dx);
    }
    // Top-p draws: temperature 0.8, min-p 0, uniform 0.5.
    struct TopPCase {
        int64_t rows, cols;
        float sigma, top_p, min_p;
    };
    // Top-p, then min-p alone (top-p 1: the kept entries in id order).
    const TopPCase top_p_cases[] = {
        {1, 128256, 0.3f, 0.95f, 0.0f},  {32, 128256, 0.3f, 0.95f, 0.0f}, {32, 128256, 0.3f, 0.01f, 0.0f},
        {64, 128256, 0.3f, 0.95f, 0.0f}, {64, 128256, 0.3f, 0.01f, 0.0f}, {64, 128256, 4.0f, 0.95f, 0.0f},
        {64, 49152, 0.3f, 0.95f, 0.0f},  {16, 262144, 0.3f, 0.95f, 0.0f}, {1, 128256, 0.3f, 1.0f, 0.05f},
        {64, 128256, 0.3f, 1.0f, 0.05f}, {64, 128256, 0.3f, 1.0f, 0.5f},  {64, 128256, 4.0f, 1.0f, 0.05f}};
    for (const TopPCase& c : top_p_cases) {
        std::normal_distribution<float> dist(0.0f, c.sigma);
        std::vector<float> x(static_cast<size_t>(c.rows * c.cols));
        for (float& f : x) f = dist(rng);
        std::vector<int32_t> rows(static_cast<size_t>(c.rows));
        std::vector<float> params;
        for (int64_t r = 0; r < c.rows; ++r) {
            rows[static_cast<size_t>(r)] = static_cast<int32_t>(r);
            params.insert(params.end(), {0.8f, c.top_p, c.min_p});
        }
        const std::vector<double> uniforms(static_cast<size_t>(c.rows), 0.5);
        float* dx = device_array<float>(x.size());
        int32_t* drows = device_array<int32_t>(rows.size());
        float* dparams = device_array<float>(params.size());
        double* duniforms = device_array<double>(uniforms.size());
        auto* dout = device_array<fk::TopPDrawn>(rows.size());
        check(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), "upload");
        check(cudaMemcpy(drows, rows.data(), rows.size() * sizeof(int32_t), cudaMemcpyHostToDevice), "upload");
        check(cudaMemcpy(dparams, params.data(), params.size() * sizeof(float), cudaMemcpyHostToDevice), "upload");
        check(cudaMemcpy(duniforms, uniforms.data(), uniforms.size() * sizeof(double), cudaMemcpyHostToDevice),
              "upload");
        const size_t workspace_bytes = fk::top_p_draw_workspace_bytes(c.rows, c.cols);
        char* workspace = device_array<char>(workspace_bytes);
        const double ms = median_ms(start, stop, 11, [&] {
            check(fk::top_p_draw_rows(dx, drows, c.rows, c.cols, dparams, duniforms, dout, workspace, workspace_bytes,
                                      nullptr),
                  "top_p_draw_rows");
        });
        std::printf("top_p_draw_rows rows %lld cols %lld sigma %.1f top-p %.2f min-p %.2f: median %.1f us "
                    "(workspace %.0f MB)\n",
                    static_cast<long long>(c.rows), static_cast<long long>(c.cols), c.sigma, c.top_p, c.min_p, ms * 1e3,
                    static_cast<double>(workspace_bytes) / 1e6);
        for (void* p : {static_cast<void*>(dx), static_cast<void*>(drows), static_cast<void*>(dparams),
                        static_cast<void*>(duniforms), static_cast<void*>(dout), static_cast<void*>(workspace)})
            cudaFree(p);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return 0;
}
