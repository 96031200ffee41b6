// Timings of the CUDA attention and element-wise kernels (moved out of
// test_gpu_attention, whose FOLIO_GPU_BENCH slot they were): KV bandwidth of
// paged decode attention, FLOP rate of prefill, and the element-wise kernels'
// bandwidth against a device-to-device copy. Results: bench/results/cuda-attention-*.txt.
//
//   folio_bench_cuda_attention [FILTER]
//
// FILTER: time only the attention cases whose name contains it, nothing else
// (for a profiler run, e.g. ncu -k regex:attention_mma). Asserts nothing.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "folio_kernels/attention.h"
#include "folio_kernels/elementwise.h"
#include "gpu_test_support.h"

namespace fk = folio::kernels;

namespace {

int fail(const char* what) {
    std::fprintf(stderr, "folio_bench_cuda_attention: %s failed\n", what);
    return 1;
}

std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// Random finite halves in ±[2^-5, 1): integer arithmetic, fast for caches of
// hundreds of megabytes.
void fill_random_halves(std::vector<uint16_t>& v, std::mt19937_64& rng) {
    for (size_t i = 0; i + 4 <= v.size(); i += 4) {
        const uint64_t r = rng();
        for (int u = 0; u < 4; ++u) {
            const auto bits = static_cast<uint16_t>(r >> (16 * u));
            const uint16_t exponent = static_cast<uint16_t>(10 + (bits >> 11) % 5);  // 2^-5 .. 2^-1
            v[i + static_cast<size_t>(u)] = static_cast<uint16_t>((bits & 0x8000) | (exponent << 10) | (bits & 0x3ff));
        }
    }
}

struct BenchCase {
    const char* name;
    int n_head, n_head_kv, head_dim;
    int n_seqs, n_query, seq_len;  // every sequence alike
    int copies;                    // distinct caches cycled through (more bytes than L2)
    int launches;                  // per graph
};

// Median time per launch of paged_attention over a graph of `launches`
// launches cycling through `copies` caches, and the bytes and FLOPs it needs.
std::string bench_attention(const BenchCase& c, double* ms, double* kv_bytes, double* flops) {
    const int bs = 16;
    const int blocks_per_seq = (c.seq_len + bs - 1) / bs;
    const int n_blocks = c.n_seqs * blocks_per_seq;
    const int n_tokens = c.n_seqs * c.n_query;
    std::mt19937 rng(99);
    std::mt19937_64 rng64(98);
    std::vector<int32_t> positions, row_seq, query_start, n_query, seq_len, tables;
    std::vector<int64_t> row_slots;
    std::vector<int32_t> pool(static_cast<size_t>(n_blocks));
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng);
    *kv_bytes = 0;
    *flops = 0;
    for (int s = 0; s < c.n_seqs; ++s) {
        for (int b = 0; b < blocks_per_seq; ++b) tables.push_back(pool[static_cast<size_t>(s * blocks_per_seq + b)]);
        query_start.push_back(s * c.n_query);
        n_query.push_back(c.n_query);
        seq_len.push_back(c.seq_len);
        for (int i = 0; i < c.n_query; ++i) {
            const int pos = c.seq_len - c.n_query + i;
            positions.push_back(pos);
            row_seq.push_back(s);
            row_slots.push_back(int64_t{tables[static_cast<size_t>(s * blocks_per_seq + pos / bs)]} * bs + pos % bs);
            *flops += 4.0 * c.head_dim * c.n_head * (pos + 1);
        }
        *kv_bytes += 2.0 * 2.0 * c.seq_len * c.n_head_kv * c.head_dim;
    }
    DeviceArray<int32_t> d_positions(positions), d_row_seq(row_seq), d_query_start(query_start), d_n_query(n_query),
        d_seq_len(seq_len), d_tables(tables);
    DeviceArray<int64_t> d_slots(row_slots);
    const size_t cache_values = static_cast<size_t>(n_blocks) * c.n_head_kv * bs * c.head_dim;
    std::vector<uint16_t> host_cache(cache_values);
    std::vector<std::unique_ptr<DeviceArray<uint16_t>>> caches;
    for (int i = 0; i < 2 * c.copies; ++i) {
        fill_random_halves(host_cache, rng64);
        caches.push_back(std::make_unique<DeviceArray<uint16_t>>(host_cache));
        if (caches.back()->status != cudaSuccess) return cuda_error(caches.back()->status, "cache alloc");
    }
    fk::AttentionBatch b;
    b.positions = d_positions.ptr;
    b.slot_mapping = d_slots.ptr;
    b.row_seq = d_row_seq.ptr;
    b.query_start = d_query_start.ptr;
    b.n_query = d_n_query.ptr;
    b.seq_len = d_seq_len.ptr;
    b.block_tables = d_tables.ptr;
    b.n_tokens = n_tokens;
    b.n_seqs = c.n_seqs;
    b.max_blocks = blocks_per_seq;
    b.max_seq_len = c.seq_len;
    b.max_n_query = c.n_query;
    const size_t q_size = static_cast<size_t>(n_tokens) * c.n_head * c.head_dim;
    DeviceArray<float> dq(random_floats(rng, q_size, -1, 1)), dout(q_size);
    const size_t ws_bytes = fk::attention_workspace_bytes(b, c.n_head, c.head_dim);
    DeviceArray<unsigned char> ws(ws_bytes);
    if (dq.status != cudaSuccess || dout.status != cudaSuccess || ws.status != cudaSuccess) return "alloc failed";
    fk::AttentionParams p;
    p.n_head = c.n_head;
    p.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    auto layer = [&](int i) {
        fk::PagedKvLayer kv;
        kv.k = caches[static_cast<size_t>(2 * (i % c.copies))]->ptr;
        kv.v = caches[static_cast<size_t>(2 * (i % c.copies) + 1)]->ptr;
        kv.n_blocks = n_blocks;
        kv.block_size = bs;
        kv.n_head_kv = c.n_head_kv;
        kv.head_dim = c.head_dim;
        return kv;
    };
    cudaStream_t stream;
    if (cudaError_t e = cudaStreamCreate(&stream); e != cudaSuccess) return cuda_error(e, "stream");
    // Eager once (also raises the kernels' shared-memory limits outside the capture).
    if (cudaError_t e = fk::paged_attention(dq.ptr, layer(0), b, p, dout.ptr, ws.ptr, ws_bytes, stream);
        e != cudaSuccess)
        return cuda_error(e, "paged_attention");
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    if (cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal); e != cudaSuccess)
        return cuda_error(e, "capture");
    cudaError_t launch = cudaSuccess;
    for (int i = 0; i < c.launches && launch == cudaSuccess; ++i)
        launch = fk::paged_attention(dq.ptr, layer(i), b, p, dout.ptr, ws.ptr, ws_bytes, stream);
    if (cudaError_t e = cudaStreamEndCapture(stream, &graph); e != cudaSuccess) return cuda_error(e, "end capture");
    if (launch != cudaSuccess) return cuda_error(launch, "captured launch");
    if (cudaError_t e = cudaGraphInstantiate(&exec, graph, 0); e != cudaSuccess) return cuda_error(e, "instantiate");
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    std::vector<float> times;
    for (int rep = 0; rep < 23; ++rep) {
        cudaEventRecord(start, stream);
        cudaGraphLaunch(exec, stream);
        cudaEventRecord(stop, stream);
        if (cudaError_t e = cudaEventSynchronize(stop); e != cudaSuccess) return cuda_error(e, "replay");
        float t = 0;
        cudaEventElapsedTime(&t, start, stop);
        if (rep >= 3) times.push_back(t / static_cast<float>(c.launches));
    }
    std::sort(times.begin(), times.end());
    *ms = times[times.size() / 2];
    std::vector<float> out;
    if (cudaError_t e = dout.download(out); e != cudaSuccess) return cuda_error(e, "download");
    for (float x : out)
        if (!std::isfinite(x)) return "non-finite output";
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
    return {};
}

// Median milliseconds of fn() (enqueued on the default stream) over 20 runs.
template <typename Fn>
float time_ms(Fn&& fn) {
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    std::vector<float> times;
    for (int rep = 0; rep < 23; ++rep) {
        cudaEventRecord(start);
        fn();
        cudaEventRecord(stop);
        cudaEventSynchronize(stop);
        float t = 0;
        cudaEventElapsedTime(&t, start, stop);
        if (rep >= 3) times.push_back(t);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    if (!have_gpu()) return fail("finding a CUDA GPU");
    const std::string filter = argc > 1 ? argv[1] : "";
    if (filter.empty()) {  // the ceiling: a device-to-device copy, bytes read + written
        const size_t n = size_t{1} << 28;
        DeviceArray<float> a(n), b(n);
        if (a.status != cudaSuccess || b.status != cudaSuccess || cudaMemset(a.ptr, 0x3c, n * 4) != cudaSuccess)
            return fail("copy buffers");
        const float ms = time_ms([&] { cudaMemcpyAsync(b.ptr, a.ptr, n * 4, cudaMemcpyDeviceToDevice); });
        std::printf("BENCH copy 1 GiB d2d: %.3f ms, %.0f GB/s (read + write)\n", ms, 2.0 * n * 4 / ms / 1e6);
    }
    const BenchCase cases[] = {
        {"8B decode b1 ctx4096", 32, 8, 128, 1, 1, 4096, 8, 32},
        {"8B decode b1 ctx32768", 32, 8, 128, 1, 1, 32768, 2, 8},
        {"8B decode b128 ctx256", 32, 8, 128, 128, 1, 256, 2, 8},
        {"8B decode b32 ctx2048", 32, 8, 128, 32, 1, 2048, 2, 8},
        {"gemma3-270m decode b1 ctx4096", 4, 1, 256, 1, 1, 4096, 16, 32},
        {"smollm2 decode b1 ctx4096", 9, 3, 64, 1, 1, 4096, 16, 32},
        {"8B decode b64 ctx1024 (gqa4)", 32, 8, 128, 64, 1, 1024, 2, 8},
        {"8B prefill 512", 32, 8, 128, 1, 512, 512, 2, 8},
        {"8B prefill 512 after 3584", 32, 8, 128, 1, 512, 4096, 2, 8},
        {"gemma3 prefill 512", 4, 1, 256, 1, 512, 512, 2, 8},
    };
    for (const BenchCase& c : cases) {
        if (std::string(c.name).find(filter) == std::string::npos) continue;
        double ms = 0, bytes = 0, flops = 0;
        const std::string e = bench_attention(c, &ms, &bytes, &flops);
        if (!e.empty()) {
            std::fprintf(stderr, "%s: %s\n", c.name, e.c_str());
            return 1;
        }
        std::printf("BENCH %-32s %9.4f ms  KV %8.2f MB  %7.0f GB/s  %6.2f TFLOP/s  (floor at 4.3 TB/s: %.4f ms)\n",
                    c.name, ms, bytes / 1e6, bytes / ms / 1e6, flops / ms / 1e9, bytes / 4.3e9);
    }
    if (filter.empty()) {  // element-wise: 64 Mi floats
        const int64_t n = int64_t{1} << 26;
        DeviceArray<float> g(static_cast<size_t>(n)), u(static_cast<size_t>(n)), o(static_cast<size_t>(n));
        if (g.status != cudaSuccess || u.status != cudaSuccess || o.status != cudaSuccess ||
            cudaMemset(g.ptr, 0x3c, static_cast<size_t>(n) * 4) != cudaSuccess ||
            cudaMemset(u.ptr, 0x3c, static_cast<size_t>(n) * 4) != cudaSuccess)
            return fail("element-wise buffers");
        float ms = time_ms([&] { fk::silu_mul(g.ptr, u.ptr, n, nullptr); });
        std::printf("BENCH silu_mul 64Mi: %.3f ms, %.0f GB/s\n", ms, 3.0 * n * 4 / ms / 1e6);
        const int64_t dim = 4096, rows = n / dim;
        ms = time_ms([&] { fk::rms_norm(g.ptr, u.ptr, 1e-5f, rows, dim, o.ptr, nullptr); });
        std::printf("BENCH rms_norm %lldx%lld: %.3f ms, %.0f GB/s\n", static_cast<long long>(rows),
                    static_cast<long long>(dim), ms, 2.0 * n * 4 / ms / 1e6);
        ms = time_ms([&] { fk::add_rms_norm(g.ptr, u.ptr, u.ptr, 1e-5f, rows, dim, o.ptr, nullptr); });
        std::printf("BENCH add_rms_norm %lldx%lld: %.3f ms, %.0f GB/s\n", static_cast<long long>(rows),
                    static_cast<long long>(dim), ms, 4.0 * n * 4 / ms / 1e6);
        if (cudaDeviceSynchronize() != cudaSuccess) return fail("element-wise kernels");
    }
    return 0;
}
