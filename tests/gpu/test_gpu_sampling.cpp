// The CUDA token-selection kernels against plain references written here:
// top_k_rows must give, bit for bit, the k best (value, id) pairs of each row
// in the Sampler's total order (larger value first, ties to the lower id, NaN
// as -inf, +inf as FLT_MAX, -0.0 == +0.0), over random rows, heavy ties,
// special values and vocabularies up to 262144 columns; argmax_rows must agree
// with top_k_rows at k = 1; softmax_sums must give the Sampler's own sums;
// draw_rows and top_p_draw_rows must draw the Sampler's own tokens.
// Outputs are poisoned before each launch. Skips without a GPU. Its speed: bench/cuda_sampling (folio_bench_cuda_top_k).
#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime.h>

#include "folio/sampling.h"
#include "folio_kernels/sampling.h"
#include "folio_test.h"
#include "gpu_test_support.h"

namespace fk = folio::kernels;

namespace {

// cudaError_t as a plain number, for QCOMPARE.
int code(cudaError_t e) { return static_cast<int>(e); }

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
float float_of(uint32_t b) { return std::bit_cast<float>(b); }

// ---- the reference -----------------------------------------------------------

// As the Sampler cleans a logit: NaN -> -inf, +inf -> FLT_MAX, the rest (-0.0 included) as is.
float clean(float v) {
    if (std::isnan(v)) return -std::numeric_limits<float>::infinity();
    if (v == std::numeric_limits<float>::infinity()) return FLT_MAX;
    return v;
}

struct Entry {
    float v;
    int32_t id;
};

void reference_top_k(const std::vector<float>& x, int64_t rows, int64_t cols, int k, std::vector<float>& values,
                     std::vector<int32_t>& ids) {
    values.assign(static_cast<size_t>(rows * k), 0.0f);
    ids.assign(static_cast<size_t>(rows * k), 0);
    std::vector<Entry> row(static_cast<size_t>(cols));
    const auto better = [](const Entry& a, const Entry& b) { return a.v > b.v || (a.v == b.v && a.id < b.id); };
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c)
            row[static_cast<size_t>(c)] = {clean(x[static_cast<size_t>(r * cols + c)]), static_cast<int32_t>(c)};
        std::partial_sort(row.begin(), row.begin() + k, row.end(), better);
        for (int j = 0; j < k; ++j) {
            values[static_cast<size_t>(r * k + j)] = row[static_cast<size_t>(j)].v;
            ids[static_cast<size_t>(r * k + j)] = row[static_cast<size_t>(j)].id;
        }
    }
}

// ---- running the kernel ------------------------------------------------------

// With `split`, top_k_rows gets the workspace that lets it split long rows over several blocks.
std::string run_top_k(const std::vector<float>& x, int64_t rows, int64_t cols, int k, bool split,
                      std::vector<float>& values, std::vector<int32_t>& ids) {
    DeviceArray<float> dx(x), dvalues(static_cast<size_t>(rows * k));
    DeviceArray<int32_t> dids(static_cast<size_t>(rows * k));
    const size_t workspace_bytes = split ? fk::top_k_workspace_bytes(rows, cols, k) : 0;
    DeviceArray<char> workspace(workspace_bytes);
    if (std::string e = cuda_error(workspace.status, "workspace"); !e.empty()) return e;
    if (std::string e = cuda_error(dx.status, "upload"); !e.empty()) return e;
    if (std::string e = cuda_error(dvalues.status != cudaSuccess ? dvalues.status : dids.status, "alloc");
        !e.empty())
        return e;
    if (std::string e = cuda_error(dvalues.poison(), "poison"); !e.empty()) return e;
    if (std::string e = cuda_error(dids.poison(), "poison"); !e.empty()) return e;
    if (std::string e = cuda_error(fk::top_k_rows(dx.ptr, rows, cols, k, dvalues.ptr, dids.ptr, nullptr,
                                                  workspace.ptr, workspace_bytes),
                                   "launch");
        !e.empty())
        return e;
    if (std::string e = cuda_error(cudaDeviceSynchronize(), "sync"); !e.empty()) return e;
    if (std::string e = cuda_error(dvalues.download(values), "download"); !e.empty()) return e;
    return cuda_error(dids.download(ids), "download");
}

std::string describe(const char* what, int64_t rows, int64_t cols, int k) {
    return std::string(what) + " (rows " + std::to_string(rows) + ", cols " + std::to_string(cols) + ", k " +
           std::to_string(k) + ")";
}

std::string compare_top_k(const char* what, const std::vector<float>& x, int64_t rows, int64_t cols, int k,
                          bool split, const std::vector<float>& ref_values, const std::vector<int32_t>& ref_ids) {
    std::vector<float> values;
    std::vector<int32_t> ids;
    const std::string where = describe(what, rows, cols, k) + (split ? " split" : "");
    if (std::string e = run_top_k(x, rows, cols, k, split, values, ids); !e.empty()) return where + ": " + e;
    for (size_t i = 0; i < ref_ids.size(); ++i) {
        if (ids[i] == ref_ids[i] && bits_of(values[i]) == bits_of(ref_values[i])) continue;
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      ": row %lld rank %lld: got id %d value %a (0x%08x), want id %d value %a (0x%08x)",
                      static_cast<long long>(i / static_cast<size_t>(k)),
                      static_cast<long long>(i % static_cast<size_t>(k)), ids[i], static_cast<double>(values[i]),
                      bits_of(values[i]), ref_ids[i], static_cast<double>(ref_values[i]), bits_of(ref_values[i]));
        return where + buf;
    }
    return {};
}

// Empty when the kernel's output equals the reference bit for bit, one
// block per row and split over blocks (where the shape splits).
std::string check_top_k(const char* what, const std::vector<float>& x, int64_t rows, int64_t cols, int k) {
    std::vector<float> ref_values;
    std::vector<int32_t> ref_ids;
    reference_top_k(x, rows, cols, k, ref_values, ref_ids);
    for (bool split : {false, true}) {
        if (split && fk::top_k_workspace_bytes(rows, cols, k) == 0) continue;
        if (std::string e = compare_top_k(what, x, rows, cols, k, split, ref_values, ref_ids); !e.empty()) return e;
    }
    return {};
}

std::vector<float> normal_floats(std::mt19937& rng, size_t n, float sigma) {
    std::normal_distribution<float> dist(0.0f, sigma);
    std::vector<float> v(n);
    for (auto& f : v) f = dist(rng);
    return v;
}

constexpr float kInf = std::numeric_limits<float>::infinity();

}  // namespace

class TestGpuSampling : public QObject {
    Q_OBJECT
#if !FOLIO_TEST_WITH_QT
    friend int main();
#endif

private slots:
    void top_k_matches_reference_on_random_rows() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        std::mt19937 rng(21);
        const int64_t row_counts[] = {1, 3, 37};
        int combo = 0;
        for (const int64_t cols : {int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{32000}, int64_t{128256},
                                   int64_t{262144}}) {
            for (const int k : {1, 2, 40, 100, 1000, 1024}) {
                if (k > cols) continue;
                const int64_t rows = row_counts[combo++ % 3];
                const auto x = normal_floats(rng, static_cast<size_t>(rows * cols), 4.0f);
                const std::string e = check_top_k("random", x, rows, cols, k);
                QVERIFY2(e.empty(), e.c_str());
            }
        }
        // Logits in a narrow range: the leading key digits all agree, the low ones decide.
        for (const int k : {1, 50, 1024}) {
            const int64_t rows = 5, cols = 50000;
            std::uniform_real_distribution<float> dist(10.0f, 10.001f);
            std::vector<float> x(static_cast<size_t>(rows * cols));
            for (auto& f : x) f = dist(rng);
            const std::string e = check_top_k("narrow range", x, rows, cols, k);
            QVERIFY2(e.empty(), e.c_str());
        }
    }

    void top_k_takes_the_lowest_ids_among_ties() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        std::mt19937 rng(22);
        for (const int64_t cols : {int64_t{1000}, int64_t{32000}, int64_t{262144}}) {
            for (const int k : {1, 3, 40, 1000, 1024}) {
                if (k > cols) continue;
                for (const int levels : {1, 2, 4}) {
                    const int64_t rows = 3;
                    std::uniform_int_distribution<int> dist(0, levels - 1);
                    std::vector<float> x(static_cast<size_t>(rows * cols));
                    for (auto& f : x) f = static_cast<float>(dist(rng));
                    const std::string e = check_top_k("quantized", x, rows, cols, k);
                    QVERIFY2(e.empty(), e.c_str());
                }
            }
        }
        // A few distinct leaders, then a long plateau with the k-th value: the plateau's
        // lowest ids must follow the leaders, even when they sit late in the row.
        for (const int k : {5, 600, 1024}) {
            const int64_t rows = 2, cols = 100000;
            std::vector<float> x(static_cast<size_t>(rows * cols), -1.0f);
            for (int64_t r = 0; r < rows; ++r) {
                for (int64_t c = 0; c < cols; c += 7) x[static_cast<size_t>(r * cols + c)] = 2.5f;  // plateau
                for (int j = 0; j < 3; ++j)
                    x[static_cast<size_t>(r * cols + cols - 1 - j * 4099)] = 3.0f + static_cast<float>(j);
                if (r == 1)  // the plateau starts late
                    for (int64_t c = 0; c < cols / 2; ++c) x[static_cast<size_t>(r * cols + c)] = -2.0f;
            }
            const std::string e = check_top_k("plateau", x, rows, cols, k);
            QVERIFY2(e.empty(), e.c_str());
        }
    }

    void top_k_cleans_special_values() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        std::mt19937 rng(23);
        const float nan = std::numeric_limits<float>::quiet_NaN();
        const float specials[] = {nan,      -nan,         float_of(0x7f800001u), float_of(0xffc12345u),
                                  kInf,     -kInf,        0.0f,                  -0.0f,
                                  FLT_MAX,  -FLT_MAX,     FLT_MIN,               -FLT_MIN,
                                  float_of(1u), float_of(0x80000001u), 1.0f, -1.0f};
        const int n_specials = static_cast<int>(sizeof specials / sizeof specials[0]);
        for (const int64_t cols : {int64_t{7}, int64_t{5000}, int64_t{40000}}) {
            for (const int k : {1, 2, 7, 100, 1024}) {
                if (k > cols) continue;
                // Rows: random with specials sprinkled in; all -inf; all NaN; only specials;
                // few finite values among NaN and -inf; signed zeros only.
                const int64_t rows = 6;
                std::vector<float> x = normal_floats(rng, static_cast<size_t>(rows * cols), 2.0f);
                std::uniform_int_distribution<int> pick(0, n_specials - 1), coin(0, 3);
                for (int64_t c = 0; c < cols; ++c) {
                    float& a = x[static_cast<size_t>(0 * cols + c)];
                    if (coin(rng) == 0) a = specials[pick(rng)];
                    x[static_cast<size_t>(1 * cols + c)] = -kInf;
                    x[static_cast<size_t>(2 * cols + c)] = c % 2 ? nan : -nan;
                    x[static_cast<size_t>(3 * cols + c)] = specials[pick(rng)];
                    float& f = x[static_cast<size_t>(4 * cols + c)];
                    if (c % 97 != 5) f = coin(rng) < 2 ? nan : -kInf;
                    x[static_cast<size_t>(5 * cols + c)] = coin(rng) < 2 ? 0.0f : -0.0f;
                }
                const std::string e = check_top_k("special values", x, rows, cols, k);
                QVERIFY2(e.empty(), e.c_str());
            }
        }
    }

    void top_k_rejects_bad_arguments() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        DeviceArray<float> dx(2000), dvalues(2048);
        DeviceArray<int32_t> dids(2048);
        QVERIFY2(dx.status == cudaSuccess && dvalues.status == cudaSuccess && dids.status == cudaSuccess,
                 "cudaMalloc failed");
        const auto top_k = [&](int64_t rows, int64_t cols, int k) {
            return code(fk::top_k_rows(dx.ptr, rows, cols, k, dvalues.ptr, dids.ptr, nullptr));
        };
        const int invalid = code(cudaErrorInvalidValue);
        QCOMPARE(top_k(1, 2000, 0), invalid);
        QCOMPARE(top_k(1, 2000, -3), invalid);
        QCOMPARE(top_k(1, 2000, fk::kMaxTopK + 1), invalid);
        QCOMPARE(top_k(2, 7, 8), invalid);
        QCOMPARE(top_k(1, 0, 1), invalid);
        QCOMPARE(top_k(1, int64_t{1} << 31, 1), invalid);
        QCOMPARE(top_k(int64_t{1} << 31, 10, 1), invalid);
        QCOMPARE(top_k(-1, 10, 1), invalid);
        QCOMPARE(top_k(0, 2000, 40), 0);
        QCOMPARE(code(cudaDeviceSynchronize()), code(cudaSuccess));
        QCOMPARE(code(cudaGetLastError()), code(cudaSuccess));
    }

    void top_k_of_one_is_argmax() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        std::mt19937 rng(24);
        for (const int64_t cols : {int64_t{1}, int64_t{1000}, int64_t{128256}, int64_t{262144}}) {
            const int64_t rows = 9;
            std::vector<float> x = normal_floats(rng, static_cast<size_t>(rows * cols), 3.0f);
            std::uniform_int_distribution<int64_t> at(0, cols - 1);
            for (int64_t r = 0; r < rows; ++r) {
                float* row = x.data() + r * cols;
                if (r % 3 == 1) {  // ties at the top
                    const float top = *std::max_element(row, row + cols) + 1.0f;
                    for (int j = 0; j < 4; ++j) row[at(rng)] = top;
                }
                if (r % 3 == 2) {  // -inf and signed zeros, zeros on top
                    for (int64_t c = 0; c < cols; ++c) row[c] = c % 5 == 0 ? -kInf : -std::fabs(row[c]) - 1.0f;
                    for (int j = 0; j < 4; ++j) row[at(rng)] = j % 2 ? 0.0f : -0.0f;
                }
            }
            DeviceArray<float> dx(x), dvalues(static_cast<size_t>(rows));
            DeviceArray<int32_t> dids(static_cast<size_t>(rows)), dargmax(static_cast<size_t>(rows));
            QVERIFY2(dx.status == cudaSuccess && dvalues.status == cudaSuccess && dids.status == cudaSuccess &&
                         dargmax.status == cudaSuccess,
                     "cudaMalloc failed");
            QCOMPARE(code(dids.poison()), code(cudaSuccess));
            QCOMPARE(code(dargmax.poison()), code(cudaSuccess));
            const cudaError_t top = fk::top_k_rows(dx.ptr, rows, cols, 1, dvalues.ptr, dids.ptr, nullptr);
            QCOMPARE(code(top), code(cudaSuccess));
            QCOMPARE(code(fk::argmax_rows(dx.ptr, rows, cols, dargmax.ptr, nullptr)), code(cudaSuccess));
            QCOMPARE(code(cudaDeviceSynchronize()), code(cudaSuccess));
            std::vector<int32_t> ids, argmax;
            QCOMPARE(code(dids.download(ids)), code(cudaSuccess));
            QCOMPARE(code(dargmax.download(argmax)), code(cudaSuccess));
            for (int64_t r = 0; r < rows; ++r) {
                const std::string what = "row " + std::to_string(r) + " of " + std::to_string(cols) + " columns";
                QVERIFY2(ids[static_cast<size_t>(r)] == argmax[static_cast<size_t>(r)], what.c_str());
            }
        }
    }

    // softmax_sums against the Sampler's own (folio::row_sums): each weight
    // is the host's float bit for bit, so the double sums differ only by
    // their order (relative 1e-12 at these lengths); one libm-style expf
    // instead, off by an ulp here and there, moves them ~1e-9. The row
    // maxima come from top_k_rows (k entries apart); rows with special
    // values, one of only NaN / -inf.
    void softmax_sums_match_the_samplers() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        std::mt19937 rng(23);
        for (const int64_t cols : {int64_t{7}, int64_t{1000}, int64_t{128256}, int64_t{262144}}) {
            const int64_t rows = cols > 200000 ? 3 : 9;
            const int k = cols < 40 ? 2 : 40;
            std::vector<float> x;
            for (int64_t r = 0; r < rows; ++r) {
                const auto row = normal_floats(rng, static_cast<size_t>(cols), 0.5f + static_cast<float>(r));
                x.insert(x.end(), row.begin(), row.end());
            }
            x[3] = kInf;
            x[static_cast<size_t>(cols + 1)] = std::nanf("");
            x[static_cast<size_t>(2 * cols + 2)] = -kInf;
            for (int64_t c = 0; c < cols; ++c) x[static_cast<size_t>((rows - 1) * cols + c)] = c % 2 ? -kInf : std::nanf("");
            std::vector<float> temperatures;
            for (int64_t r = 0; r < rows; ++r) temperatures.push_back(0.25f + 0.4f * static_cast<float>(r % 5));
            DeviceArray<float> dx(x), dvalues(static_cast<size_t>(rows * k)), dtemps(temperatures),
                dnorm(static_cast<size_t>(rows));
            DeviceArray<int32_t> dids(static_cast<size_t>(rows * k));
            DeviceArray<double> dsums(static_cast<size_t>(rows));
            QVERIFY2(dx.status == cudaSuccess && dvalues.status == cudaSuccess && dtemps.status == cudaSuccess &&
                         dnorm.status == cudaSuccess && dids.status == cudaSuccess && dsums.status == cudaSuccess,
                     "cudaMalloc failed");
            QCOMPARE(code(dsums.poison()), code(cudaSuccess));
            QCOMPARE(code(dnorm.poison()), code(cudaSuccess));
            QCOMPARE(code(fk::top_k_rows(dx.ptr, rows, cols, k, dvalues.ptr, dids.ptr, nullptr)), code(cudaSuccess));
            QCOMPARE(code(fk::softmax_sums(dx.ptr, rows, cols, dvalues.ptr, k, dtemps.ptr, dsums.ptr, dnorm.ptr,
                                           nullptr)),
                     code(cudaSuccess));
            QCOMPARE(code(cudaDeviceSynchronize()), code(cudaSuccess));
            std::vector<double> sums;
            std::vector<float> normalizers;
            QCOMPARE(code(dsums.download(sums)), code(cudaSuccess));
            QCOMPARE(code(dnorm.download(normalizers)), code(cudaSuccess));
            for (int64_t r = 0; r < rows; ++r) {
                const std::span<const float> row(x.data() + r * cols, static_cast<size_t>(cols));
                const folio::RowSum want = folio::row_sums(row, temperatures[static_cast<size_t>(r)]);
                const double got = sums[static_cast<size_t>(r)];
                const float norm = normalizers[static_cast<size_t>(r)];
                char what[200];
                std::snprintf(what, sizeof what, "%lld columns, row %lld: sum %.17g want %.17g, log-normalizer %a want %a",
                              static_cast<long long>(cols), static_cast<long long>(r), got, want.softmax_sum,
                              static_cast<double>(norm), static_cast<double>(want.log_normalizer));
                QVERIFY2(std::fabs(got - want.softmax_sum) <= 1e-12 * want.softmax_sum, what);
                if (want.log_normalizer == -kInf) {
                    QVERIFY2(norm == -kInf && got == 0.0, what);
                } else {
                    const float ulp = std::nextafter(std::fabs(want.log_normalizer), kInf) - std::fabs(want.log_normalizer);
                    QVERIFY2(std::fabs(norm - want.log_normalizer) <= 2 * ulp, what);
                }
            }
        }
        QCOMPARE(code(fk::softmax_sums(nullptr, -1, 10, nullptr, 1, nullptr, nullptr, nullptr, nullptr)),
                 code(cudaErrorInvalidValue));
    }

    // draw_rows picks the token the Sampler draws from the whole row at a
    // plain temperature, given the uniform value that Sampler would use: for
    // vocabularies with and without a partial last block of eight, flat and
    // peaked rows, special values, a row with no number above -inf, greedy
    // rows, penalties (lowering and raising, greedy or not, window ids out of
    // the row), and 24 draws per row (so targets land all over the row).
    void draws_match_the_samplers_whole_row_draws() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        std::mt19937 rng(31);
        int checked = 0;
        for (const int64_t cols : {int64_t{5}, int64_t{1003}, int64_t{49152}, int64_t{128256}}) {
            const int64_t rows = 8;
            std::vector<float> x;
            for (int64_t r = 0; r < rows; ++r) {
                const auto row = normal_floats(rng, static_cast<size_t>(cols), r == 2 ? 0.01f : 1.0f + 2.0f * r);
                x.insert(x.end(), row.begin(), row.end());
            }
            x[1] = kInf;                                      // row 0: +inf weighs 1
            x[static_cast<size_t>(cols + 3)] = std::nanf("");  // row 1: NaN weighs 0
            x[static_cast<size_t>(3 * cols)] = -kInf;
            for (int64_t c = 0; c < cols; ++c)  // row 7: nothing above -inf
                x[static_cast<size_t>(7 * cols + c)] = c % 3 ? -kInf : std::nanf("");
            for (int draw = 0; draw < 24; ++draw) {
                std::vector<float> temperatures, counts, penalty_params;
                std::vector<double> uniforms;
                std::vector<int32_t> want, offsets, ids, scratch;
                const bool penalized = draw % 2 == 1;
                for (int64_t r = 0; r < rows; ++r) {
                    folio::SamplingParams params;
                    params.temperature = r == 5 ? 0.0f : 0.2f + 0.45f * static_cast<float>(r % 5);
                    params.top_k = 0;
                    params.top_p = 1.0f;
                    params.min_p = 0.0f;
                    params.seed = 500 + static_cast<uint64_t>(100 * r + draw);
                    std::vector<int32_t> window;
                    if (penalized && r % 3 != 2) {
                        params.repetition_penalty = r % 2 ? 1.3f : 0.8f;
                        params.frequency_penalty = r % 3 ? 0.5f : -0.3f;
                        params.presence_penalty = r % 4 ? 0.2f : -0.1f;
                        params.penalty_last_n = 12;
                        for (int k = 0; k < 16; ++k)  // repeats, and ids past the row
                            window.push_back(static_cast<int32_t>((rng() % 5 == 0 ? cols : 0) + rng() % (cols < 7 ? cols : 7)));
                    }
                    auto host = folio::Sampler::create(params), device = folio::Sampler::create(params);
                    QVERIFY(host && device);
                    QVERIFY(device->draws_by_temperature());
                    const std::span<const float> row(x.data() + r * cols, static_cast<size_t>(cols));
                    want.push_back(host->sample(row, window));
                    temperatures.push_back(params.temperature);
                    uniforms.push_back(r == 5 ? 0.0 : device->take_uniform());
                    offsets.push_back(static_cast<int32_t>(ids.size()));
                    folio::penalty_counts(window, params, scratch, ids, counts);
                    penalty_params.insert(penalty_params.end(), {params.repetition_penalty, params.frequency_penalty,
                                                                 params.presence_penalty});
                }
                offsets.push_back(static_cast<int32_t>(ids.size()));
                QVERIFY(penalized == !ids.empty());
                // Every fourth draw reads the rows through an index, last first,
                // and gives the drawn values back (Backend::draw_last_rows' form).
                const bool indexed = draw % 4 == 0;
                std::vector<int32_t> order(static_cast<size_t>(rows));
                for (int64_t r = 0; r < rows; ++r)
                    order[static_cast<size_t>(r)] = static_cast<int32_t>(indexed ? rows - 1 - r : r);
                auto in_order = [&](const auto& v) {
                    std::remove_cvref_t<decltype(v)> out;
                    for (const int32_t r : order) out.push_back(v[static_cast<size_t>(r)]);
                    return out;
                };
                DeviceArray<float> dx(x), dtemps(in_order(temperatures)), dcounts(counts), dparams(penalty_params);
                DeviceArray<double> duniforms(in_order(uniforms));
                DeviceArray<int32_t> dout(static_cast<size_t>(rows)), doffsets(offsets), dids(ids), dorder(order);
                DeviceArray<float> dlogits(static_cast<size_t>(rows));
                const size_t workspace_bytes = fk::draw_rows_workspace_bytes(rows, cols);
                DeviceArray<char> dwork(std::max<size_t>(workspace_bytes, 1));
                fk::DrawPenalties penalties;
                if (penalized) penalties = {doffsets.ptr, dids.ptr, dcounts.ptr, dparams.ptr};
                QCOMPARE(code(fk::draw_rows(dx.ptr, rows, cols, dtemps.ptr, duniforms.ptr, penalties, dout.ptr,
                                            dwork.ptr, workspace_bytes, nullptr, indexed ? dorder.ptr : nullptr,
                                            indexed ? dlogits.ptr : nullptr)),
                         code(cudaSuccess));
                std::vector<int32_t> got;
                std::vector<float> got_logits;
                QCOMPARE(code(dout.download(got)), code(cudaSuccess));
                QCOMPARE(code(dlogits.download(got_logits)), code(cudaSuccess));
                for (int64_t r = 0; r < rows; ++r, ++checked) {
                    const size_t row = static_cast<size_t>(order[static_cast<size_t>(r)]);
                    const int32_t id = got[static_cast<size_t>(r)];
                    char what[160];
                    std::snprintf(what, sizeof what, "%lld columns, row %zu, draw %d: GPU %d, Sampler %d",
                                  static_cast<long long>(cols), row, draw, id, want[row]);
                    QVERIFY2(id == want[row], what);
                    const float v = x[row * static_cast<size_t>(cols) + static_cast<size_t>(id)];
                    const float logit = std::isnan(v) ? -kInf : std::min(v, FLT_MAX);  // as the Sampler cleans it
                    QVERIFY2(!indexed || std::memcmp(&got_logits[static_cast<size_t>(r)], &logit, sizeof logit) == 0,
                             what);
                }
            }
        }
        std::fprintf(stderr, "%d draws equal to the Sampler's\n", checked);
        // Bad shapes, too small a workspace.
        QCOMPARE(code(fk::draw_rows(nullptr, -1, 64, nullptr, nullptr, {}, nullptr, nullptr, 0, nullptr)),
                 code(cudaErrorInvalidValue));
        QCOMPARE(code(fk::draw_rows(nullptr, 2, 0, nullptr, nullptr, {}, nullptr, nullptr, 0, nullptr)),
                 code(cudaErrorInvalidValue));
        QCOMPARE(code(fk::draw_rows(nullptr, 2, 64, nullptr, nullptr, {}, nullptr, nullptr, 0, nullptr)),
                 code(cudaErrorInvalidValue));
    }

    // Top-p and min-p draws from whole rows, as Sampler::sample makes them
    // without top-k (with the set's size and the token's logit its SampleInfo
    // gives): top-p with and without min-p, min-p alone; flat and peaked rows,
    // heavy ties, special values, rows with nothing above -inf, vocabularies
    // up to 262144, more rows than one group, rows taken out of order.
    void top_p_draws_match_the_samplers_whole_row_draws() {
        if (!have_gpu()) QSKIP("no CUDA GPU");
        std::mt19937 rng(47);
        int checked = 0;
        for (const int64_t cols : {int64_t{7}, int64_t{1003}, int64_t{49152}, int64_t{262144}}) {
            const int64_t x_rows = 8;
            std::vector<float> x;
            for (int64_t r = 0; r < x_rows; ++r) {
                auto row = normal_floats(rng, static_cast<size_t>(cols), r == 0 ? 0.05f : 0.4f * static_cast<float>(r));
                if (r == 3)  // heavy ties: values on a grid of 0.5
                    for (float& v : row) v = std::round(v * 2.0f) / 2.0f;
                x.insert(x.end(), row.begin(), row.end());
            }
            x[1] = kInf;                                      // row 0: +inf weighs 1
            x[static_cast<size_t>(cols + 3)] = std::nanf("");  // row 1: NaN weighs 0
            x[static_cast<size_t>(2 * cols + 1)] = -0.0f;     // row 2: -0.0 ties with +0.0
            x[static_cast<size_t>(2 * cols + 4)] = 0.0f;
            x[static_cast<size_t>(3 * cols)] = -kInf;
            for (int64_t c = 0; c < cols; ++c)  // row 7: nothing above -inf, the first columns NaN
                x[static_cast<size_t>(7 * cols + c)] = c < 2 || c % 3 == 0 ? std::nanf("") : -kInf;
            const DeviceArray<float> dx(x);
            for (int draw = 0; draw < 4; ++draw) {
                const int64_t rows = 20;  // more than a group of 16
                std::vector<int32_t> which;
                std::vector<fk::TopPDrawn> want;
                std::vector<float> params;
                std::vector<double> uniforms;
                for (int64_t i = 0; i < rows; ++i) {
                    const auto r = static_cast<int32_t>((4 * x_rows - 1 - i + draw) % x_rows);  // out of order
                    folio::SamplingParams p;
                    p.temperature = std::array{0.5f, 0.8f, 1.0f, 1.7f}[static_cast<size_t>(i + draw) % 4];
                    p.top_k = 0;
                    p.top_p = std::array{0.3f, 0.9f, 0.95f, 1.0f, 0.99f, 0.5f}[static_cast<size_t>(i) % 6];
                    const auto j = static_cast<size_t>(i / 6), k = static_cast<size_t>(i / 6 + draw);
                    p.min_p = p.top_p < 1.0f ? std::array{0.0f, 0.0f, 0.02f, 0.1f}[j % 4]
                                             : std::array{0.001f, 0.02f, 0.1f, 0.5f}[k % 4];  // min-p alone
                    p.seed = 900 + static_cast<uint64_t>(100 * i + draw);
                    auto host = folio::Sampler::create(p), device = folio::Sampler::create(p);
                    QVERIFY(host && device);
                    const std::span<const float> row(x.data() + r * cols, static_cast<size_t>(cols));
                    folio::SampleInfo info;
                    const int32_t id = host->sample(row, {}, &info);
                    const float v = row[static_cast<size_t>(id)];
                    want.push_back({id, info.n_candidates, std::isnan(v) ? -kInf : std::min(v, FLT_MAX)});
                    which.push_back(r);
                    params.insert(params.end(), {p.temperature, p.top_p, p.min_p});
                    uniforms.push_back(device->take_uniform());
                }
                const DeviceArray<int32_t> drows(which);
                const DeviceArray<float> dparams(params);
                const DeviceArray<double> duniforms(uniforms);
                DeviceArray<fk::TopPDrawn> dout(static_cast<size_t>(rows));
                const size_t workspace_bytes = fk::top_p_draw_workspace_bytes(rows, cols);
                DeviceArray<char> dwork(workspace_bytes);
                QCOMPARE(code(dout.poison()), code(cudaSuccess));
                QCOMPARE(code(fk::top_p_draw_rows(dx.ptr, drows.ptr, rows, cols, dparams.ptr, duniforms.ptr, dout.ptr,
                                                  dwork.ptr, workspace_bytes, nullptr)),
                         code(cudaSuccess));
                std::vector<fk::TopPDrawn> got;
                QCOMPARE(code(dout.download(got)), code(cudaSuccess));
                for (int64_t i = 0; i < rows; ++i, ++checked) {
                    const fk::TopPDrawn& g = got[static_cast<size_t>(i)];
                    const fk::TopPDrawn& w = want[static_cast<size_t>(i)];
                    char what[240];
                    std::snprintf(what, sizeof what,
                                  "%lld columns, row %d, draw %d (t %g, top-p %g, min-p %g): GPU %d of %d (logit %a), "
                                  "Sampler %d of %d (%a)",
                                  static_cast<long long>(cols), which[static_cast<size_t>(i)], draw,
                                  params[static_cast<size_t>(3 * i)], params[static_cast<size_t>(3 * i + 1)],
                                  params[static_cast<size_t>(3 * i + 2)], g.id, g.n_candidates, g.logit, w.id,
                                  w.n_candidates, w.logit);
                    QVERIFY2(g.id == w.id && g.n_candidates == w.n_candidates &&
                                 std::memcmp(&g.logit, &w.logit, sizeof(float)) == 0,
                             what);
                }
            }
        }
        std::fprintf(stderr, "%d top-p draws equal to the Sampler's\n", checked);
        // Bad shapes, no workspace.
        QCOMPARE(code(fk::top_p_draw_rows(nullptr, nullptr, -1, 64, nullptr, nullptr, nullptr, nullptr, 0, nullptr)),
                 code(cudaErrorInvalidValue));
        QCOMPARE(code(fk::top_p_draw_rows(nullptr, nullptr, 2, 0, nullptr, nullptr, nullptr, nullptr, 0, nullptr)),
                 code(cudaErrorInvalidValue));
        const DeviceArray<float> dx(std::vector<float>(64, 1.0f));
        QCOMPARE(code(fk::top_p_draw_rows(dx.ptr, reinterpret_cast<const int32_t*>(dx.ptr), 1, 64, dx.ptr,
                                          reinterpret_cast<const double*>(dx.ptr),
                                          reinterpret_cast<fk::TopPDrawn*>(dx.ptr), nullptr, 0, nullptr)),
                 code(cudaErrorInvalidValue));
    }
};

FOLIO_TEST_MAIN(TestGpuSampling)
#include "test_gpu_sampling.moc"
