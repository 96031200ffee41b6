// tokenizer_spec_from_hf_files: a Hugging Face tokenizer.json (+
// tokenizer_config.json) as a TokenizerSpec. Supports the shapes our models
// use: byte-level BPE (GPT-2, SmolLM2, Llama 3, Qwen 2) and BPE with byte
// fallback and a "▁" normalizer (Gemma, Llama 2 style SentencePiece).
#include <algorithm>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "folio/tokenizer_spec.h"
#include "tokenizer/pre_tokenizer.h"

namespace folio {

namespace {

using nlohmann::json;

Result<json> read_json(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error("cannot open " + path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    try {
        return json::parse(buffer.str());
    } catch (const json::exception& e) {
        return make_error(path + " is not valid JSON: " + e.what());
    }
}

std::string escape_regex(const std::string& literal) {
    std::string out;
    for (char c : literal) {
        if (std::string_view("\\^$.|?*+()[]{}-/").find(c) != std::string_view::npos) out += '\\';
        out += c;
    }
    return out;
}

struct Shape {
    bool spm_normalizer = false;      // " " -> "▁"
    bool prepend_space = false;       // "▁" in front of the text
    std::vector<std::string> regexes; // byte-level split
};

Status read_normalizer(const json& node, Shape& shape, const std::string& path) {
    if (node.is_null()) return {};
    const std::string type = node.value("type", "");
    if (type == "Sequence") {
        for (const json& child : node.at("normalizers")) {
            if (Status s = read_normalizer(child, shape, path); !s) return s;
        }
    } else if (type == "Replace") {
        const json& pattern = node.at("pattern");
        if (pattern.contains("String") && pattern.at("String") == " " && node.at("content") == "\xE2\x96\x81") {
            shape.spm_normalizer = true;
        } else {
            return make_error("unsupported Replace normalizer in " + path + " (only \" \" -> \"\xE2\x96\x81\")");
        }
    } else if (type == "Prepend") {
        shape.prepend_space = node.at("prepend") == "\xE2\x96\x81";
    } else if (type == "NFC" || type == "NFKC" || type == "NFD" || type == "NFKD" || type == "Lowercase" ||
               type == "BertNormalizer" || type == "Precompiled" || type == "StripAccents") {
        return make_error("unsupported normalizer '" + type + "' in " + path);
    }
    return {};
}

Status read_pre_tokenizer(const json& node, Shape& shape, const std::string& path) {
    if (node.is_null()) return {};
    const std::string type = node.value("type", "");
    if (type == "Sequence") {
        for (const json& child : node.at("pretokenizers")) {
            if (Status s = read_pre_tokenizer(child, shape, path); !s) return s;
        }
    } else if (type == "ByteLevel") {
        if (node.value("use_regex", true)) shape.regexes.push_back(tokenizer_detail::kGpt2Regex);
        if (node.value("add_prefix_space", false)) {
            return make_error("ByteLevel pre-tokenizer with add_prefix_space is not supported (" + path + ")");
        }
    } else if (type == "Digits") {
        shape.regexes.push_back(node.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
    } else if (type == "Split") {
        const json& pattern = node.at("pattern");
        const std::string behavior = node.value("behavior", "Isolated");
        const bool inverted = node.value("invert", false);
        if (pattern.contains("String") && pattern.at("String") == " " && behavior == "MergedWithPrevious") {
            return {};  // Gemma's: a no-op after the " " -> "▁" normalizer
        }
        if (behavior != "Isolated" || inverted) {
            return make_error("unsupported Split pre-tokenizer behavior '" + behavior + "' in " + path);
        }
        shape.regexes.push_back(pattern.contains("Regex") ? pattern.at("Regex").get<std::string>()
                                                          : escape_regex(pattern.at("String").get<std::string>()));
    } else if (type == "Metaspace") {
        shape.spm_normalizer = true;
        const std::string scheme = node.value("prepend_scheme", node.value("add_prefix_space", true) ? "always" : "never");
        shape.prepend_space = scheme != "never";
        if (node.value("split", false)) {
            return make_error("Metaspace pre-tokenizer with split=true is not supported (" + path + ")");
        }
    } else {
        return make_error("unsupported pre-tokenizer '" + type + "' in " + path);
    }
    return {};
}

// A special token in tokenizer_config.json: a string or an AddedToken object.
std::string token_content(const json& node) {
    if (node.is_string()) return node.get<std::string>();
    if (node.is_object() && node.contains("content")) return node.at("content").get<std::string>();
    return {};
}

Result<TokenizerSpec> spec_from_json(const json& root, const json* config, const std::string& path) {
    const json& model = root.at("model");
    const std::string type = model.value("type", model.contains("merges") ? "BPE" : "");
    if (type != "BPE") {
        return make_error("unsupported tokenizer model '" + type + "' in " + path + " (only BPE is supported)");
    }
    TokenizerSpec spec;
    Shape shape;
    if (Status s = read_normalizer(root.value("normalizer", json()), shape, path); !s) return s.error();
    if (Status s = read_pre_tokenizer(root.value("pre_tokenizer", json()), shape, path); !s) return s.error();
    const bool byte_fallback = model.value("byte_fallback", false);
    spec.model = byte_fallback || shape.spm_normalizer ? TokenizerModel::SentencePiece : TokenizerModel::BytePairEncoding;
    spec.add_space_prefix = shape.prepend_space;
    if (spec.model == TokenizerModel::BytePairEncoding) {
        spec.pre_regexes = shape.regexes;
        // Named for messages only: Tokenizer uses pre_regexes when there are any.
        spec.pre = spec.pre_regexes.empty() ? "none" : "tokenizer.json";
    }

    // Vocabulary, then added tokens on top (they may extend it).
    constexpr int64_t kMaxTokens = int64_t(1) << 24;
    const auto valid_id = [&](const json& id) {
        return id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < kMaxTokens;
    };
    size_t size = 0;
    const json& vocab = model.at("vocab");
    if (!vocab.is_object()) return make_error(path + ": model.vocab is not an object of token -> id");
    for (const auto& [token, id] : vocab.items()) {
        if (!valid_id(id)) return make_error(path + ": vocabulary token '" + token + "' has id " + id.dump() +
                                             ", not an integer in [0, 2^24)");
        size = std::max(size, id.get<size_t>() + 1);
    }
    const json added = root.value("added_tokens", json::array());
    if (!added.is_array()) return make_error(path + ": added_tokens is not an array");
    for (const json& token : added) {
        if (!valid_id(token.at("id"))) return make_error(path + ": added token " + token.dump() + " has a bad id");
        size = std::max(size, token.at("id").get<size_t>() + 1);
    }
    spec.tokens.assign(size, std::string());
    spec.kinds.assign(size, TokenKind::Unused);
    for (const auto& [token, id] : vocab.items()) {
        spec.tokens[id.get<size_t>()] = token;
        const bool byte_token = token.size() == 6 && token.rfind("<0x", 0) == 0 && token.back() == '>';
        spec.kinds[id.get<size_t>()] = byte_fallback && byte_token ? TokenKind::Byte : TokenKind::Normal;
    }
    for (const json& token : added) {
        const size_t id = token.at("id").get<size_t>();
        spec.tokens[id] = token.at("content").get<std::string>();
        spec.kinds[id] = token.value("special", false) ? TokenKind::Control : TokenKind::UserDefined;
    }
    for (size_t id = 0; id < size; ++id) {
        if (spec.tokens[id].empty()) spec.tokens[id] = "<folio:unused:" + std::to_string(id) + ">";
    }

    for (const json& merge : model.at("merges")) {
        if (merge.is_string()) {
            spec.merges.push_back(merge.get<std::string>());
        } else if (merge.is_array() && merge.size() == 2) {
            spec.merges.push_back(merge.at(0).get<std::string>() + " " + merge.at(1).get<std::string>());
        } else {
            return make_error(path + ": a merge is neither \"a b\" nor [\"a\", \"b\"]");
        }
    }

    const auto find_id = [&](const std::string& text) -> int32_t {
        if (text.empty()) return -1;
        for (const json& token : added) {
            if (token.at("content") == text) return token.at("id").get<int32_t>();
        }
        const auto it = vocab.find(text);
        return it == vocab.end() ? -1 : it->get<int32_t>();
    };
    if (model.contains("unk_token") && model.at("unk_token").is_string()) spec.unk_id = find_id(model.at("unk_token"));

    // BOS/EOS: the post-processor says what encoding adds; tokenizer_config.json overrides.
    const json& post = root.value("post_processor", json());
    if (post.is_object() && post.value("type", "") == "TemplateProcessing") {
        const json& single = post.at("single");
        if (!single.empty() && single.front().contains("SpecialToken")) {
            spec.bos_id = find_id(single.front().at("SpecialToken").at("id").get<std::string>());
            spec.add_bos = spec.bos_id >= 0;
        }
        if (single.size() > 1 && single.back().contains("SpecialToken")) {
            spec.eos_id = find_id(single.back().at("SpecialToken").at("id").get<std::string>());
            spec.add_eos = spec.eos_id >= 0;
        }
    }
    if (config) {
        const auto id_of = [&](const char* key) { return config->contains(key) ? find_id(token_content(config->at(key))) : -1; };
        if (int32_t id = id_of("bos_token"); id >= 0) spec.bos_id = id;
        if (int32_t id = id_of("eos_token"); id >= 0) spec.eos_id = id;
        if (int32_t id = id_of("unk_token"); id >= 0) spec.unk_id = id;
        if (int32_t id = id_of("pad_token"); id >= 0) spec.pad_id = id;
        if (config->contains("add_bos_token") && config->at("add_bos_token").is_boolean()) {
            spec.add_bos = config->at("add_bos_token").get<bool>() && spec.bos_id >= 0;
        }
        if (config->contains("add_eos_token") && config->at("add_eos_token").is_boolean()) {
            spec.add_eos = config->at("add_eos_token").get<bool>() && spec.eos_id >= 0;
        }
    }
    return spec;
}

}  // namespace

Result<TokenizerSpec> tokenizer_spec_from_hf_files(const std::string& tokenizer_json_path,
                                                   const std::string& tokenizer_config_path) {
    auto root = read_json(tokenizer_json_path);
    if (!root) return root.error();
    std::optional<json> config;
    if (!tokenizer_config_path.empty()) {
        auto parsed = read_json(tokenizer_config_path);
        if (!parsed) return parsed.error();
        config = std::move(*parsed);
    }
    try {
        if (!root->is_object() || !root->contains("model")) {
            return make_error(tokenizer_json_path + " has no \"model\" object: not a Hugging Face tokenizer.json");
        }
        return spec_from_json(*root, config ? &*config : nullptr, tokenizer_json_path);
    } catch (const json::exception& e) {
        return make_error(tokenizer_json_path + ": unexpected structure: " + e.what());
    }
}

}  // namespace folio
