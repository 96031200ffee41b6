// Validation of a written file: its blocks reopened and checked
// (block_check.h), then, given a text, the quantized model compared with its
// source on the same chunks (quant_quality.h), and the report written as
// JSON beside the output.
#pragma once

#include <atomic>
#include <functional>

#include "folio/model.h"
#include "folio/quantize_job.h"

namespace folio::quant {

Status check_written_file(const std::string& path, size_t expected_tensors);

struct QualityOptions {
    std::string text_path;
    int64_t n_chunks = 8;
    int32_t n_ctx = 512;
    int threads = 0;
    std::string device = "cpu";
    const std::atomic<bool>* cancel = nullptr;
    std::function<void(int64_t chunk, int64_t n_chunks)> on_chunk;
};

// Runs source and result chunk by chunk on options.device and compares them.
Result<KldSummary> measure_quality(const ModelDescription& source, const std::string& result_path,
                                   const QualityOptions& options);

Status write_report_json(const QuantizeReport& report, const std::string& path);

}  // namespace folio::quant
