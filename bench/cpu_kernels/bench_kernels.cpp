// folio_bench_kernels: throughput of the CPU matmul per weight type at
// SmolLM2-135M / Gemma 3 270M shapes, for decode (1 activation row) and
// prefill (many rows), with 1 and 2 threads. Prints weight GB/s (bytes of
// the weight matrix read per call) and GFLOP/s (2 * rows * in * out).
//
//   folio_bench_kernels [--isa scalar|avx2] [--threads 1,2] [--rows 1,32,128,512]
//                       [--types Q4_1,Q8_0,...] [--min-time 0.3]
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cpu/fp16.h"
#include "cpu/matmul.h"

using namespace folio::cpu;
using folio::TensorType;

namespace {

double process_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Shape {
    const char* what;
    int64_t in, out;
};

const Shape kShapes[] = {
    {"smollm2 ffn_up/gate 576->1536", 576, 1536},
    {"smollm2 ffn_down 1536->576", 1536, 576},
    {"smollm2 output 576->49152", 576, 49152},
    {"gemma3 ffn_down 2048->640", 2048, 640},
    {"gemma3 output 640->262144", 640, 262144},
};

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string item; std::getline(in, item, ',');) out.push_back(item);
    return out;
}

std::vector<std::byte> random_matrix(TensorType type, int64_t in, int64_t out, std::mt19937& rng) {
    const size_t row = weight_row_bytes(type, in);
    std::vector<std::byte> bytes(row * static_cast<size_t>(out));
    for (auto& b : bytes) b = static_cast<std::byte>(rng() & 0xFF);
    // Sane scales: patch every half-float scale field to a small value so no
    // inf/NaN slows anything down. Plain-float types get small values.
    const auto t = folio::traits(type);
    const uint16_t scale = fp32_to_fp16(0.01f);
    if (type == TensorType::F32) {
        auto* f = reinterpret_cast<float*>(bytes.data());
        for (size_t i = 0; i < bytes.size() / 4; ++i) f[i] = static_cast<float>(rng() % 1000) * 1e-4f;
    } else if (type == TensorType::F16) {
        auto* h = reinterpret_cast<uint16_t*>(bytes.data());
        for (size_t i = 0; i < bytes.size() / 2; ++i) h[i] = scale;
    } else {
        const size_t d_offset = type == TensorType::Q6_K ? 208 : 0;
        const bool has_second = type == TensorType::Q4_1 || type == TensorType::Q5_1 || type == TensorType::Q4_K ||
                                type == TensorType::Q5_K;
        for (size_t off = 0; off < bytes.size(); off += t.block_bytes) {
            std::memcpy(bytes.data() + off + d_offset, &scale, 2);
            if (has_second) std::memcpy(bytes.data() + off + 2, &scale, 2);
        }
    }
    return bytes;
}

}  // namespace

int main(int argc, char** argv) {
    Isa isa = best_isa();
    std::vector<int> thread_counts{1, 2};
    std::vector<int64_t> row_counts{1, 32, 128, 512};
    std::vector<std::string> type_names{"F16", "Q4_0", "Q4_1", "Q5_0", "Q8_0", "Q4_K", "Q5_K", "Q6_K"};
    double min_time = 0.3;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--isa") isa = value == "scalar" ? Isa::Scalar : Isa::Avx2;
        else if (flag == "--threads") { thread_counts.clear(); for (auto& v : split(value)) thread_counts.push_back(std::stoi(v)); }
        else if (flag == "--rows") { row_counts.clear(); for (auto& v : split(value)) row_counts.push_back(std::stoll(v)); }
        else if (flag == "--types") type_names = split(value);
        else if (flag == "--min-time") min_time = std::stod(value);
        else { std::fprintf(stderr, "unknown flag %s\n", flag.c_str()); return 2; }
    }
    if (!isa_supported(isa)) { std::fprintf(stderr, "ISA %s not supported here\n", isa_name(isa)); return 2; }

    std::printf("isa %s, physical cores %d\n", isa_name(isa), physical_core_count());
    // cpu-ms: CPU time of all threads per call (spinning included); on a
    // busy machine wall time overstates the cost, cpu-ms / threads does not.
    std::printf("%-5s %-32s %5s %3s %10s %10s %9s %9s\n", "type", "shape", "rows", "thr", "ms/call", "cpu-ms",
                "GB/s", "GFLOP/s");
    std::mt19937 rng(1234);
    for (const std::string& name : type_names) {
        TensorType type{};
        bool found = false;
        for (uint32_t id = 0; id < 40; ++id) {
            const auto t = folio::tensor_type_traits(id);
            if (t && t->name == name) type = t->type, found = true;
        }
        if (!found || !dot_kernels(type, isa)) { std::fprintf(stderr, "no kernels for %s\n", name.c_str()); continue; }
        for (const Shape& shape : kShapes) {
            if (shape.in % folio::traits(type).block_elems != 0) continue;
            const std::vector<std::byte> bytes = random_matrix(type, shape.in, shape.out, rng);
            const WeightMatrix w{type, bytes.data(), shape.in, shape.out};
            for (int threads : thread_counts) {
                ThreadPool pool(threads);
                ScratchBuffer scratch;
                for (int64_t rows : row_counts) {
                    std::vector<float> x(static_cast<size_t>(rows * shape.in)), y(static_cast<size_t>(rows * shape.out));
                    for (float& v : x) v = std::normal_distribution<float>()(rng);
                    if (!matmul(w, x.data(), rows, y.data(), pool, scratch, isa).ok()) return 1;  // warm-up
                    int calls = 0;
                    const auto start = std::chrono::steady_clock::now();
                    const double cpu_start = process_cpu_seconds();
                    double elapsed = 0;
                    do {
                        if (!matmul(w, x.data(), rows, y.data(), pool, scratch, isa).ok()) return 1;
                        ++calls;
                        elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                    } while (elapsed < min_time);
                    const double per_call = elapsed / calls;
                    const double cpu_per_call = (process_cpu_seconds() - cpu_start) / calls;
                    const double flops = 2.0 * static_cast<double>(rows * shape.in * shape.out);
                    std::printf("%-5s %-32s %5lld %3d %10.3f %10.3f %9.2f %9.2f\n", name.c_str(), shape.what,
                                static_cast<long long>(rows), threads, per_call * 1e3, cpu_per_call * 1e3,
                                static_cast<double>(bytes.size()) / per_call * 1e-9, flops / per_call * 1e-9);
                    std::fflush(stdout);
                }
            }
        }
    }
    return 0;
}
