// check_tensor_blocks(): the scale fields of each block type, by offset.
#include "quant/block_check.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "folio/dequant.h"

namespace folio::quant {

namespace {

// Byte offsets of the fp16 scale fields within one block.
std::vector<int> half_fields(TensorType type) {
    switch (type) {
        case TensorType::Q4_0: case TensorType::Q5_0: case TensorType::Q8_0: return {0};
        case TensorType::Q4_1: case TensorType::Q5_1: case TensorType::Q4_K: case TensorType::Q5_K: return {0, 2};
        case TensorType::Q6_K: return {208};
        default: return {};
    }
}

}  // namespace

Status check_tensor_blocks(const GgufTensorInfo& tensor) {
    const auto type = tensor.type();
    if (!type) return make_error("tensor '" + tensor.name + "' has a type Folio does not read");
    const TensorTypeTraits t = traits(*type);
    const uint64_t n_blocks = uint64_t(tensor.n_elements()) / t.block_elems;
    auto bad = [&](uint64_t block, const char* what) {
        return make_error("tensor '" + tensor.name + "' (" + std::string(t.name) + ") block " + std::to_string(block) +
                          " has a " + what + " that is not finite");
    };
    if (*type == TensorType::F32 || *type == TensorType::F16 || *type == TensorType::BF16) {
        std::vector<float> values(size_t(tensor.n_elements()));
        if (Status s = dequantize(*type, tensor.data, tensor.nbytes, values.data(), tensor.n_elements()); !s) return s;
        for (size_t i = 0; i < values.size(); ++i)
            if (!std::isfinite(values[i])) return bad(i, "value");
        return {};
    }
    const std::vector<int> fields = half_fields(*type);
    for (uint64_t b = 0; b < n_blocks; ++b) {
        const std::byte* block = tensor.data + b * t.block_bytes;
        for (int offset : fields) {
            uint16_t h;
            std::memcpy(&h, block + offset, 2);
            if ((h & 0x7C00) == 0x7C00) return bad(b, "scale");  // exponent all ones: inf or NaN
        }
    }
    return {};
}

}  // namespace folio::quant
