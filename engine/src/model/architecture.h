// A model architecture: its tensors, bound by name from a ModelDescription,
// and its forward pass written with Ops. One architecture, one file
// (llama.cpp, gemma3.cpp); create_architecture() picks by
// hparams.architecture.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "folio/batch.h"
#include "folio/error.h"
#include "folio/model.h"
#include "model/ops.h"

namespace folio::model {

// What a backend must allocate for the KV cache.
struct KvShape {
    int n_layer = 0;
    int n_head_kv = 0;
    int head_dim = 0;
};

class Architecture {
public:
    virtual ~Architecture() = default;

    // Runs batch through the model; logits gets batch.logits_rows.size() rows of n_vocab.
    virtual Status forward(Ops& ops, const Batch& batch, std::span<float> logits) = 0;

    virtual KvShape kv_shape() const = 0;
    virtual int32_t n_vocab() const = 0;
    // Every matrix the forward pass multiplies with, so a backend can check
    // it has kernels for their types before the first step.
    virtual std::vector<Weight> matrices() const = 0;
};

// The architecture of `model`, with its tensors bound and checked; an Error
// naming the architecture (or the missing / mis-shaped tensor) otherwise.
Result<std::unique_ptr<Architecture>> create_architecture(const ModelDescription& model);

Result<std::unique_ptr<Architecture>> create_llama(const ModelDescription& model);
Result<std::unique_ptr<Architecture>> create_gemma3(const ModelDescription& model);

}  // namespace folio::model

// Returns the Status of `expr` from the enclosing function when it failed.
#define FOLIO_RETURN_IF_ERROR(expr)              \
    do {                                         \
        if (::folio::Status status_ = (expr); !status_) return status_; \
    } while (0)
