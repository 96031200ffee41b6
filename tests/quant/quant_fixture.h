// Sources for the quantizer tests: a small model of a real architecture's
// shape (make_dummy_model's random weights) written as an F32 GGUF file,
// with the metadata a Hugging Face folder would get (hf_model_metadata), so
// Folio loads it like any model file.
#pragma once

#include <filesystem>
#include <string>
#include <unistd.h>

#include "folio/gguf.h"
#include "folio/model.h"
#include "quant/hf_metadata.h"

namespace quant_fixture {

inline std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("folio-quant-" + std::to_string(::getpid()) + "-" + name)).string();
}

// Writes `shape` (dummy_model_shapes()) with F32 weights to `path`; an
// optional edit may change a tensor's values before the write.
template <typename Edit>
folio::Status write_dummy_gguf(const std::string& shape, const std::string& path, Edit edit, uint64_t seed = 1) {
    folio::DummyModelOptions options;
    options.shape = shape;
    options.type = folio::TensorType::F32;
    options.seed = seed;
    auto model = folio::make_dummy_model(options);
    if (!model) return model.error();
    auto metadata = folio::quant::hf_model_metadata(*model);
    if (!metadata) return metadata.error();
    folio::GgufWriter writer;
    for (const folio::GgufKeyValue& kv : *metadata) writer.set(kv.key, kv.value);
    for (const folio::TensorView& t : model->tensors) {
        std::vector<std::byte> bytes(t.data, t.data + t.nbytes);
        edit(t.name, bytes);
        if (auto ok = writer.add_tensor(t.name, t.type, t.shape, std::move(bytes)); !ok) return ok;
    }
    return writer.write(path);
}

inline folio::Status write_dummy_gguf(const std::string& shape, const std::string& path) {
    return write_dummy_gguf(shape, path, [](const std::string&, std::vector<std::byte>&) {});
}

inline bool exists(const std::string& path) { return std::filesystem::exists(path); }

}  // namespace quant_fixture
