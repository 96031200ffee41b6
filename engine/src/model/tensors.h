// Binding an architecture's tensors by name, with the shape checks and
// messages every architecture needs.
#pragma once

#include <string>
#include <vector>

#include "folio/error.h"
#include "folio/model.h"
#include "model/ops.h"

namespace folio::model {

class TensorBinder {
public:
    explicit TensorBinder(const ModelDescription& model) : model_(model) {}

    // A [in_features, out_features] matrix (GGML order) named `name`.
    Result<Weight> matrix(const std::string& name, int64_t in_features, int64_t out_features) const;
    // An RMSNorm weight of n elements as floats, hparams.norm_weight_offset added.
    Result<std::vector<float>> norm(const std::string& name, int64_t n) const;
    // An optional F32 bias of n elements (empty when the model has none).
    Result<std::vector<float>> optional_vector(const std::string& name, int64_t n) const;
    bool has(const std::string& name) const { return model_.find_tensor(name) != nullptr; }

    // What every architecture binds around its layers: the token embedding,
    // the output head (the embedding itself where the file has no
    // output.weight: tied) and the final norm.
    struct Ends {
        Weight token_embd, output;
        std::vector<float> output_norm;
    };
    Result<Ends> ends(int64_t n_embd, int64_t n_vocab) const;

private:
    Result<std::vector<float>> floats(const TensorView& t, int64_t n) const;
    const ModelDescription& model_;
};

// "blk.<layer>.<suffix>"
std::string layer_tensor(int layer, const char* suffix);

}  // namespace folio::model
