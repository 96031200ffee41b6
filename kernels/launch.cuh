// Programmatic dependent launch (Hopper, sm_90): how the kernels of a step
// overlap. A kernel launched with launch_overlapped() may start while the
// kernel before it in the stream is still running, once every block of that
// kernel has called allow_later_grids(). It must call wait_for_earlier_grids()
// before it reads anything the earlier kernels write or writes anything they
// read; before that it may only read data no kernel of the step writes (the
// weights, the step's batch: positions, slots, sequences, block tables). Every
// block must wait before it ends, even one with nothing to do, or the grid
// could end before the one before it. The wait returns when the kernel before
// has finished and its writes are visible; as that kernel waited in turn,
// every earlier one has finished too. So each kernel of a step calls
// allow_later_grids() as soon as it starts (SwiGLU after its stores:
// kernels/elementwise.cu says why), and a matmul loads its first weights
// before it waits: the weight stream of the next matrix overlaps the tail of
// the last one and the small kernels between them. Batch-1 decode of the 8B shape: F16 205 -> 211 tok/s, Q4_0 476 -> 489
// (bench/results/cuda-pdl-2026-11-30.txt). cuBLAS kernels take no part: the
// kernel after one starts when it has finished, as in a plain launch. Nor do
// the kernels at a step's edges (embedding gather, argmax / top-k) or the
// CUDA-core attention cross-check: they launch plainly, which is always safe.
//
// Without sm_90 both calls compile to nothing and the launch attribute is
// ignored. FOLIO_CUDA_PDL (a mask of PdlKind, 0 = none) chooses which kinds
// are launched overlapped, to measure each one's effect.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace folio::kernels::detail {

// Which kernels are launched overlapped, by kind (FOLIO_CUDA_PDL, a mask of
// these bits; default all).
enum PdlKind : unsigned {
    kPdlMatmul = 1,     // matmuls and their activation quantization
    kPdlNorm = 2,       // RMSNorm
    kPdlGlu = 4,        // SwiGLU / GeGLU
    kPdlRope = 8,       // RoPE + KV write
    kPdlAttention = 16, // paged attention and its merge
    kPdlOther = 32,     // element-wise, gathers
};
bool pdl_enabled(PdlKind kind);

__device__ __forceinline__ void wait_for_earlier_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_later_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

template <typename... Params, typename... Args>
cudaError_t launch_overlapped_smem(PdlKind kind, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes,
                                   cudaStream_t s, Args... args) {
    cudaLaunchConfig_t config = {};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = smem_bytes;
    config.stream = s;
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = pdl_enabled(kind) ? 1 : 0;
    config.attrs = attribute;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
}

template <typename... Params, typename... Args>
cudaError_t launch_overlapped(PdlKind kind, void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t s,
                              Args... args) {
    return launch_overlapped_smem(kind, kernel, grid, block, 0, s, args...);
}

}  // namespace folio::kernels::detail
