#include <cstdlib>

#include "launch.cuh"

namespace folio::kernels::detail {

bool pdl_enabled(PdlKind kind) {
    static const unsigned mask = [] {
        const char* v = std::getenv("FOLIO_CUDA_PDL");
        return v && *v ? static_cast<unsigned>(std::strtoul(v, nullptr, 0)) : ~0u;
    }();
    return (mask & kind) != 0;
}

}  // namespace folio::kernels::detail
