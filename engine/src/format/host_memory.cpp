#include "folio/host_memory.h"

#include <cstdio>

#ifdef _WIN32
#include <windows.h>
#endif

namespace folio {

uint64_t available_host_memory() {
#ifdef _WIN32
    MEMORYSTATUSEX status{};
    status.dwLength = sizeof status;
    return ::GlobalMemoryStatusEx(&status) ? uint64_t(status.ullAvailPhys) : 0;
#else
    std::FILE* f = std::fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kib = 0;
    while (std::fgets(line, sizeof line, f))
        if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
    std::fclose(f);
    return kib * 1024;
#endif
}

}  // namespace folio
