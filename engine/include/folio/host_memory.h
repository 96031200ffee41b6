// What the host system can give: the lowest layer's question, asked by the
// backends (KV budgets as a share of memory, a GPU's pinned swap space).
#pragma once

#include <cstdint>

namespace folio {

// Bytes of memory the system could give this process now (Linux:
// MemAvailable; Windows: available physical memory), 0 when unknown.
uint64_t available_host_memory();

}  // namespace folio
