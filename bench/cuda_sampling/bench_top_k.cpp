// Time of kernels::top_k_rows (folio_kernels/sampling.h) on the vocabulary
// sizes of the test and dummy models: for each shape, the median of 21
// launches, one block per row and, where the shape splits, with the workspace
// that spreads a row over several blocks (bench/results/cuda-top-k-*.txt).
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
            std::vector<float> times;
            for (int rep = 0; rep < 21; ++rep) {
                check(cudaEventRecord(start), "record");
                check(fk::top_k_rows(dx, c.rows, c.cols, c.k, values, ids, nullptr, split ? workspace : nullptr,
                                     split ? workspace_bytes : 0),
                      "top_k_rows");
                check(cudaEventRecord(stop), "record");
                check(cudaEventSynchronize(stop), "sync");
                float ms = 0;
                check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
                times.push_back(ms);
            }
            std::sort(times.begin(), times.end());
            const double median_s = static_cast<double>(times[times.size() / 2]) * 1e-3;
            std::printf("top_k_rows rows %lld cols %lld k %d%s: median %.1f us (%.0f GB/s of one read)\n",
                        static_cast<long long>(c.rows), static_cast<long long>(c.cols), c.k, split ? " split" : "",
                        median_s * 1e6, static_cast<double>(x.size() * sizeof(float)) / median_s / 1e9);
        }
        cudaFree(workspace);
        cudaFree(ids);
        cudaFree(values);
        cudaFree(dx);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return 0;
}
