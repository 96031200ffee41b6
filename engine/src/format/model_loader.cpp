// load_model_description(): one entry point for both model forms, chosen by
// what the path is (a folder, or a file that starts with the GGUF magic); and
// the ModelDescription queries that do not depend on the form.
#include <array>
#include <filesystem>
#include <fstream>

#include "folio/model.h"
#include "format/gguf_model.h"
#include "format/hf_model.h"

namespace folio {

const TensorView* ModelDescription::find_tensor(std::string_view tensor_name) const {
    for (const TensorView& t : tensors)
        if (t.name == tensor_name) return &t;
    return nullptr;
}

uint64_t ModelDescription::weight_bytes() const {
    uint64_t total = 0;
    for (const TensorView& t : tensors) total += t.nbytes;
    return total;
}

uint64_t ModelDescription::active_weight_bytes() const {
    uint64_t total = 0;
    for (const TensorView& t : tensors) {
        const bool experts = hparams.n_expert > 0 && t.shape.size() == 3 && t.shape[2] == hparams.n_expert &&
                             t.name.find("_exps.") != std::string::npos;
        // An untied embedding table is read one row a token.
        const bool embedding_rows = !hparams.tied_embeddings && t.name == "token_embd.weight" && hparams.n_vocab > 0;
        total += experts          ? t.nbytes / hparams.n_expert * hparams.n_expert_used
                 : embedding_rows ? t.nbytes / hparams.n_vocab
                                  : t.nbytes;
    }
    return total;
}

// An upper bound: every layer keeps K and V for every token. Gemma 3's
// sliding-window layers could drop tokens older than the window (5 of every
// 6 layers hold at most `sliding_window` tokens), but a paged cache sized by
// this bound is always large enough, so the simple rule is kept.
uint64_t ModelDescription::kv_bytes_per_token(uint32_t element_bytes) const {
    return 2ull * hparams.n_layer * hparams.n_head_kv * hparams.head_dim * element_bytes;
}

Result<ModelDescription> load_model_description(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status)) return make_error("'" + path + "' does not exist");
    const std::string neither =
        "'" + path + "' is neither a GGUF file nor a Hugging Face model folder (no config.json)";

    if (fs::is_directory(status)) {
        if (!fs::is_regular_file(fs::path(path) / "config.json", ec)) return make_error(neither);
        return load_hf_folder_model(path);
    }
    if (!fs::is_regular_file(status)) return make_error(neither);

    std::array<char, 4> magic{};
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error("cannot open '" + path + "'");
    in.read(magic.data(), magic.size());
    if (in.gcount() != static_cast<std::streamsize>(magic.size()) || std::string_view(magic.data(), 4) != "GGUF")
        return make_error(neither);
    return load_gguf_model(path);
}

}  // namespace folio
