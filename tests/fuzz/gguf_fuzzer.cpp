// libFuzzer entry point for the GGUF reader: parses the input as a GGUF file
// and, when it parses, walks everything a model load touches (typed getters,
// hyper-parameters, tokenizer, dequantization of small tensors). Built as a
// real fuzzer in the "fuzz" preset and replayed over the corpus by
// gguf_fuzz_replay_test in ordinary builds.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "folio/dequant.h"
#include "folio/gguf.h"
#include "format/gguf_model.h"

namespace {

void touch_metadata(const folio::GgufFile& file) {
    for (const folio::GgufKeyValue& kv : file.metadata()) {
        (void)file.get_u32(kv.key);
        (void)file.get_i32(kv.key);
        (void)file.get_u64(kv.key);
        (void)file.get_f32(kv.key);
        (void)file.get_bool(kv.key);
        (void)file.get_string(kv.key);
        (void)file.get_string_array(kv.key);
        (void)file.get_f32_array(kv.key);
        (void)file.get_i32_array(kv.key);
        if (const folio::GgufArray* array = kv.value.as_array(); array && array->size() > 0)
            (void)array->element(array->size() - 1);
    }
}

void touch_tensors(const folio::GgufFile& file) {
    constexpr int64_t kMaxElements = 1 << 16;  // keep each input fast
    std::vector<float> out;
    for (const folio::GgufTensorInfo& t : file.tensors()) {
        (void)file.find_tensor(t.name);
        const auto type = t.type();
        if (!type || t.n_elements() > kMaxElements) continue;
        out.resize(size_t(t.n_elements()));
        (void)folio::dequantize(*type, t.data, t.nbytes, out.data(), t.n_elements());
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    auto file = folio::GgufFile::parse(bytes, "fuzz.gguf");
    if (!file) return 0;
    touch_metadata(*file);
    touch_tensors(*file);
    (void)folio::hparams_from_gguf(*file);
    (void)folio::tokenizer_spec_from_gguf(*file);
    return 0;
}
