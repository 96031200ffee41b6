// Reader for the safetensors format: an 8-byte little-endian header length, a
// JSON header naming each tensor's dtype, shape and byte range, then the raw
// data. Tensors are views into the mapped file; nothing is copied. A sharded
// checkpoint is a set of such files tied together by
// model.safetensors.index.json ("weight_map": tensor name -> file name).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "folio/error.h"
#include "folio/mapped_file.h"
#include "folio/tensor_type.h"

namespace folio::safetensors {

// Bigger headers are refused before parsing (the reference implementation
// uses the same cap); a real header is a few hundred bytes per tensor.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct Tensor {
    std::string name;               // as stored: "model.layers.0.self_attn.q_proj.weight"
    TensorType type = TensorType::F32;
    std::vector<int64_t> shape;     // row-major order as stored: shape[0] is the outermost
    const std::byte* data = nullptr;  // not necessarily aligned for the element type
    uint64_t nbytes = 0;
    std::string file;               // the file it lives in, for messages
};

// Tensors of one or several files, sorted by file then by data offset, with
// the mappings that keep their data alive.
struct Archive {
    std::vector<std::shared_ptr<const MappedFile>> files;
    std::vector<Tensor> tensors;
};

// Validates and lists the tensors of a safetensors image held in memory.
// `source` names it in messages. The returned views point into `bytes`.
Result<std::vector<Tensor>> parse(const std::byte* bytes, size_t size, const std::string& source);

// One file, mapped read-only.
Result<Archive> read_file(const std::string& path);

// A sharded checkpoint: every file that the index's weight_map names must
// exist and hold the tensors the index assigns to it.
Result<Archive> read_index(const std::string& index_path);

}  // namespace folio::safetensors
