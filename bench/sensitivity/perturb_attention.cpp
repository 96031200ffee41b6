// How much a model's logits move when every attention output is changed in
// its last bits: the scale of disagreement to expect between two correct
// backends whose float sums differ in order (the CPU and the GPU). Runs the
// CPU forward pass unperturbed and with each attention output scaled by
// (1 + eps * u), u uniform in [-0.5, 0.5) from a generator seeded by `seed`.
//   folio_bench_perturb MODEL EPS...
//     37 fixed tokens: the worst row's relative logits error and the rows
//     whose top token changed (bench/results/cuda-backend-2026-11-29.txt).
//   folio_bench_perturb --text FILE MODEL EPS...
//     The protocol of realModelsMatchTheCpu (tests/gpu/test_gpu_backend.cpp):
//     FILE teacher-forced in up to 4 chunks of 512 tokens, positions 256..510
//     of each scored; per eps and seed 1..3, the perplexities, the mean NLL's
//     relative difference and how often the top token is the same
//     (bench/results/cuda-agreement-baseline-2026-11-30.txt).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "folio/tokenizer.h"
#include "model/architecture.h"
#include "model/batch_check.h"
#include "model/forwarding_ops.h"

namespace {

class PerturbedAttention final : public folio::model::ForwardingOps {
public:
    PerturbedAttention(Ops& inner, float eps, uint64_t seed) : ForwardingOps(inner), eps_(eps), state_(seed) {}
    folio::Status attention(const folio::model::AttentionParams& p, const folio::Batch& batch, float* q, float* k,
                            const float* v, float* out) override {
        folio::Status s = inner_.attention(p, batch, q, k, v, out);
        for (int64_t i = 0; i < int64_t{batch.n_tokens()} * p.n_head * p.head_dim; ++i) {
            state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
            out[i] *= 1.0f + eps_ * (static_cast<float>(state_ >> 40) / 16777216.0f - 0.5f);
        }
        return s;
    }

private:
    float eps_;
    uint64_t state_;
};

// One sequence of `tokens` from position 0, its K/V in blocks 0, 1, 2, ...;
// logits for the rows in `logits_rows`.
folio::Batch one_sequence(const std::vector<int32_t>& tokens, std::vector<int32_t> logits_rows) {
    folio::Batch b;
    const auto n = static_cast<int32_t>(tokens.size());
    std::vector<int32_t> table;
    for (int32_t blk = 0; blk * 16 < n; ++blk) table.push_back(blk);
    for (int32_t j = 0; j < n; ++j) {
        b.token_ids.push_back(tokens[static_cast<size_t>(j)]);
        b.positions.push_back(j);
        b.slot_mapping.push_back(j);
    }
    b.sequences.push_back(folio::BatchSequence{0, n, n, table});
    b.logits_rows = std::move(logits_rows);
    return b;
}

// The CPU forward pass over `batch`, attention perturbed by eps (none at 0).
bool forward(folio::model::Architecture& arch, const folio::Batch& batch, float eps, uint64_t seed,
             std::vector<float>& logits) {
    const folio::model::KvShape shape = arch.kv_shape();
    const auto n_blocks = static_cast<uint32_t>(batch.sequences[0].block_table.size());
    const auto max_context = static_cast<uint32_t>(batch.n_tokens());
    logits.resize(batch.logits_rows.size() * static_cast<size_t>(arch.n_vocab()));
    const auto out = folio::model::StepOutput::all_logits(logits);
    std::vector<int32_t> rows;
    folio::cpu::KvCache cache;
    cache.allocate(shape.n_layer, shape.n_head_kv, shape.head_dim, 16, n_blocks);
    folio::cpu::CpuOps cpu(2, cache, max_context);
    cpu.set_row_sequences(&rows);
    PerturbedAttention ops(cpu, eps, seed);
    folio::Status s = folio::model::check_batch(batch, out, arch.n_vocab(), n_blocks, 16, max_context, rows);
    if (s) s = arch.forward(ops, batch, out);
    if (!s) std::fprintf(stderr, "%s\n", s.error().message.c_str());
    return bool(s);
}

int fixed_tokens(folio::model::Architecture& arch, int n_eps, char** eps) {
    const int32_t n = 37, n_vocab = arch.n_vocab();
    std::vector<int32_t> tokens, rows;
    for (int32_t j = 0; j < n; ++j) tokens.push_back((j * 131 + 7) % n_vocab), rows.push_back(j);
    const folio::Batch batch = one_sequence(tokens, rows);
    std::vector<float> base, perturbed;
    if (!forward(arch, batch, 0.0f, 1, base)) return 1;
    for (int a = 0; a < n_eps; ++a) {
        const float e = std::strtof(eps[a], nullptr);
        if (!forward(arch, batch, e, 1, perturbed)) return 1;
        double worst = 0;
        int flips = 0;
        for (int32_t r = 0; r < n; ++r) {
            const float* x = base.data() + static_cast<size_t>(r) * n_vocab;
            const float* y = perturbed.data() + static_cast<size_t>(r) * n_vocab;
            double diff = 0, norm = 0;
            for (int32_t i = 0; i < n_vocab; ++i) {
                diff += (double{x[i]} - y[i]) * (double{x[i]} - y[i]);
                norm += double{x[i]} * x[i];
            }
            worst = std::max(worst, std::sqrt(diff / norm));
            flips += std::max_element(x, x + n_vocab) - x != std::max_element(y, y + n_vocab) - y;
        }
        std::printf("eps %g: worst row's relative logits error %.3g, top token changed in %d of %d rows\n", e, worst,
                    flips, n);
    }
    return 0;
}

// Each scored row's negative log-likelihood of the next token, and its top token.
struct RowScore {
    double nll;
    int32_t top;
};

void score(const folio::Batch& b, const std::vector<float>& logits, int32_t n_vocab, std::vector<RowScore>& out) {
    for (size_t r = 0; r < b.logits_rows.size(); ++r) {
        const int32_t next = b.token_ids[static_cast<size_t>(b.logits_rows[r]) + 1];
        const float* row = logits.data() + r * static_cast<size_t>(n_vocab);
        const float* top = std::max_element(row, row + n_vocab);
        double sum = 0;
        for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp(double{row[i]} - *top);
        out.push_back({std::log(sum) + *top - row[next], static_cast<int32_t>(top - row)});
    }
}

int teacher_forced(folio::model::Architecture& arch, const folio::Tokenizer& tokenizer, const char* text_path,
                   int n_eps, char** eps) {
    std::ifstream file(text_path);
    if (!file) return std::fprintf(stderr, "cannot read %s\n", text_path), 1;
    const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const std::vector<int32_t> tokens = tokenizer.encode(text, true, false);
    const int32_t n_ctx = 512, first_scored = n_ctx / 2;
    std::vector<folio::Batch> chunks;
    for (int c = 0; c < 4 && (c + 1) * n_ctx <= static_cast<int>(tokens.size()); ++c) {
        std::vector<int32_t> rows;
        for (int32_t j = first_scored; j + 1 < n_ctx; ++j) rows.push_back(j);
        chunks.push_back(one_sequence({tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx}, rows));
    }
    auto run = [&](float e, uint64_t seed, std::vector<RowScore>& scores) {
        std::vector<float> logits;
        for (const folio::Batch& b : chunks) {
            if (!forward(arch, b, e, seed, logits)) return false;
            score(b, logits, arch.n_vocab(), scores);
        }
        return true;
    };
    std::vector<RowScore> base;
    if (!run(0.0f, 1, base) || base.empty()) return 1;
    double base_nll = 0;
    for (const RowScore& s : base) base_nll += s.nll;
    const auto n = static_cast<double>(base.size());
    std::printf("%zu tokens, %zu chunks, %zu positions scored; unperturbed PPL %.6f\n", tokens.size(), chunks.size(),
                base.size(), std::exp(base_nll / n));
    for (int a = 0; a < n_eps; ++a) {
        const float e = std::strtof(eps[a], nullptr);
        for (uint64_t seed = 1; seed <= 3; ++seed) {
            std::vector<RowScore> perturbed;
            if (!run(e, seed, perturbed)) return 1;
            double nll = 0;
            int same_top = 0;
            for (size_t r = 0; r < base.size(); ++r) {
                nll += perturbed[r].nll;
                same_top += perturbed[r].top == base[r].top;
            }
            std::printf("eps %g seed %llu: %zu positions, PPL %.6f vs %.6f, mean NLL differs by %.4f %%, "
                        "same top token at %.2f %% (%d)\n",
                        e, static_cast<unsigned long long>(seed), base.size(), std::exp(base_nll / n),
                        std::exp(nll / n), std::fabs(nll - base_nll) / base_nll * 100, same_top / n * 100, same_top);
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const bool text = argc > 1 && std::strcmp(argv[1], "--text") == 0;
    const int first = text ? 3 : 1;  // the model's argument
    if (argc < first + 2) {
        std::fprintf(stderr, "usage: %s [--text FILE] MODEL EPS...\n", argv[0]);
        return 2;
    }
    auto model = folio::load_model_description(argv[first]);
    if (!model) return std::fprintf(stderr, "%s\n", model.error().message.c_str()), 1;
    auto arch = folio::model::create_architecture(*model);
    if (!arch) return std::fprintf(stderr, "%s\n", arch.error().message.c_str()), 1;
    if (!text) return fixed_tokens(**arch, argc - first - 1, argv + first + 1);
    auto tokenizer = folio::Tokenizer::create(model->tokenizer);
    if (!tokenizer) return std::fprintf(stderr, "%s\n", tokenizer.error().message.c_str()), 1;
    return teacher_forced(**arch, *tokenizer, argv[2], argc - first - 1, argv + first + 1);
}
