#include "model/tensors.h"

#include "folio/dequant.h"

namespace folio::model {

std::string layer_tensor(int layer, const char* suffix) { return "blk." + std::to_string(layer) + "." + suffix; }

Result<Weight> TensorBinder::matrix(const std::string& name, int64_t in_features, int64_t out_features) const {
    const TensorView* t = model_.find_tensor(name);
    if (!t) return make_error("model '" + model_.name + "': tensor '" + name + "' is missing");
    if (t->shape.size() != 2 || t->shape[0] != in_features || t->shape[1] != out_features)
        return make_error("model '" + model_.name + "': tensor '" + name + "' should be [" +
                          std::to_string(in_features) + ", " + std::to_string(out_features) + "]");
    return Weight{t->type, t->data, in_features, out_features};
}

Result<std::vector<float>> TensorBinder::floats(const TensorView& t, int64_t n) const {
    if (t.n_elements() != n)
        return make_error("model '" + model_.name + "': tensor '" + t.name + "' should have " + std::to_string(n) +
                          " elements");
    std::vector<float> out(static_cast<size_t>(n));
    if (Status s = dequantize(t.type, t.data, t.nbytes, out.data(), n); !s)
        return make_error("model '" + model_.name + "': tensor '" + t.name + "': " + s.error().message);
    return out;
}

Result<std::vector<float>> TensorBinder::norm(const std::string& name, int64_t n) const {
    const TensorView* t = model_.find_tensor(name);
    if (!t) return make_error("model '" + model_.name + "': tensor '" + name + "' is missing");
    auto w = floats(*t, n);
    if (!w) return w;
    for (float& x : *w) x += model_.hparams.norm_weight_offset;
    return w;
}

Result<std::vector<float>> TensorBinder::optional_vector(const std::string& name, int64_t n) const {
    const TensorView* t = model_.find_tensor(name);
    if (!t) return std::vector<float>{};
    return floats(*t, n);
}

Result<TensorBinder::Ends> TensorBinder::ends(int64_t n_embd, int64_t n_vocab) const {
    Ends e;
    auto embd = matrix("token_embd.weight", n_embd, n_vocab);
    if (!embd) return embd.error();
    e.token_embd = e.output = *embd;
    if (has("output.weight")) {
        auto out = matrix("output.weight", n_embd, n_vocab);
        if (!out) return out.error();
        e.output = *out;
    }
    auto norm_w = norm("output_norm.weight", n_embd);
    if (!norm_w) return norm_w.error();
    e.output_norm = std::move(*norm_w);
    return e;
}

}  // namespace folio::model
