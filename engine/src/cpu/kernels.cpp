#include "cpu/kernels.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "cpu/kernels_impl.h"
#include "cpu/quant_blocks.h"

namespace folio::cpu {

// F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports
// does not know the "f16c" feature name.
bool cpu_has_f16c() {
#if defined(__x86_64__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
#else
    return false;
#endif
}

bool isa_supported(Isa isa) {
    switch (isa) {
        case Isa::Scalar: return true;
        case Isa::Avx2: {
#if defined(__x86_64__)
            // Checked once: CPUID traps to the hypervisor in a VM (microseconds),
            // and matmul asks on every call.
            static const bool avx2 =
                __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
            return avx2;
#else
            return false;
#endif
        }
    }
    return false;
}

Isa best_isa() {
    static const Isa best = isa_supported(Isa::Avx2) ? Isa::Avx2 : Isa::Scalar;
    return best;
}

const char* isa_name(Isa isa) { return isa == Isa::Avx2 ? "avx2" : "scalar"; }

const DotKernels* dot_kernels(TensorType weight, Isa isa) {
    if (!isa_supported(isa)) return nullptr;
    return isa == Isa::Avx2 ? avx2_kernels(weight) : scalar_kernels(weight);
}

size_t activation_row_bytes(ActivationType type, int64_t n) {
    const auto count = static_cast<size_t>(n);
    switch (type) {
        case ActivationType::F32: return count * sizeof(float);
        case ActivationType::Q8_0: return count / kBlock32 * sizeof(BlockQ8_0);
        case ActivationType::Q8_1: return count / kBlock32 * sizeof(BlockQ8_1);
        case ActivationType::Q8_K: return count / kSuperBlock * sizeof(BlockQ8_K);
    }
    return 0;
}

}  // namespace folio::cpu
