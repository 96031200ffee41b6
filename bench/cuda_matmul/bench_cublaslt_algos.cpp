// What cuBLAS does with the batched-decode GEMMs of the Llama-3-8B shape
// (F16 weights, F16 activations, F32 out, F32 accumulation: the products of
// kernels/matmul_float.cu for n > 1), and what the cuBLASLt algorithms it
// could have chosen do: for each matrix and batch size, the time and weight
// bandwidth of cublasGemmEx (what Folio calls), then of each of cuBLASLt's
// first heuristic results, with its tile, split-K and estimated waves.
// Weights rotate over copies that together exceed the L2, as in
// bench_cuda_matmul. Usage: folio_bench_cublaslt_algos [N...] (default 128)
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../cuda_check.h"

namespace {

#define CHECK_BLAS(call)                                                                  \
    do {                                                                                  \
        const cublasStatus_t s_ = (call);                                                 \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                \
            std::fprintf(stderr, "%s:%d %s: status %d\n", __FILE__, __LINE__, #call, s_); \
            std::exit(1);                                                                 \
        }                                                                                 \
    } while (0)

struct Shape {
    const char* name;
    int rows, cols;
};
const Shape kShapes[] = {{"qkv 6144x4096", 6144, 4096},
                         {"o 4096x4096", 4096, 4096},
                         {"gate+up 28672x4096", 28672, 4096},
                         {"down 4096x14336", 4096, 14336},
                         {"output 128256x4096", 128256, 4096}};
constexpr size_t kRotationBytes = size_t{512} << 20;
constexpr size_t kWorkspaceBytes = size_t{32} << 20;
constexpr int kReps = 30;
constexpr int kAlgos = 12;

// Median over 5 rounds of the mean time of kReps back-to-back launches, in us.
template <typename F>
float time_us(F&& launch, cudaStream_t s) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int i = 0; i < 3; ++i) launch(i);
    std::vector<float> rounds;
    for (int r = 0; r < 5; ++r) {
        CHECK(cudaEventRecord(a, s));
        for (int i = 0; i < kReps; ++i) launch(i);
        CHECK(cudaEventRecord(b, s));
        CHECK(cudaEventSynchronize(b));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        rounds.push_back(ms * 1000.0f / kReps);
    }
    std::sort(rounds.begin(), rounds.end());
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    return rounds[rounds.size() / 2];
}

int config_attr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
    int v = -1;
    size_t written = 0;
    uint32_t u = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &u, sizeof(u), &written) == CUBLAS_STATUS_SUCCESS)
        v = static_cast<int>(u);
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> batches;
    for (int i = 1; i < argc; ++i) batches.push_back(std::atoi(argv[i]));
    if (batches.empty()) batches.push_back(128);
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    cublasHandle_t blas;
    CHECK_BLAS(cublasCreate(&blas));
    CHECK_BLAS(cublasSetStream(blas, s));
    cublasLtHandle_t lt;
    CHECK_BLAS(cublasLtCreate(&lt));
    void* workspace = nullptr;
    CHECK(cudaMalloc(&workspace, kWorkspaceBytes));
    CHECK_BLAS(cublasSetWorkspace(blas, workspace, kWorkspaceBytes));
    cudaDeviceProp prop{};
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, cuBLAS %d, %d SMs\n", prop.name, static_cast<int>(cublasLtGetVersion()), prop.multiProcessorCount);

    for (const Shape& sh : kShapes) {
        const size_t w_bytes = size_t{2} * sh.rows * sh.cols;
        const int copies = static_cast<int>(std::max<size_t>(1, kRotationBytes / w_bytes));
        std::vector<void*> w(copies);
        for (auto& p : w) {
            CHECK(cudaMalloc(&p, w_bytes));
            CHECK(cudaMemset(p, 0x11, w_bytes));  // small finite halves
        }
        for (int n : batches) {
            void *x = nullptr, *y = nullptr;
            CHECK(cudaMalloc(&x, size_t{2} * n * sh.cols));
            CHECK(cudaMemset(x, 0x11, size_t{2} * n * sh.cols));
            CHECK(cudaMalloc(&y, size_t{4} * n * sh.rows));
            const float alpha = 1.0f, beta = 0.0f;
            const float gemm = time_us(
                [&](int i) {
                    CHECK_BLAS(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, sh.rows, n, sh.cols, &alpha, w[i % copies],
                                            CUDA_R_16F, sh.cols, x, CUDA_R_16F, sh.cols, &beta, y, CUDA_R_32F, sh.rows,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
                },
                s);
            std::printf("%-20s n=%-4d cublasGemmEx        %8.1f us %6.0f GB/s\n", sh.name, n, gemm,
                        w_bytes / (gemm * 1e3));

            cublasLtMatmulDesc_t op;
            CHECK_BLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
            const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
            CHECK_BLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
            CHECK_BLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
            cublasLtMatrixLayout_t la, lb, lc;
            CHECK_BLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, sh.cols, sh.rows, sh.cols));
            CHECK_BLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, sh.cols, n, sh.cols));
            CHECK_BLAS(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, sh.rows, n, sh.rows));
            cublasLtMatmulPreference_t pref;
            CHECK_BLAS(cublasLtMatmulPreferenceCreate(&pref));
            const size_t ws = kWorkspaceBytes;
            CHECK_BLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                            sizeof(ws)));
            cublasLtMatmulHeuristicResult_t res[kAlgos];
            int found = 0;
            CHECK_BLAS(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, kAlgos, res, &found));
            for (int a = 0; a < found; ++a) {
                const float t = time_us(
                    [&](int i) {
                        CHECK_BLAS(cublasLtMatmul(lt, op, &alpha, w[i % copies], la, x, lb, &beta, y, lc, y, lc,
                                                  &res[a].algo, workspace, ws, s));
                    },
                    s);
                std::printf("%-20s n=%-4d lt #%-2d tile %3d splitK %2d red %d waves %5.2f %8.1f us %6.0f GB/s\n",
                            sh.name, n, a, config_attr(res[a].algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
                            config_attr(res[a].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                            config_attr(res[a].algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME), res[a].wavesCount, t,
                            w_bytes / (t * 1e3));
            }
            cublasLtMatmulPreferenceDestroy(pref);
            cublasLtMatrixLayoutDestroy(la);
            cublasLtMatrixLayoutDestroy(lb);
            cublasLtMatrixLayoutDestroy(lc);
            cublasLtMatmulDescDestroy(op);
            CHECK(cudaFree(x));
            CHECK(cudaFree(y));
        }
        for (auto& p : w) CHECK(cudaFree(p));
    }
    return 0;
}
