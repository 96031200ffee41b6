// AWQ (activation-aware weight quantization, Lin et al. 2023) on top of the
// GGUF block quantizers. A few input channels carry most of the activation
// magnitude; scaling those columns of a matrix up by s (and its input down by
// s) gives them a finer effective grid without changing the product in full
// precision. Per group of matrices that read one input:
//
//   s = mean|x|^alpha, normalised so that sqrt(max s * min s) = 1,
//   alpha on a grid in [0, 1): the one whose quantized group has the least
//   output error  sum_W || (Q(W diag(s)) diag(1/s) - W) x ||^2
//   over the sampled calibration rows x, each W quantized with the block
//   quantizer the recipe picks for it (quantize_row, with the imatrix
//   weights the scaled input has: imatrix[c] / s[c]^2).
//
// The 1/s is folded into what produces the input, so the file stays a plain
// GGUF: attn_norm -> Q K V and ffn_norm -> gate up (the norm's weight
// divided by s), ffn_up -> ffn_down (up's rows divided: the gated product is
// linear in up). alpha = 0 (no scaling) is on the grid, so a group never
// gets a larger error on its sample than plain quantization.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "cpu/thread_pool.h"
#include "folio/error.h"
#include "folio/imatrix.h"
#include "folio/model.h"
#include "folio/quant_recipe.h"
#include "folio/quantize_job.h"
#include "folio/tensor_type.h"

namespace folio::quant {

// Which input a group rescales, and where its 1/s goes.
enum class AwqGroupKind {
    Qkv,     // attn_norm -> Q K V: the norm's weight
    GateUp,  // ffn_norm -> gate up: the norm's weight
    Down,    // ffn_up -> ffn_down: up's rows (the gated product is linear in up)
    VOut,    // attn_v -> attn_output: V's rows (attention is linear in V; with
             // grouped-query attention the heads that read one V row share its scale)
};
// "qkv", "gate_up", "down", "v_out"
std::string_view awq_group_kind_name(AwqGroupKind kind);
// A comma-separated list of those names -> the kinds; an Error naming a wrong one.
Result<std::vector<AwqGroupKind>> parse_awq_group_kinds(std::string_view list);

struct AwqOptions {
    int grid = 20;  // alpha in {0, 1/grid, ..., (grid - 1)/grid}
    // The clip search after the scales (search_awq_clip): off unless asked.
    bool clip = false;
    std::vector<float> clip_ratios = {1.0f, 0.95f, 0.9f, 0.85f, 0.8f, 0.75f};
    std::vector<AwqGroupKind> kinds = {AwqGroupKind::Qkv, AwqGroupKind::GateUp, AwqGroupKind::Down, AwqGroupKind::VOut};
};

// One matrix of a group as the search sees it.
struct AwqMember {
    std::string name;
    TensorType type = TensorType::Q4_K;  // the recipe's type for it
    int64_t n_in = 0, n_out = 0;
    std::span<const float> weights;      // n_out rows of n_in, GGUF conventions
    std::span<const float> importance;   // the imatrix's mean x^2 per column, or empty
};

struct AwqSearchResult {
    float alpha = 0;
    std::vector<float> scales;       // per input column (all 1 at alpha 0)
    double error = 0;                // output error at alpha
    double error_unscaled = 0;       // at alpha 0
};

// Range limits per (row, block of 32 columns) of one matrix: after the
// column scales, a block's values are clamped to +-ratio x its largest |value|.
struct AwqClip {
    static constexpr int64_t kBlock = 32;
    std::vector<float> ratios;    // the grid
    std::vector<uint8_t> choice;  // per row and block, an index into ratios; empty: `uniform` everywhere
    float uniform = 1.0f;

    bool clips() const;
    void apply(float* row, int64_t n_in, int64_t row_index) const;
};

// Q(W diag(s) clipped) diag(1/s) - W for one matrix, on the pool.
Status awq_quantization_delta(const AwqMember& m, std::span<const float> scales, const AwqClip& clip,
                              std::vector<float>& delta, cpu::ThreadPool& pool);

// The clip search for one matrix whose scales are chosen: each uniform
// ratio of the grid is tried, every (row, block) keeps the ratio with the
// least error of its own contribution (its 32 x 32 block of the sample's
// Gram matrix); the whole choice is kept only if the matrix's output error
// (as awq_output_error measures it) is then lower than unclipped.
struct AwqClipResult {
    AwqClip clip;            // choice empty when clipping did not pay
    double error = 0;        // output error with `clip`
    double error_unclipped = 0;
};
Result<AwqClipResult> search_awq_clip(const AwqMember& m, std::span<const float> scales, std::span<const float> samples,
                                      int64_t n_samples, std::span<const float> ratios, cpu::ThreadPool& pool);

// The output error of a group quantized with its input columns scaled by
// `scales`, over the n_samples rows of `samples` (n_in values each).
Result<double> awq_output_error(std::span<const AwqMember> members, std::span<const float> scales,
                                std::span<const float> samples, int64_t n_samples, cpu::ThreadPool& pool);

// The scales for mean |x| `mean_abs` at exponent alpha (normalised).
std::vector<float> awq_scales(std::span<const float> mean_abs, float alpha);

// The alpha search for one group.
Result<AwqSearchResult> search_awq_scales(std::span<const AwqMember> members, std::span<const float> mean_abs,
                                          std::span<const float> samples, int64_t n_samples,
                                          const AwqOptions& options, cpu::ThreadPool& pool);

// A group of matrices that read one input, and what produces that input.
struct AwqGroup {
    AwqGroupKind kind = AwqGroupKind::Qkv;
    std::string input;                 // the ActivationStats key (its first member)
    std::vector<std::string> members;  // their columns are multiplied by s
    std::string producer;              // a norm vector, or a matrix whose rows are divided by s
    std::vector<std::string> producer_biases;  // divided with the producer's rows (Qwen2's attn_v.bias)
    int64_t head_dim = 0, n_rep = 1;   // VOut: n_rep query heads of head_dim columns read one V head

    // Per input column values made equal over the columns that one producer
    // row feeds (their mean), so that the fold stays exact.
    std::vector<float> tie(std::span<const float> per_column) const;
    // The producer's row divisors for tied column scales.
    std::vector<float> producer_scales(std::span<const float> column_scales) const;
};

// The groups of `model`'s architecture whose folding is exact, layer by
// layer; what could not be folded is described in `skipped`.
std::vector<AwqGroup> awq_groups(const ModelDescription& model, std::vector<std::string>& skipped);

// The folded scales of a whole model: per tensor, its columns multiplied by
// one vector and its rows (a vector's elements) divided by another.
class AwqFolds {
public:
    void scale_columns(const std::string& tensor, std::span<const float> s);
    void divide_rows(const std::string& tensor, std::span<const float> s);
    void clip(const std::string& tensor, AwqClip clip);
    bool touches(const std::string& tensor) const { return transforms_.count(tensor) != 0; }
    bool empty() const { return transforms_.empty(); }
    size_t size() const { return transforms_.size(); }

    // Applies the tensor's transform to its F32 values (shape in GGML order:
    // shape[0] columns); an Error when the shape does not fit the scales.
    Status apply(const std::string& tensor, const std::vector<int64_t>& shape, std::vector<float>& values) const;
    // The imatrix weights of a tensor whose columns were scaled by s: w[c] / s[c]^2.
    void adjust_importance(const std::string& tensor, std::vector<float>& importance) const;

private:
    struct Transform {
        std::vector<float> column_scale;
        std::vector<float> row_divisor;
        AwqClip clip;  // after the column scales (a row's divisor does not change what it clips)
    };
    std::map<std::string, Transform> transforms_;
};

using AwqGroupReport = AwqGroupSummary;  // folio/quantize_job.h

struct AwqOutcome {
    AwqFolds folds;
    std::vector<AwqGroupReport> groups;
    std::vector<std::string> skipped;
};

// Searches every group of the model on the collected activations; the plan
// gives each member's type. Reads each group's matrices as F32 (held: the
// group's matrices and one error matrix, plus the sample).
Result<AwqOutcome> search_awq(const ModelDescription& model, const std::vector<TensorPlan>& plan,
                              const ImportanceMatrix& imatrix, const ActivationStats& stats,
                              const AwqOptions& options, cpu::ThreadPool& pool, const std::atomic<bool>* cancel,
                              const std::function<void(size_t group, size_t n_groups)>& on_group);

}  // namespace folio::quant
