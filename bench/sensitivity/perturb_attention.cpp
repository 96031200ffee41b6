// How much a model's logits move when every attention output is changed in
// its last bits: the scale of disagreement to expect between two correct
// backends whose float sums differ in order (the CPU and the GPU). Runs the
// CPU forward pass twice over the same tokens, the second time with each
// attention output scaled by (1 + eps * u), u uniform in [-0.5, 0.5), and
// prints the worst row's relative logits error and the rows whose top token
// changed. bench/results/cuda-backend-2026-11-29.txt quotes it:
//   folio_bench_perturb MODEL.gguf 1e-7 1e-6 1e-5
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "model/architecture.h"
#include "model/batch_check.h"
#include "model/forwarding_ops.h"

namespace {

class PerturbedAttention final : public folio::model::ForwardingOps {
public:
    PerturbedAttention(Ops& inner, float eps) : ForwardingOps(inner), eps_(eps) {}
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
    uint64_t state_ = 1;
};

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s MODEL EPS...\n", argv[0]);
        return 2;
    }
    auto model = folio::load_model_description(argv[1]);
    if (!model) return std::fprintf(stderr, "%s\n", model.error().message.c_str()), 1;
    auto arch = folio::model::create_architecture(*model);
    if (!arch) return std::fprintf(stderr, "%s\n", arch.error().message.c_str()), 1;
    const folio::model::KvShape shape = (*arch)->kv_shape();
    const int32_t n = 37, n_vocab = (*arch)->n_vocab();
    folio::Batch batch;  // 37 fixed tokens, one sequence, logits for every row
    for (int32_t j = 0; j < n; ++j) {
        batch.token_ids.push_back((j * 131 + 7) % n_vocab);
        batch.positions.push_back(j);
        batch.slot_mapping.push_back(j);
        batch.logits_rows.push_back(j);
    }
    batch.sequences.push_back(folio::BatchSequence{0, n, n, {0, 1, 2}});
    std::vector<int32_t> rows;
    std::vector<float> base(static_cast<size_t>(n) * n_vocab), perturbed(base.size());
    if (!folio::model::check_batch(batch, folio::model::StepOutput::all_logits(base), n_vocab, 3, 16, 64, rows)) return 1;
    auto run = [&](float eps, std::vector<float>& logits) {
        folio::cpu::KvCache cache;
        cache.allocate(shape.n_layer, shape.n_head_kv, shape.head_dim, 16, 3);
        folio::cpu::CpuOps cpu(2, cache, 64);
        cpu.set_row_sequences(&rows);
        PerturbedAttention ops(cpu, eps);
        return (*arch)->forward(ops, batch, folio::model::StepOutput::all_logits(logits));
    };
    if (!run(0.0f, base)) return 1;
    for (int a = 2; a < argc; ++a) {
        const float eps = std::strtof(argv[a], nullptr);
        if (!run(eps, perturbed)) return 1;
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
        std::printf("eps %g: worst row's relative logits error %.3g, top token changed in %d of %d rows\n", eps, worst,
                    flips, n);
    }
    return 0;
}
