// llama.cpp's base-logits file (quant_quality.h), read and written with
// every count checked against the file's size.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "folio/quant_quality.h"

namespace folio {

namespace {

std::shared_ptr<std::FILE> open_file(const std::string& path, const char* mode) {
    std::FILE* f = std::fopen(path.c_str(), mode);
    return f ? std::shared_ptr<std::FILE>(f, [](std::FILE* p) { std::fclose(p); }) : nullptr;
}

bool write_all(std::FILE* f, const void* p, size_t n) { return std::fwrite(p, 1, n, f) == n; }
bool read_all(std::FILE* f, void* p, size_t n) { return std::fread(p, 1, n, f) == n; }

}  // namespace

Result<BaseLogitsWriter> BaseLogitsWriter::create(const std::string& path, uint32_t n_ctx, int32_t n_vocab,
                                                  int32_t n_chunk, std::span<const int32_t> tokens) {
    if (tokens.size() != size_t(n_ctx) * size_t(n_chunk))
        return make_error("logits file: " + std::to_string(tokens.size()) + " tokens for " + std::to_string(n_chunk) +
                          " chunks of " + std::to_string(n_ctx));
    BaseLogitsWriter w;
    w.path_ = path;
    w.file_ = open_file(path, "wb");
    if (!w.file_) return make_error("cannot create '" + path + "': " + std::strerror(errno));
    std::FILE* f = w.file_.get();
    if (!write_all(f, "_logits_", 8) || !write_all(f, &n_ctx, 4) || !write_all(f, &n_vocab, 4) ||
        !write_all(f, &n_chunk, 4) || !write_all(f, tokens.data(), tokens.size_bytes()))
        return make_error("cannot write '" + path + "': " + std::strerror(errno));
    return w;
}

Status BaseLogitsWriter::append(std::span<const uint16_t> records) {
    if (!write_all(file_.get(), records.data(), records.size_bytes()))
        return make_error("cannot write '" + path_ + "': " + std::strerror(errno));
    return {};
}

Status BaseLogitsWriter::close() {
    if (std::fflush(file_.get()) != 0) return make_error("cannot write '" + path_ + "': " + std::strerror(errno));
    file_.reset();
    return {};
}

Result<BaseLogitsReader> BaseLogitsReader::open(const std::string& path) {
    BaseLogitsReader r;
    r.path_ = path;
    r.file_ = open_file(path, "rb");
    if (!r.file_) return make_error("cannot open '" + path + "': " + std::strerror(errno));
    std::FILE* f = r.file_.get();
    char magic[8];
    if (!read_all(f, magic, 8) || std::memcmp(magic, "_logits_", 8) != 0)
        return make_error("'" + path + "' is not a base-logits file (made by --kl-divergence-base)");
    if (!read_all(f, &r.n_ctx_, 4) || !read_all(f, &r.n_vocab_, 4) || !read_all(f, &r.n_chunk_, 4))
        return make_error("'" + path + "' ends inside its header");
    if (r.n_ctx_ < 4 || r.n_ctx_ > (1u << 20) || r.n_vocab_ <= 0 || r.n_vocab_ > (1 << 24) || r.n_chunk_ <= 0)
        return make_error("'" + path + "' has an impossible header (n_ctx " + std::to_string(r.n_ctx_) + ", n_vocab " +
                          std::to_string(r.n_vocab_) + ", chunks " + std::to_string(r.n_chunk_) + ")");
    // The file must hold exactly what the header says.
    std::fseek(f, 0, SEEK_END);
    const uint64_t size = uint64_t(std::ftell(f));
    const uint64_t records = uint64_t(r.n_ctx_ - 1 - r.n_ctx_ / 2) * log_prob_record_size(r.n_vocab_) * 2;
    const uint64_t want = 20 + uint64_t(r.n_ctx_) * uint64_t(r.n_chunk_) * 4 + records * uint64_t(r.n_chunk_);
    if (size != want)
        return make_error("'" + path + "' is " + std::to_string(size) + " bytes but its header needs " + std::to_string(want));
    std::fseek(f, 20, SEEK_SET);
    r.tokens_.resize(size_t(r.n_ctx_) * size_t(r.n_chunk_));
    if (!read_all(f, r.tokens_.data(), r.tokens_.size() * 4)) return make_error("cannot read '" + path + "'");
    return r;
}

Status BaseLogitsReader::read_chunk(std::vector<uint16_t>& records) {
    records.resize(size_t(n_ctx_ - 1 - n_ctx_ / 2) * log_prob_record_size(n_vocab_));
    if (!read_all(file_.get(), records.data(), records.size() * 2))
        return make_error("'" + path_ + "' ends before its last chunk");
    return {};
}

}  // namespace folio
