#include "model/architecture.h"

#include <algorithm>

#include "folio/backend.h"

namespace folio::model {
namespace {

struct ArchitectureEntry {
    const char* name;
    Result<std::unique_ptr<Architecture>> (*create)(const ModelDescription&);
};

// GGUF general.architecture names. Mistral, SmolLM and TinyLlama files say
// "llama"; Qwen2 is the llama block with Q/K/V biases, Qwen3 with per-head
// Q/K norms.
constexpr ArchitectureEntry kArchitectures[] = {
    {"llama", create_llama},
    {"mistral", create_llama},
    {"qwen2", create_llama},
    {"qwen3", create_qwen3},
    {"qwen3moe", create_qwen3moe},
    {"gemma2", create_gemma2},
    {"gemma3", create_gemma3},
    {"phi3", create_phi3},
};

}  // namespace

Result<std::unique_ptr<Architecture>> create_architecture(const ModelDescription& model) {
    for (const auto& entry : kArchitectures)
        if (model.hparams.architecture == entry.name) return entry.create(model);
    return make_error("model '" + model.name + "': architecture '" + model.hparams.architecture +
                      "' is not supported (Folio runs: " + supported_architectures() + ")");
}

}  // namespace folio::model

namespace folio {

std::string supported_architectures() {
    std::string names;
    for (const auto& entry : model::kArchitectures) names += (names.empty() ? "" : ", ") + std::string(entry.name);
    return names;
}

namespace model {

Status output_head(Ops& ops, const Batch& batch, const float* x, float* rows, const float* norm, float eps,
                   int64_t n_embd, const Weight& output, float softcap, const StepOutput& out) {
    const auto n_out = static_cast<int64_t>(batch.logits_rows.size());
    ops.select_logit_rows(batch, x, n_embd, rows);
    ops.rms_norm(rows, norm, eps, n_out, n_embd, rows);
    const int64_t vocab = output.out_features;
    const int64_t n_logits = n_out * vocab;
    const bool all_logits = !out.chooses_tokens() && !out.keeps_top_k();
    float* target = all_logits ? ops.logits_target(out.logits, n_logits) : ops.buffer(Buffer::Logits, n_logits);
    FOLIO_RETURN_IF_ERROR(ops.matmul(output, rows, n_out, target));
    if (softcap > 0) ops.softcap(target, softcap, n_logits);
    return deliver(ops, target, std::min(n_out, out.rows(vocab)), vocab, out);
}

Status deliver(Ops& ops, float* logits, int64_t n_rows, int64_t vocab, const StepOutput& out) {
    if (out.keeps_top_k()) return ops.top_k(logits, n_rows, vocab, out.top_k, out.logits, out.token_ids, out.sums);
    if (out.draws_tokens()) return ops.draw_tokens(logits, n_rows, vocab, out.draws, out.token_ids);
    if (out.chooses_tokens()) return ops.choose_tokens(logits, n_rows, vocab, out.token_ids);
    return ops.to_host(logits, out.logits, n_rows * vocab);
}

}  // namespace model
}  // namespace folio
