// Validation (validation.h): the two models run side by side one chunk at a
// time, so only one chunk's logits of each are held.
#include "quant/validation.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "folio/backend.h"
#include "folio/gguf.h"
#include "folio/tokenizer.h"
#include "quant/block_check.h"
#include "quant/source_tensor.h"

namespace folio::quant {

Status check_written_file(const std::string& path, size_t expected_tensors) {
    auto file = GgufFile::open(path);
    if (!file) return make_error("the written file does not reopen: " + file.error().message);
    if (file->tensors().size() != expected_tensors)
        return make_error("'" + path + "' holds " + std::to_string(file->tensors().size()) + " tensors, " +
                          std::to_string(expected_tensors) + " were written");
    for (const GgufTensorInfo& t : file->tensors()) {
        if (Status s = check_tensor_blocks(t); !s) return make_error("'" + path + "': " + s.error().message);
        release_pages(t.data, t.nbytes);  // the whole output would otherwise stay resident
    }
    return {};
}

Result<KldSummary> measure_quality(const ModelDescription& source, const std::string& result_path,
                                   const QualityOptions& options) {
    std::ifstream in(options.text_path, std::ios::binary);
    if (!in) return make_error("cannot read the validation text '" + options.text_path + "'");
    std::ostringstream text;
    text << in.rdbuf();
    auto tokenizer = Tokenizer::create(source.tokenizer);
    if (!tokenizer) return tokenizer.error();
    const std::vector<int32_t> tokens = tokenizer->encode(text.str(), /*add_special=*/true, /*parse_special=*/false);

    auto result = load_model_description(result_path);
    if (!result) return result.error();
    BackendOptions backend_options;
    backend_options.n_threads = options.threads;
    backend_options.device = options.device;
    backend_options.max_context = uint32_t(options.n_ctx);
    auto base_backend = create_backend(source, backend_options);
    if (!base_backend) return base_backend.error();
    auto result_backend = create_backend(*result, backend_options);
    if (!result_backend) return result_backend.error();

    ChunkScoring scoring;
    scoring.n_ctx = options.n_ctx;
    scoring.n_chunks = 1;
    scoring.bos = tokenizer->add_bos() && tokenizer->bos_id() >= 0 ? tokenizer->bos_id() : -1;
    scoring.cancel = options.cancel;
    int64_t n_chunks = int64_t(tokens.size()) / options.n_ctx;
    if (options.n_chunks >= 0) n_chunks = std::min(n_chunks, options.n_chunks);
    if (n_chunks == 0)
        return make_error("the validation text '" + options.text_path + "' is " + std::to_string(tokens.size()) +
                          " tokens, less than one chunk of " + std::to_string(options.n_ctx));
    const int32_t n_vocab = (*base_backend)->n_vocab();
    if ((*result_backend)->n_vocab() != n_vocab) return make_error("the result's vocabulary differs from the source's");
    const size_t record = log_prob_record_size(n_vocab);
    std::vector<uint16_t> records;
    KldAccumulator kld;
    for (int64_t c = 0; c < n_chunks; ++c) {
        const auto chunk = std::span<const int32_t>(tokens).subspan(size_t(c * options.n_ctx), size_t(options.n_ctx));
        Status base = score_chunks(**base_backend, chunk, scoring, [&](int64_t, std::span<const float> logits,
                                                                       std::span<const int32_t> targets) -> Status {
            records.resize(targets.size() * record);
            for (size_t i = 0; i < targets.size(); ++i)
                (void)compress_log_probs(logits.subspan(i * size_t(n_vocab), size_t(n_vocab)), targets[i],
                                         std::span<uint16_t>(records).subspan(i * record, record));
            return {};
        });
        if (!base) return base.error();
        Status quantized = score_chunks(**result_backend, chunk, scoring, [&](int64_t, std::span<const float> logits,
                                                                              std::span<const int32_t> targets) -> Status {
            for (size_t i = 0; i < targets.size(); ++i)
                kld.add(logits.subspan(i * size_t(n_vocab), size_t(n_vocab)), targets[i],
                        std::span<const uint16_t>(records).subspan(i * record, record));
            return {};
        });
        if (!quantized) return quantized.error();
        if (options.on_chunk) options.on_chunk(c + 1, n_chunks);
    }
    return kld.summary();
}

Status write_report_json(const QuantizeReport& r, const std::string& path) {
    nlohmann::json j;
    j["source"] = r.source;
    j["output"] = r.output;
    j["preset"] = r.preset;
    j["source_bytes"] = r.source_bytes;
    j["output_bytes"] = r.output_bytes;
    j["parameters"] = r.n_parameters;
    j["bits_per_weight"] = r.bits_per_weight;
    j["seconds"] = r.seconds;
    j["warnings"] = r.warnings;
    j["blocks_checked"] = r.blocks_checked;
    if (r.quality_measured) {
        const KldSummary& q = r.quality;
        j["quality"] = {{"text", r.validation_text}, {"tokens", q.n_tokens}, {"ppl_source", q.ppl_base},
                        {"ppl_result", q.ppl}, {"ppl_ratio", q.ppl_ratio}, {"mean_kld", q.mean_kld},
                        {"median_kld", q.median_kld}, {"p99_kld", q.p99_kld}, {"max_kld", q.max_kld},
                        {"same_top_token", q.same_top}};
    }
    if (r.awq) {
        nlohmann::json groups = nlohmann::json::array();
        for (const AwqGroupSummary& g : r.awq_groups)
            groups.push_back({{"input", g.input}, {"alpha", g.alpha}, {"output_error", g.error},
                              {"output_error_unscaled", g.error_unscaled}, {"output_error_clipped", g.error_clipped},
                              {"clipped_matrices", g.clipped_matrices}});
        j["awq"] = {{"groups", groups}, {"skipped", r.awq_skipped}};
    }
    nlohmann::json tensors = nlohmann::json::array();
    for (const QuantizedTensor& t : r.tensors)
        tensors.push_back({{"name", t.name}, {"source_type", t.source_type}, {"type", t.type}, {"shape", t.shape},
                           {"bytes", t.bytes}, {"fallback", t.fallback}});
    j["tensors"] = tensors;
    std::ofstream out(path, std::ios::binary);
    if (!out) return make_error("cannot write the report '" + path + "'");
    out << j.dump(1) << "\n";
    if (!out) return make_error("cannot write the report '" + path + "'");
    return {};
}

}  // namespace folio::quant
