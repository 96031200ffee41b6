// Achieved weight bandwidth of the CUDA matmul (folio_kernels/matmul.h) on
// the Llama-3-8B shapes: for each weight type, matrix and batch size n, the
// median time of one matmul (activation quantization included) replayed from
// a CUDA graph that rotates over enough weight copies to defeat the L2, and
// the weight bytes read per second. Ends with the batch-1 decode estimate of
// the whole model (32 layers of q, k, v, o, gate, up, down, plus the output
// matrix), also with q, k, v and gate, up concatenated into one matrix each.
// Usage: folio_bench_cuda_matmul [--hot] [--batch1] [types...]  (default F16 Q4_0 Q4_K Q8_0 Q6_K)
//   --hot     one copy of each matrix, read again by every launch: from L2 where it fits
//             (60 MB), i.e. what a launch costs when its weights need not come from DRAM
//   --batch1  n = 1 only
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "../cuda_check.h"
#include "folio_kernels/matmul.h"

namespace fk = folio::kernels;

namespace {


struct Shape {
    const char* name;
    int64_t rows, cols;
    int per_layer;  // how many of these a decoder layer has (0: the output matrix)
    int fused_per_layer;  // the same with q, k, v and gate, up concatenated at load
};
const Shape kShapes[] = {{"q,o 4096x4096", 4096, 4096, 2, 1},
                         {"k,v 1024x4096", 1024, 4096, 2, 0},
                         {"gate,up 14336x4096", 14336, 4096, 2, 0},
                         {"down 4096x14336", 4096, 14336, 1, 1},
                         {"output 128256x4096", 128256, 4096, 0, 0},
                         {"qkv 6144x4096", 6144, 4096, 0, 1},
                         {"gate+up 28672x4096", 28672, 4096, 0, 1}};
const int64_t kBatches[] = {1, 2, 4, 8, 16, 128};
constexpr int kLayers = 32;
constexpr size_t kRotationBytes = size_t{512} << 20;  // > 8x the H200's 60 MB L2

struct TypeName {
    const char* name;
    fk::WeightType type;
};
const TypeName kTypes[] = {{"F32", fk::WeightType::F32},   {"F16", fk::WeightType::F16},   {"BF16", fk::WeightType::BF16},
                           {"Q4_0", fk::WeightType::Q4_0}, {"Q4_1", fk::WeightType::Q4_1}, {"Q5_0", fk::WeightType::Q5_0},
                           {"Q5_1", fk::WeightType::Q5_1}, {"Q8_0", fk::WeightType::Q8_0}, {"Q4_K", fk::WeightType::Q4_K},
                           {"Q5_K", fk::WeightType::Q5_K}, {"Q6_K", fk::WeightType::Q6_K}};

float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Device-to-device copy bandwidth (bytes read + written per second).
double copy_bandwidth(cudaStream_t s) {
    const size_t bytes = size_t{1} << 30;
    void *a = nullptr, *b = nullptr;
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMemsetAsync(a, 1, bytes, s));
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    std::vector<float> ms;
    for (int i = 0; i < 12; ++i) {
        CHECK(cudaEventRecord(e0, s));
        CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
        CHECK(cudaEventRecord(e1, s));
        CHECK(cudaEventSynchronize(e1));
        float t = 0;
        CHECK(cudaEventElapsedTime(&t, e0, e1));
        if (i >= 2) ms.push_back(t);
    }
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    return 2.0 * static_cast<double>(bytes) / (median(ms) * 1e-3);
}

struct Result {
    double us = 0, gbs = 0;
};

// Median time of one matmul of n rows with the shape, rotating over copies.
bool g_hot = false;  // --hot: one copy, no rotation

Result time_matmul(fk::WeightType type, const Shape& shape, int64_t n, void* pool, size_t pool_bytes,
                   cublasHandle_t cublas, cudaStream_t s) {
    const size_t bytes = fk::device_matrix_bytes(type, shape.rows, shape.cols);
    const size_t stride = (bytes + 255) / 256 * 256;
    if (stride > pool_bytes) return Result{};  // does not fit: printed as 0
    const int copies = g_hot ? 1
                             : static_cast<int>(std::max<size_t>(
                                   1, std::min(pool_bytes / stride, (kRotationBytes + stride - 1) / stride)));
    for (int c = 0; c < copies; ++c)
        CHECK(fk::fill_random_matrix(type, static_cast<char*>(pool) + c * stride, shape.rows, shape.cols, 1000 + c,
                                     0.02f, s));
    void *x = nullptr, *y = nullptr, *ws = nullptr;
    const size_t ws_bytes = fk::matmul_workspace_bytes(type, n, shape.rows, shape.cols);
    CHECK(cudaMalloc(&x, static_cast<size_t>(n * shape.cols) * 4));
    CHECK(cudaMalloc(&y, static_cast<size_t>(n * shape.rows) * 4));
    if (ws_bytes) CHECK(cudaMalloc(&ws, ws_bytes));
    // Activations: random values of unit size (the F32 fill of a 1 x n*cols matrix).
    CHECK(fk::fill_random_matrix(fk::WeightType::F32, x, 1, n * shape.cols, 7, 1.0f, s));
    const fk::MatmulWorkspace workspace{ws, ws_bytes, cublas};
    const int launches = std::max(copies, 4);
    cudaGraph_t graph;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < launches; ++i) {
        const fk::DeviceMatrix w{type, static_cast<char*>(pool) + (i % copies) * stride, shape.rows, shape.cols};
        CHECK(fk::matmul(w, static_cast<const float*>(x), n, static_cast<float*>(y), workspace, s));
    }
    CHECK(cudaStreamEndCapture(s, &graph));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    std::vector<float> ms;
    for (int rep = 0; rep < 9; ++rep) {
        CHECK(cudaEventRecord(e0, s));
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaEventRecord(e1, s));
        CHECK(cudaEventSynchronize(e1));
        float t = 0;
        CHECK(cudaEventElapsedTime(&t, e0, e1));
        if (rep >= 2) ms.push_back(t / static_cast<float>(launches));
    }
    CHECK(cudaGetLastError());
    CHECK(cudaEventDestroy(e0));
    CHECK(cudaEventDestroy(e1));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    if (ws) CHECK(cudaFree(ws));
    Result r;
    r.us = median(ms) * 1e3;
    r.gbs = static_cast<double>(bytes) / (r.us * 1e-6) / 1e9;
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<TypeName> types;
    bool batch1 = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--hot") == 0) g_hot = true;
        if (std::strcmp(argv[i], "--batch1") == 0) batch1 = true;
        for (const TypeName& t : kTypes)
            if (std::strcmp(argv[i], t.name) == 0) types.push_back(t);
    }
    const std::vector<int64_t> batches = batch1 ? std::vector<int64_t>{1}
                                                : std::vector<int64_t>(std::begin(kBatches), std::end(kBatches));
    if (types.empty()) types = {kTypes[1], kTypes[3], kTypes[8], kTypes[7], kTypes[10]};

    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        std::printf("no CUDA GPU\n");
        return 0;
    }
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cublasHandle_t cublas;
    if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) return 1;
    const double copy = copy_bandwidth(s);
    const char* pdl = std::getenv("FOLIO_CUDA_PDL");
    std::printf("%s, %d SMs, L2 %d MB; copy bandwidth %.0f GB/s; PDL %s; weights %s\n", prop.name,
                prop.multiProcessorCount, prop.l2CacheSize >> 20, copy / 1e9,
                pdl && std::strcmp(pdl, "0") == 0 ? "off" : "on",
                g_hot ? "one copy (--hot: from L2 where they fit)" : "rotated over 512 MB (from DRAM)");
    const size_t pool_bytes = size_t{2560} << 20;  // the F32 output matrix is 2.1 GB
    void* pool = nullptr;
    CHECK(cudaMalloc(&pool, pool_bytes));

    std::printf("%-5s %-19s", "type", "matrix");
    for (const int64_t n : batches) std::printf("  n=%-3lld us   GB/s", static_cast<long long>(n));
    std::printf("\n");
    for (const TypeName& t : types) {
        double layer_us = 0, output_us = 0, fused_layer_us = 0;
        for (const Shape& shape : kShapes) {
            std::printf("%-5s %-19s", t.name, shape.name);
            for (const int64_t n : batches) {
                const Result r = time_matmul(t.type, shape, n, pool, pool_bytes, cublas, s);
                std::printf(" %7.1f %6.0f", r.us, r.gbs);
                std::fflush(stdout);
                if (n == 1) {
                    layer_us += r.us * shape.per_layer;
                    fused_layer_us += r.us * shape.fused_per_layer;
                    if (shape.per_layer == 0 && shape.fused_per_layer == 0) output_us = r.us;
                }
            }
            std::printf("\n");
        }
        const double token_us = kLayers * layer_us + output_us;
        const double fused_us = kLayers * fused_layer_us + output_us;
        std::printf("%-5s batch-1 decode, matmuls only: %.0f us/token = %.0f tok/s; with qkv and gate+up "
                    "concatenated: %.0f us = %.0f tok/s\n",
                    t.name, token_us, 1e6 / token_us, fused_us, 1e6 / fused_us);
    }
    CHECK(cudaFree(pool));
    cublasDestroy(cublas);
    CHECK(cudaStreamDestroy(s));
    return 0;
}
