// folio inspect: what a model is and what it needs to run.
#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "folio/kv_type.h"
#include "args.h"
#include "commands.h"
#include "folio/model.h"

namespace folio::cli {
namespace {

const std::vector<FlagSpec> kFlags = {
    {"-m", "--model", "PATH", "GGUF file or Hugging Face folder"},
    {"-c", "--ctx-size", "N", "context length for the memory estimate (default: min(4096, trained))"},
    {"", "--json", "", "machine-readable output"},
    {"", "--no-tensors", "", "leave out the tensor table"},
    {"-h", "--help", "", "this help"},
};

std::string human_bytes(uint64_t bytes) {
    char buf[32];
    const double b = static_cast<double>(bytes);
    if (b >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
    else if (b >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024));
    else if (b >= 1024.0) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
    else std::snprintf(buf, sizeof buf, "%" PRIu64 " B", bytes);
    return buf;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

const char* tokenizer_model_name(TokenizerModel m) {
    return m == TokenizerModel::BytePairEncoding ? "byte-level BPE (gpt2)" : "SentencePiece (llama)";
}

std::string token_label(const TokenizerSpec& t, int32_t id) {
    if (id < 0) return "none";
    std::string s = std::to_string(id);
    if (static_cast<size_t>(id) < t.tokens.size()) s += " '" + t.tokens[static_cast<size_t>(id)] + "'";
    return s;
}

struct TypeUsage {
    int tensors = 0;
    uint64_t bytes = 0;
    int64_t elements = 0;
};

nlohmann::json to_json(const ModelDescription& m, uint32_t ctx, bool with_tensors) {
    const HParams& h = m.hparams;
    nlohmann::json j;
    j["name"] = m.name;
    j["path"] = m.path;
    j["format"] = m.format == SourceFormat::Gguf ? "gguf" : "hf-folder";
    j["architecture"] = h.architecture;
    j["hparams"] = {
        {"n_vocab", h.n_vocab}, {"n_ctx_train", h.n_ctx_train}, {"n_embd", h.n_embd}, {"n_layer", h.n_layer},
        {"n_head", h.n_head}, {"n_head_kv", h.n_head_kv}, {"head_dim", h.head_dim}, {"n_ff", h.n_ff},
        {"rms_norm_eps", h.rms_norm_eps}, {"rope_freq_base", h.rope_freq_base},
        {"rope_freq_base_swa", h.rope_freq_base_swa}, {"rope_scale_linear", h.rope_scale_linear},
        {"rope_style", h.rope_style == RopeStyle::Interleaved ? "interleaved" : "split-half"},
        {"sliding_window", h.sliding_window}, {"sliding_window_pattern", h.sliding_window_pattern},
        {"attn_logit_softcap", h.attn_logit_softcap}, {"final_logit_softcap", h.final_logit_softcap},
        {"query_pre_attn_scalar", h.query_pre_attn_scalar},
        {"tied_embeddings", h.tied_embeddings}};
    if (h.n_expert > 0)
        j["hparams"]["experts"] = {{"count", h.n_expert}, {"used", h.n_expert_used}, {"n_ff", h.n_ff_expert},
                                   {"weights_norm", h.expert_weights_norm}};
    // Llama 3.1's per-pair divisors: how many, and their range (the list itself is in --json).
    if (h.rope_freq_factors.empty()) {
        j["hparams"]["rope_freq_factors"] = nullptr;
    } else {
        const auto [lo, hi] = std::minmax_element(h.rope_freq_factors.begin(), h.rope_freq_factors.end());
        j["hparams"]["rope_freq_factors"] = {{"count", h.rope_freq_factors.size()}, {"min", *lo}, {"max", *hi},
                                             {"values", h.rope_freq_factors}};
    }
    // Phi-3's LongRoPE: which set a context uses (long past rope_orig_context), each as above.
    if (!h.rope_factors_long.empty()) {
        for (const auto& [key, factors] : {std::pair{"rope_factors_long", &h.rope_factors_long},
                                           std::pair{"rope_factors_short", &h.rope_factors_short}}) {
            const auto [lo, hi] = std::minmax_element(factors->begin(), factors->end());
            j["hparams"][key] = {{"count", factors->size()}, {"min", *lo}, {"max", *hi}, {"values", *factors}};
        }
        j["hparams"]["rope_orig_context"] = h.rope_orig_context;
        j["hparams"]["rope_factors_at_context"] = ctx > h.rope_orig_context ? "long" : "short";
    }
    if (h.rope_attn_factor != 1.0f) j["hparams"]["rope_attn_factor"] = h.rope_attn_factor;
    if (h.rope_yarn_factor > 0.0f)
        j["hparams"]["rope_yarn"] = {{"factor", h.rope_yarn_factor},
                                     {"original_context", h.rope_orig_context ? h.rope_orig_context : h.n_ctx_train}};
    int64_t params = 0;
    std::map<std::string, TypeUsage> usage;
    for (const auto& t : m.tensors) {
        params += t.n_elements();
        auto& u = usage[std::string(traits(t.type).name)];
        ++u.tensors;
        u.bytes += t.nbytes;
        u.elements += t.n_elements();
    }
    j["parameters"] = params;
    for (const auto& [type, u] : usage)
        j["quantization"].push_back({{"type", type}, {"tensors", u.tensors}, {"bytes", u.bytes}, {"elements", u.elements}});
    const TokenizerSpec& t = m.tokenizer;
    j["tokenizer"] = {{"model", t.model == TokenizerModel::BytePairEncoding ? "bpe" : "sentencepiece"},
                      {"pre", t.pre}, {"tokens", t.tokens.size()}, {"merges", t.merges.size()},
                      {"bos_id", t.bos_id}, {"eos_id", t.eos_id}, {"eot_id", t.eot_id}, {"unk_id", t.unk_id},
                      {"pad_id", t.pad_id}, {"add_bos", t.add_bos}, {"add_eos", t.add_eos},
                      {"add_space_prefix", t.add_space_prefix}};
    j["chat_template"] = m.chat_template.empty() ? nlohmann::json() : nlohmann::json(m.chat_template);
    const uint64_t kv_token = m.kv_bytes_per_token(2);
    j["memory"] = {{"weights_bytes", m.weight_bytes()}, {"kv_type", "F16"}, {"kv_bytes_per_token", kv_token},
                   {"context", ctx}, {"kv_bytes", kv_token * ctx}, {"total_bytes", m.weight_bytes() + kv_token * ctx}};
    // A mixture of experts keeps every expert in memory but reads only the chosen ones per token.
    j["memory"]["weights_read_per_token_bytes"] = m.active_weight_bytes();
    // Each --kv-type's bytes per token (null where the heads do not fit the type's blocks).
    for (const KvType type : kKvTypes)
        j["memory"]["kv_bytes_per_token_by_type"][std::string(kv_type_name(type))] =
            kv_type_fits(type, m.hparams.head_dim) ? nlohmann::json(kv_bytes_per_token(m, type)) : nlohmann::json();
    if (with_tensors)
        for (const auto& tv : m.tensors)
            j["tensors"].push_back({{"name", tv.name}, {"type", std::string(traits(tv.type).name)},
                                    {"shape", tv.shape}, {"bytes", tv.nbytes}});
    return j;
}

void print_text(const nlohmann::json& j, const ModelDescription& m) {
    const auto& h = j["hparams"];
    std::printf("model          %s\n", m.name.c_str());
    std::printf("path           %s (%s)\n", m.path.c_str(), j["format"].get<std::string>().c_str());
    std::printf("architecture   %s\n", m.hparams.architecture.c_str());
    std::printf("parameters     %.1f M\n", j["parameters"].get<double>() / 1e6);
    std::printf("\nhyper-parameters\n");
    for (auto it = h.begin(); it != h.end(); ++it) {
        nlohmann::json value = it.value();
        if (it.key().rfind("rope_f", 0) == 0 && value.is_object()) value.erase("values");
        std::printf("  %-24s %s\n", it.key().c_str(), value.dump().c_str());
    }
    std::printf("\nquantization mix\n");
    for (const auto& q : j["quantization"])
        std::printf("  %-6s %4d tensors  %10s\n", q["type"].get<std::string>().c_str(), q["tensors"].get<int>(),
                    human_bytes(q["bytes"].get<uint64_t>()).c_str());
    const TokenizerSpec& t = m.tokenizer;
    std::printf("\ntokenizer      %s, %zu tokens, %zu merges, pre '%s'\n", tokenizer_model_name(t.model),
                t.tokens.size(), t.merges.size(), t.pre.c_str());
    std::printf("  bos %s, eos %s, eot %s, add_bos %s\n", token_label(t, t.bos_id).c_str(),
                token_label(t, t.eos_id).c_str(), token_label(t, t.eot_id).c_str(), t.add_bos ? "yes" : "no");
    if (m.chat_template.empty()) {
        std::printf("\nchat template  none in the file\n");
    } else {
        std::printf("\nchat template  (%zu chars)\n%s\n", m.chat_template.size(), m.chat_template.c_str());
    }
    const auto& mem = j["memory"];
    std::printf("\nmemory\n  weights                  %s\n  KV cache (F16)           %s per token\n"
                "  KV cache at -c %-9u %s\n  total                    %s\n",
                human_bytes(mem["weights_bytes"].get<uint64_t>()).c_str(),
                human_bytes(mem["kv_bytes_per_token"].get<uint64_t>()).c_str(), mem["context"].get<uint32_t>(),
                human_bytes(mem["kv_bytes"].get<uint64_t>()).c_str(),
                human_bytes(mem["total_bytes"].get<uint64_t>()).c_str());
    for (const KvType type : kKvTypes) {
        const std::string name(kv_type_name(type));
        std::string upper = name;
        for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        const std::string label = "KV cache (" + upper + ")";
        if (const auto& bytes = mem["kv_bytes_per_token_by_type"][name]; type != KvType::F16 && !bytes.is_null())
            std::printf("  %-24s %s per token (--kv-type %s)\n", label.c_str(), human_bytes(bytes.get<uint64_t>()).c_str(),
                        name.c_str());
    }
    if (m.hparams.n_expert > 0)
        std::printf("  weights read per token   %s (%u of %u experts)\n",
                    human_bytes(mem["weights_read_per_token_bytes"].get<uint64_t>()).c_str(), m.hparams.n_expert_used,
                    m.hparams.n_expert);
    if (j.contains("tensors")) {
        std::printf("\ntensors (%zu)\n", m.tensors.size());
        for (const auto& tv : m.tensors)
            std::printf("  %-36s %-5s %-20s %10s\n", tv.name.c_str(), std::string(traits(tv.type).name).c_str(),
                        shape_text(tv.shape).c_str(), human_bytes(tv.nbytes).c_str());
    }
}

}  // namespace

int run_inspect(int argc, char** argv) {
    auto args = Args::parse(argc, argv, 2, kFlags);
    if (!args) return fail("inspect", args.error().message);
    if (args->has("--help")) {
        std::printf("%s", usage("inspect", "-m MODEL [-c N] [--json]", kFlags).c_str());
        return 0;
    }
    auto path = args->get("--model");
    if (!path) return fail("inspect", "no model given (-m PATH)");
    auto model = load_model_description(*path);
    if (!model) return fail("inspect", model.error().message);
    const uint32_t trained = model->hparams.n_ctx_train ? model->hparams.n_ctx_train : 4096;
    auto ctx = args->get_int("--ctx-size", std::min<uint32_t>(4096, trained), 1, 1 << 24);
    if (!ctx) return fail("inspect", ctx.error().message);
    const auto j = to_json(*model, static_cast<uint32_t>(*ctx), !args->has("--no-tensors"));
    if (args->has("--json")) std::printf("%s\n", j.dump(2).c_str());
    else print_text(j, *model);
    return 0;
}

}  // namespace folio::cli
