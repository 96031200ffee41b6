// Token selection on the GPU, so that a step's logits need not leave the
// device. Greedy for now: the id of each row's largest logit.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace folio::kernels {

// out[r] = the first column of row r of x ([n_rows][n_cols] F32) holding its
// largest value: ties go to the lowest id, NaN never wins, a row of only NaN
// gives 0 (as the engine's Sampler decides).
cudaError_t argmax_rows(const float* x, int64_t n_rows, int64_t n_cols, int32_t* out, cudaStream_t s);

}  // namespace folio::kernels
