// What the studio tells a user about a model before and after loading it:
// the metadata inspector's summary of a ModelDescription, and the memory a
// load will take (mapped weights + the KV cache the engine settings ask for)
// against what the machine has available.
#pragma once

#include <QString>

#include "folio/model.h"
#include "ui/studio_types.h"

namespace folio::ui {

ModelSummary summarize_model(const folio::ModelDescription& model);

struct MemoryEstimate {
    uint64_t weight_bytes = 0;
    uint64_t kv_bytes = 0;          // the whole block pool
    uint64_t kv_tokens = 0;         // tokens the pool holds
    uint64_t total_bytes = 0;
    uint64_t available_bytes = 0;   // MemAvailable; 0 when unknown
    bool known = false;             // false when the model gives no KV size (never silently 0)
    bool fits() const { return available_bytes == 0 || total_bytes <= available_bytes; }
    QString describe() const;       // one paragraph for the inspector
};

MemoryEstimate estimate_memory(const ModelSummary& model, const EngineSettings& settings);

// The physical memory the system can still hand out (Linux MemAvailable), 0 when unknown.
uint64_t available_memory_bytes();

}  // namespace folio::ui
