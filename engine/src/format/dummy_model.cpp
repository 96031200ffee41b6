// Dummy models (--load-format dummy): the shape of a known model, random
// weights of the asked type. Quantized blocks get random quants and block
// scales chosen so that weights come out near 1/sqrt(fan-in), as in a
// trained layer; F32 / F16 / BF16 weights are uniform in that range.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "folio/dequant.h"
#include "folio/model.h"

namespace folio {
namespace {

struct Shape {
    const char* name;
    const char* architecture;
    uint32_t n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_ctx;
    float rope_base;
    bool tied;
    uint32_t n_expert = 0, n_expert_used = 0;  // a mixture of experts of n_ff each (qwen3moe)
};

// Llama 3 8B / 3.1 8B (the same block, a 128k context; its RoPE factors left
// out) / 3.2 1B, Qwen3 8B, Qwen3 30B-A3B (128 experts of 768, 8 a token),
// SmolLM2 135M and Gemma 3 270M as their configs give them; the tiny ones
// for tests.
constexpr Shape kShapes[] = {
    {"llama-3-8b", "llama", 128256, 4096, 32, 32, 8, 128, 14336, 8192, 500000.0f, false},
    {"llama-3.1-8b", "llama", 128256, 4096, 32, 32, 8, 128, 14336, 131072, 500000.0f, false},
    {"llama-3.2-1b", "llama", 128256, 2048, 16, 32, 8, 64, 8192, 131072, 500000.0f, true},
    {"qwen3-8b", "qwen3", 151936, 4096, 36, 32, 8, 128, 12288, 40960, 1000000.0f, false},
    {"qwen3-30b-a3b", "qwen3moe", 151936, 2048, 48, 32, 4, 128, 768, 40960, 1000000.0f, false, 128, 8},
    {"smollm2-135m", "llama", 49152, 576, 30, 9, 3, 64, 1536, 8192, 100000.0f, true},
    {"gemma-3-270m", "gemma3", 262144, 640, 18, 4, 1, 256, 2048, 32768, 1000000.0f, true},
    {"tiny-llama", "llama", 512, 256, 2, 4, 2, 64, 512, 2048, 10000.0f, false},
    {"tiny-gemma3", "gemma3", 512, 256, 7, 2, 1, 128, 512, 2048, 1000000.0f, true},
    {"tiny-qwen3moe", "qwen3moe", 512, 256, 2, 4, 2, 64, 256, 2048, 1000000.0f, false, 8, 2},
};

// splitmix64: a counter-based generator, so any tensor can be generated alone.
uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

class Random {
public:
    explicit Random(uint64_t seed) : state_(mix(seed)) {}
    uint64_t next() { return mix(state_++); }
    float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f; }  // [-1, 1)

private:
    uint64_t state_;
};

void put_half(std::byte* p, float v) {
    const uint16_t h = fp32_to_fp16(v);
    std::memcpy(p, &h, 2);
}

// Where a block keeps its scales, and what they are for weights of magnitude s.
void fill_block(TensorType type, std::byte* b, float s, Random& rng) {
    const size_t bytes = traits(type).block_bytes;
    for (size_t i = 0; i < bytes; i += 8) {
        const uint64_t r = rng.next();
        std::memcpy(b + i, &r, std::min<size_t>(8, bytes - i));
    }
    switch (type) {
        case TensorType::Q4_0: put_half(b, s / 4); break;                        // d (q - 8)
        case TensorType::Q5_0: put_half(b, s / 8); break;                        // d (q - 16)
        case TensorType::Q8_0: put_half(b, s / 64); break;                       // d q
        case TensorType::Q4_1: put_half(b, s / 4), put_half(b + 2, -1.875f * s); break;  // d q + m
        case TensorType::Q5_1: put_half(b, s / 8), put_half(b + 2, -1.9375f * s); break;
        case TensorType::Q4_K: put_half(b, s / 128), put_half(b + 2, 7.5f * s / 128); break;  // d sc q - dmin m
        case TensorType::Q5_K: put_half(b, s / 256), put_half(b + 2, 15.5f * s / 256); break;
        case TensorType::Q6_K: put_half(b + 208, s / 1024); break;               // d sc (q - 32)
        default: break;
    }
}

void fill_tensor(const TensorView& t, std::byte* out, uint64_t seed) {
    Random rng(seed);
    const int64_t n = t.n_elements();
    if (t.type == TensorType::F32 && t.shape.size() == 1) {  // norm weights: 1 with a little noise
        auto* f = reinterpret_cast<float*>(out);
        for (int64_t i = 0; i < n; ++i) f[i] = 1.0f + 0.05f * rng.uniform();
        return;
    }
    const float s = 1.0f / std::sqrt(static_cast<float>(t.shape[0]));
    switch (t.type) {
        case TensorType::F32:
            for (int64_t i = 0; i < n; ++i) reinterpret_cast<float*>(out)[i] = s * rng.uniform();
            return;
        case TensorType::F16:
            for (int64_t i = 0; i < n; ++i) put_half(out + 2 * i, s * rng.uniform());
            return;
        case TensorType::BF16:
            for (int64_t i = 0; i < n; ++i) {
                const float v = s * rng.uniform();
                uint32_t bits;
                std::memcpy(&bits, &v, 4);
                const auto top = static_cast<uint16_t>(bits >> 16);  // truncation: fine for random values
                std::memcpy(out + 2 * i, &top, 2);
            }
            return;
        default: {
            const TensorTypeTraits tt = traits(t.type);
            for (int64_t b = 0; b < n / tt.block_elems; ++b) fill_block(t.type, out + b * tt.block_bytes, s, rng);
        }
    }
}

}  // namespace

TokenizerSpec byte_vocabulary(uint32_t n_vocab) {
    TokenizerSpec spec;
    spec.model = TokenizerModel::SentencePiece;
    spec.pre = "default";
    spec.tokens = {"<unk>", "<s>", "</s>"};
    spec.kinds = {TokenKind::Unknown, TokenKind::Control, TokenKind::Control};
    char name[16];
    for (int b = 0; b < 256; ++b) {
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        spec.tokens.emplace_back(name);
        spec.kinds.push_back(TokenKind::Byte);
    }
    for (uint32_t i = static_cast<uint32_t>(spec.tokens.size()); i < n_vocab; ++i) {
        spec.tokens.push_back("<unused" + std::to_string(i) + ">");
        spec.kinds.push_back(TokenKind::Unused);
    }
    spec.scores.assign(spec.tokens.size(), 0.0f);
    spec.unk_id = 0;
    spec.bos_id = 1;
    spec.eos_id = 2;
    spec.add_bos = true;
    return spec;
}

std::string dummy_model_shapes() {
    std::string out;
    for (const Shape& s : kShapes) out += std::string(out.empty() ? "" : ", ") + s.name;
    return out;
}

Result<ModelDescription> make_dummy_model(const DummyModelOptions& options) {
    const Shape* shape = nullptr;
    for (const Shape& s : kShapes)
        if (options.shape == s.name) shape = &s;
    if (!shape) return make_error("unknown dummy model shape '" + options.shape + "' (" + dummy_model_shapes() + ")");
    const TensorTypeTraits tt = traits(options.type);
    const bool gemma = std::strcmp(shape->architecture, "gemma3") == 0;
    const bool qk_norm = gemma || std::strncmp(shape->architecture, "qwen3", 5) == 0;
    const bool moe = shape->n_expert > 0;

    ModelDescription m;
    m.path = "dummy:" + options.shape;
    m.name = options.shape + " (dummy, " + std::string(tt.name) + ")";
    HParams& hp = m.hparams;
    hp.architecture = shape->architecture;
    hp.n_vocab = shape->n_vocab;
    hp.n_ctx_train = shape->n_ctx;
    hp.n_embd = shape->n_embd;
    hp.n_layer = shape->n_layer;
    hp.n_head = shape->n_head;
    hp.n_head_kv = shape->n_head_kv;
    hp.head_dim = shape->head_dim;
    hp.n_ff = shape->n_ff;
    hp.rope_freq_base = shape->rope_base;
    hp.tied_embeddings = shape->tied;
    if (moe) {
        hp.n_expert = shape->n_expert;
        hp.n_expert_used = shape->n_expert_used;
        hp.n_ff_expert = shape->n_ff;
    }
    if (qk_norm && !gemma) hp.rms_norm_eps = 1e-6f;
    if (gemma) {
        hp.rms_norm_eps = 1e-6f;
        hp.rope_freq_base_swa = 10000.0f;
        hp.rope_style = RopeStyle::SplitHalf;
        hp.sliding_window = 512;
        hp.sliding_window_pattern = 6;
        hp.query_pre_attn_scalar = static_cast<float>(shape->head_dim);
    }

    const int64_t embd = shape->n_embd, q_dim = int64_t{shape->n_head} * shape->head_dim,
                  kv_dim = int64_t{shape->n_head_kv} * shape->head_dim, ff = shape->n_ff;
    for (int64_t cols : {embd, q_dim, ff})
        if (cols % tt.block_elems != 0)
            return make_error("dummy " + options.shape + ": " + std::string(tt.name) + " needs rows of whole " +
                              std::to_string(tt.block_elems) + "-element blocks, and " + std::to_string(cols) +
                              " is not; choose another type");
    auto add = [&](std::string name, TensorType type, std::vector<int64_t> dims) {
        TensorView t;
        t.name = std::move(name);
        t.type = type;
        t.shape = std::move(dims);
        const TensorTypeTraits x = traits(type);
        t.nbytes = static_cast<uint64_t>(t.n_elements() / x.block_elems) * x.block_bytes;
        m.tensors.push_back(std::move(t));
    };
    add("token_embd.weight", options.type, {embd, shape->n_vocab});
    add("output_norm.weight", TensorType::F32, {embd});
    if (!shape->tied) add("output.weight", options.type, {embd, shape->n_vocab});
    for (uint32_t l = 0; l < shape->n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        add(p + "attn_norm.weight", TensorType::F32, {embd});
        add(p + "attn_q.weight", options.type, {embd, q_dim});
        add(p + "attn_k.weight", options.type, {embd, kv_dim});
        add(p + "attn_v.weight", options.type, {embd, kv_dim});
        add(p + "attn_output.weight", options.type, {q_dim, embd});
        add(p + "ffn_norm.weight", TensorType::F32, {embd});
        if (moe) {  // the router in F32, as llama.cpp's quantized files keep it
            const int64_t experts = shape->n_expert;
            add(p + "ffn_gate_inp.weight", TensorType::F32, {embd, experts});
            add(p + "ffn_gate_exps.weight", options.type, {embd, ff, experts});
            add(p + "ffn_up_exps.weight", options.type, {embd, ff, experts});
            add(p + "ffn_down_exps.weight", options.type, {ff, embd, experts});
        } else {
            add(p + "ffn_gate.weight", options.type, {embd, ff});
            add(p + "ffn_up.weight", options.type, {embd, ff});
            add(p + "ffn_down.weight", options.type, {ff, embd});
        }
        if (qk_norm) {
            add(p + "attn_q_norm.weight", TensorType::F32, {int64_t{shape->head_dim}});
            add(p + "attn_k_norm.weight", TensorType::F32, {int64_t{shape->head_dim}});
        }
        if (gemma) {
            add(p + "post_attention_norm.weight", TensorType::F32, {embd});
            add(p + "post_ffw_norm.weight", TensorType::F32, {embd});
        }
    }

    // Norm vectors are always generated here (the architecture reads them on
    // the host); matrices only when on_host, else reserved address space.
    size_t vector_bytes = 0, matrix_bytes = 0;
    for (const TensorView& t : m.tensors) (t.shape.size() == 1 ? vector_bytes : matrix_bytes) += (t.nbytes + 63) / 64 * 64;
    auto vectors = MappedFile::anonymous(m.path + " (norms)", vector_bytes, [&](std::byte* base) {
        size_t at = 0;
        for (size_t i = 0; i < m.tensors.size(); ++i) {
            if (m.tensors[i].shape.size() != 1) continue;
            fill_tensor(m.tensors[i], base + at, options.seed * 1000003 + i);
            at += (m.tensors[i].nbytes + 63) / 64 * 64;
        }
    });
    if (!vectors) return vectors.error();
    std::function<void(std::byte*)> fill_matrices;
    if (options.on_host)
        fill_matrices = [&](std::byte* base) {
            size_t at = 0;
            for (size_t i = 0; i < m.tensors.size(); ++i) {
                if (m.tensors[i].shape.size() == 1) continue;
                fill_tensor(m.tensors[i], base + at, options.seed * 1000003 + i);
                at += (m.tensors[i].nbytes + 63) / 64 * 64;
            }
        };
    auto matrices = MappedFile::anonymous(m.path + " (weights)", matrix_bytes, fill_matrices);
    if (!matrices) return matrices.error();
    size_t v_at = 0, m_at = 0;
    for (TensorView& t : m.tensors) {
        size_t& at = t.shape.size() == 1 ? v_at : m_at;
        t.data = (t.shape.size() == 1 ? (*vectors)->data() : (*matrices)->data()) + at;
        at += (t.nbytes + 63) / 64 * 64;
    }
    m.storage = {*vectors, *matrices};
    m.random_weights = !options.on_host;
    m.random_seed = options.seed;
    m.tokenizer = byte_vocabulary(shape->n_vocab);
    return m;
}

}  // namespace folio
