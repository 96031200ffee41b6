// read_source_tensor(): dequantize, convert, release the pages.
#include "quant/source_tensor.h"

#ifndef _WIN32
#include <sys/mman.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cstring>

#include "folio/dequant.h"

namespace folio::quant {

namespace {

bool is_hf_llama_qk(const ModelDescription& model, const std::string& name) {
    if (model.format != SourceFormat::HuggingFaceFolder || model.hparams.rope_style != RopeStyle::SplitHalf) return false;
    if (model.hparams.architecture != "llama") return false;
    return name.find(".attn_q.weight") != std::string::npos || name.find(".attn_k.weight") != std::string::npos;
}

bool is_offset_norm(const ModelDescription& model, const std::string& name) {
    return model.hparams.norm_weight_offset != 0.0f && name.find("_norm.weight") != std::string::npos;
}

// Rows of each head from (i, i + d/2) pairing to (2i, 2i + 1) pairing:
// new row 2i + j of a head is old row j * d/2 + i.
void interleave_head_rows(std::vector<float>& w, int64_t n_in, int64_t n_out, int64_t n_heads) {
    const int64_t head_dim = n_out / n_heads, half = head_dim / 2;
    std::vector<float> head(size_t(head_dim * n_in));
    for (int64_t h = 0; h < n_heads; ++h) {
        float* base = w.data() + h * head_dim * n_in;
        std::copy(base, base + head_dim * n_in, head.begin());
        for (int64_t i = 0; i < half; ++i)
            for (int64_t j = 0; j < 2; ++j)
                std::memcpy(base + (2 * i + j) * n_in, head.data() + (j * half + i) * n_in, size_t(n_in) * sizeof(float));
    }
}


}  // namespace

void release_pages(const std::byte* data, uint64_t nbytes) {
#ifdef _WIN32
    // Windows trims a read-only file view's clean pages from the working set
    // under pressure by itself; there is no madvise to ask sooner.
    (void)data;
    (void)nbytes;
#else
    const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (uintptr_t(data) + page - 1) / page * page;  // whole pages inside the tensor only
    const uintptr_t end = (uintptr_t(data) + nbytes) / page * page;
    if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
#endif
}

bool source_tensor_is_converted(const ModelDescription& model, const TensorView& t) {
    return is_hf_llama_qk(model, t.name) || is_offset_norm(model, t.name);
}

Status read_source_tensor(const ModelDescription& model, const TensorView& t, std::vector<float>& out) {
    out.resize(size_t(t.n_elements()));
    if (Status s = dequantize(t.type, t.data, t.nbytes, out.data(), t.n_elements()); !s)
        return make_error("tensor '" + t.name + "': " + s.error().message);
    if (!model.random_weights) release_pages(t.data, t.nbytes);
    if (is_hf_llama_qk(model, t.name)) {
        const bool is_q = t.name.find(".attn_q.") != std::string::npos;
        const int64_t heads = is_q ? model.hparams.n_head : model.hparams.n_head_kv;
        if (t.shape.size() != 2 || heads <= 0 || t.shape[1] % (2 * heads) != 0)
            return make_error("tensor '" + t.name + "' cannot be split into " + std::to_string(heads) + " heads");
        interleave_head_rows(out, t.shape[0], t.shape[1], heads);
    }
    if (is_offset_norm(model, t.name))
        for (float& v : out) v += model.hparams.norm_weight_offset;
    return {};
}

}  // namespace folio::quant
