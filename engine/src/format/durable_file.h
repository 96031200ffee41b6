// Writing a file so that a crash leaves the old one or the new one, never a
// part: written to a temporary, flushed to the disk, then renamed over the
// target. The POSIX and Windows calls differ; the writers do not.
#pragma once

#include <cstdio>
#include <string>

#include "folio/error.h"

namespace folio {

// fflush, then the data on the disk (fsync; Windows: _commit). False with errno set.
bool flush_to_disk(std::FILE* file);

// Renames `from` over `to` (replacing it, also on Windows), then makes the
// directory entry durable where the system can. `from` is removed on failure.
Status replace_file(const std::string& from, const std::string& to);

#ifdef _WIN32
// The text of GetLastError() ("Access is denied"), for this file's calls and MappedFile's.
std::string last_windows_error();
#endif

}  // namespace folio
