#include "model/architecture.h"

#include "folio/backend.h"

namespace folio::model {
namespace {

struct ArchitectureEntry {
    const char* name;
    Result<std::unique_ptr<Architecture>> (*create)(const ModelDescription&);
};

// GGUF general.architecture names. Mistral, SmolLM and TinyLlama files say
// "llama"; Qwen2 is the llama block with Q/K/V biases.
constexpr ArchitectureEntry kArchitectures[] = {
    {"llama", create_llama},
    {"mistral", create_llama},
    {"qwen2", create_llama},
    {"gemma3", create_gemma3},
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

}  // namespace folio
