// Which matrices share an AWQ scale, where its inverse is folded, and the
// model-wide search: group by group, each group's matrices read as F32.
#include <algorithm>
#include <unordered_map>

#include "folio/imatrix.h"
#include "quant/awq.h"
#include "quant/source_tensor.h"

namespace folio::quant {

namespace {

std::string layer_name(uint32_t layer, const char* tensor) { return "blk." + std::to_string(layer) + "." + tensor; }

void multiply_into(std::vector<float>& into, std::span<const float> s) {
    if (into.empty()) into.assign(s.size(), 1.0f);
    for (size_t i = 0; i < into.size() && i < s.size(); ++i) into[i] *= s[i];
}

}  // namespace

std::string_view awq_group_kind_name(AwqGroupKind kind) {
    switch (kind) {
        case AwqGroupKind::Qkv: return "qkv";
        case AwqGroupKind::GateUp: return "gate_up";
        case AwqGroupKind::Down: return "down";
        case AwqGroupKind::VOut: return "v_out";
    }
    return "?";
}

Result<std::vector<AwqGroupKind>> parse_awq_group_kinds(std::string_view list) {
    std::vector<AwqGroupKind> kinds;
    size_t pos = 0;
    while (pos <= list.size()) {
        const size_t end = std::min(list.find(',', pos), list.size());
        const std::string_view item = list.substr(pos, end - pos);
        bool known = false;
        for (AwqGroupKind k : {AwqGroupKind::Qkv, AwqGroupKind::GateUp, AwqGroupKind::Down, AwqGroupKind::VOut})
            if (item == awq_group_kind_name(k)) {
                kinds.push_back(k);
                known = true;
            }
        if (!known)
            return make_error("unknown AWQ group '" + std::string(item) + "'; the groups are qkv, gate_up, down, v_out");
        pos = end + 1;
    }
    return kinds;
}

std::vector<float> AwqGroup::tie(std::span<const float> per_column) const {
    std::vector<float> out(per_column.begin(), per_column.end());
    if (n_rep <= 1 || head_dim <= 0) return out;
    const int64_t group_width = n_rep * head_dim;
    for (int64_t g = 0; g + group_width <= int64_t(out.size()); g += group_width)
        for (int64_t d = 0; d < head_dim; ++d) {
            float sum = 0;
            for (int64_t h = 0; h < n_rep; ++h) sum += per_column[size_t(g + h * head_dim + d)];
            for (int64_t h = 0; h < n_rep; ++h) out[size_t(g + h * head_dim + d)] = sum / float(n_rep);
        }
    return out;
}

std::vector<float> AwqGroup::producer_scales(std::span<const float> column_scales) const {
    if (n_rep <= 1 || head_dim <= 0) return {column_scales.begin(), column_scales.end()};
    std::vector<float> rows;
    for (int64_t g = 0; g < int64_t(column_scales.size()); g += n_rep * head_dim)
        rows.insert(rows.end(), column_scales.begin() + g, column_scales.begin() + g + head_dim);
    return rows;
}

void AwqFolds::scale_columns(const std::string& tensor, std::span<const float> s) {
    multiply_into(transforms_[tensor].column_scale, s);
}

void AwqFolds::divide_rows(const std::string& tensor, std::span<const float> s) {
    multiply_into(transforms_[tensor].row_divisor, s);
}

void AwqFolds::clip(const std::string& tensor, AwqClip clip) { transforms_[tensor].clip = std::move(clip); }

Status AwqFolds::apply(const std::string& tensor, const std::vector<int64_t>& shape, std::vector<float>& values) const {
    const auto it = transforms_.find(tensor);
    if (it == transforms_.end()) return {};
    const Transform& t = it->second;
    const int64_t n_cols = shape.empty() ? 0 : shape[0];
    // A vector (a norm's weight) is one row of n_cols: its "rows" are its elements.
    const bool is_vector = shape.size() == 1;
    const int64_t n_rows = n_cols ? int64_t(values.size()) / n_cols : 0;
    if ((!t.column_scale.empty() && int64_t(t.column_scale.size()) != n_cols) ||
        (!t.row_divisor.empty() && int64_t(t.row_divisor.size()) != (is_vector ? n_cols : n_rows)) ||
        (!t.clip.choice.empty() && int64_t(t.clip.choice.size()) != n_rows * (n_cols / AwqClip::kBlock)))
        return make_error("AWQ: tensor '" + tensor + "' does not have the shape its scales were searched for");
    for (int64_t r = 0; r < n_rows; ++r) {
        float* row = values.data() + r * n_cols;
        if (!t.column_scale.empty())
            for (int64_t c = 0; c < n_cols; ++c) row[c] *= t.column_scale[size_t(c)];
        if (!is_vector) t.clip.apply(row, n_cols, r);
        if (!t.row_divisor.empty()) {
            if (is_vector)
                for (int64_t c = 0; c < n_cols; ++c) row[c] /= t.row_divisor[size_t(c)];
            else
                for (int64_t c = 0; c < n_cols; ++c) row[c] /= t.row_divisor[size_t(r)];
        }
    }
    return {};
}

void AwqFolds::adjust_importance(const std::string& tensor, std::vector<float>& importance) const {
    const auto it = transforms_.find(tensor);
    if (it == transforms_.end() || it->second.column_scale.size() != importance.size()) return;
    for (size_t c = 0; c < importance.size(); ++c) {
        const float s = it->second.column_scale[c];
        importance[c] /= s * s;
    }
}

std::vector<AwqGroup> awq_groups(const ModelDescription& model, std::vector<std::string>& skipped) {
    std::vector<AwqGroup> groups;
    const std::string& arch = model.hparams.architecture;
    // Both run a pre-norm block whose norms feed only Q K V and only gate
    // up, and a gated FFN linear in up (SwiGLU, GeGLU). Gemma 3's norms are
    // "1 + w" in Hugging Face files; read_source_tensor gives the multiplier
    // GGUF stores, which is what the scale divides.
    if (arch != "llama" && arch != "gemma3") {
        skipped.push_back("architecture '" + arch + "': no AWQ groups are known for it; quantized without AWQ");
        return groups;
    }
    auto has = [&](const std::string& name) { return model.find_tensor(name) != nullptr; };
    const int64_t n_head = model.hparams.n_head, n_head_kv = model.hparams.n_head_kv;
    const int64_t head_dim = model.hparams.head_dim ? model.hparams.head_dim : (n_head ? model.hparams.n_embd / n_head : 0);
    for (uint32_t l = 0; l < model.hparams.n_layer; ++l) {
        const std::string q = layer_name(l, "attn_q.weight"), k = layer_name(l, "attn_k.weight"),
                          v = layer_name(l, "attn_v.weight"), gate = layer_name(l, "ffn_gate.weight"),
                          up = layer_name(l, "ffn_up.weight"), down = layer_name(l, "ffn_down.weight"),
                          attn_norm = layer_name(l, "attn_norm.weight"), ffn_norm = layer_name(l, "ffn_norm.weight");
        const std::string out = layer_name(l, "attn_output.weight"), v_bias = layer_name(l, "attn_v.bias");
        if (has(q) && has(k) && has(v) && has(attn_norm))
            groups.push_back({AwqGroupKind::Qkv, q, {q, k, v}, attn_norm, {}});
        else
            skipped.push_back("layer " + std::to_string(l) + ": no attn_norm -> Q K V group (fused or missing tensors)");
        if (has(gate) && has(up) && has(ffn_norm))
            groups.push_back({AwqGroupKind::GateUp, gate, {gate, up}, ffn_norm, {}});
        else
            skipped.push_back("layer " + std::to_string(l) + ": no ffn_norm -> gate up group");
        if (has(up) && has(down) && has(gate))
            groups.push_back({AwqGroupKind::Down, down, {down}, up, {}});
        else
            skipped.push_back("layer " + std::to_string(l) + ": no ffn_up -> ffn_down group (not a gated FFN)");
        if (has(v) && has(out) && n_head > 0 && n_head_kv > 0 && n_head % n_head_kv == 0 && head_dim > 0) {
            AwqGroup g{AwqGroupKind::VOut, out, {out}, v, {}};
            if (has(v_bias)) g.producer_biases = {v_bias};
            g.head_dim = head_dim;
            g.n_rep = n_head / n_head_kv;
            groups.push_back(std::move(g));
        } else {
            skipped.push_back("layer " + std::to_string(l) + ": no attn_v -> attn_output group");
        }
    }
    return groups;
}

Result<AwqOutcome> search_awq(const ModelDescription& model, const std::vector<TensorPlan>& plan,
                              const ImportanceMatrix& imatrix, const ActivationStats& stats,
                              const AwqOptions& options, cpu::ThreadPool& pool, const std::atomic<bool>* cancel,
                              const std::function<void(size_t group, size_t n_groups)>& on_group) {
    AwqOutcome outcome;
    std::vector<AwqGroup> groups;
    for (AwqGroup& g : awq_groups(model, outcome.skipped))
        if (std::find(options.kinds.begin(), options.kinds.end(), g.kind) != options.kinds.end()) groups.push_back(std::move(g));
    std::unordered_map<std::string, const TensorPlan*> planned;
    for (const TensorPlan& t : plan) planned[t.name] = &t;
    for (size_t g = 0; g < groups.size(); ++g) {
        if (cancel && cancel->load(std::memory_order_relaxed)) return make_error("AWQ search cancelled");
        const AwqGroup& group = groups[g];
        const auto input = stats.inputs.find(group.input);
        if (input == stats.inputs.end() || input->second.n_rows() == 0)
            return make_error("AWQ: no calibration activations reached '" + group.input + "'");
        const ActivationSample& sample = input->second;
        std::vector<std::vector<float>> weights(group.members.size()), importance(group.members.size());
        std::vector<AwqMember> members;
        for (size_t i = 0; i < group.members.size(); ++i) {
            const std::string& name = group.members[i];
            const TensorView* src = model.find_tensor(name);
            const auto p = planned.find(name);
            if (!src || p == planned.end() || src->shape.size() != 2)
                return make_error("AWQ: tensor '" + name + "' is not a planned matrix");
            if (src->shape[0] != sample.n_columns())
                return make_error("AWQ: tensor '" + name + "' has " + std::to_string(src->shape[0]) +
                                  " columns, its sampled input " + std::to_string(sample.n_columns()));
            if (Status s = read_source_tensor(model, *src, weights[i]); !s) return s.error();
            if (p->second->quantized) {
                auto w = imatrix.weights_for(name, src->shape[0]);
                if (!w) return w.error();
                importance[i] = std::move(*w);
            }
            members.push_back({name, p->second->type, src->shape[0], src->shape[1], weights[i], importance[i]});
        }
        const std::vector<float> mean_abs = group.tie(sample.mean_abs());
        auto found = search_awq_scales(members, mean_abs, sample.rows, sample.n_rows(), options, pool);
        if (!found) return found.error();
        AwqGroupReport report{group.input, found->alpha, found->error, found->error_unscaled, found->error, 0};
        if (options.clip)
            for (size_t i = 0; i < members.size(); ++i) {
                auto clipped = search_awq_clip(members[i], found->scales, sample.rows, sample.n_rows(), options.clip_ratios, pool);
                if (!clipped) return clipped.error();
                report.error_clipped += clipped->error - clipped->error_unclipped;
                if (clipped->clip.clips()) {
                    outcome.folds.clip(members[i].name, std::move(clipped->clip));
                    ++report.clipped_matrices;
                }
            }
        outcome.groups.push_back(report);
        if (found->alpha > 0) {
            for (const std::string& name : group.members) outcome.folds.scale_columns(name, found->scales);
            const std::vector<float> rows = group.producer_scales(found->scales);
            outcome.folds.divide_rows(group.producer, rows);
            for (const std::string& bias : group.producer_biases) outcome.folds.divide_rows(bias, rows);
        }
        if (on_group) on_group(g + 1, groups.size());
    }
    return outcome;
}

}  // namespace folio::quant
