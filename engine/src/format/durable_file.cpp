#include "format/durable_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#ifdef _WIN32
#include <io.h>
#include <windows.h>
#else
#include <fcntl.h>
#include <unistd.h>
#endif

namespace folio {

bool flush_to_disk(std::FILE* file) {
    if (std::fflush(file) != 0) return false;
#ifdef _WIN32
    return ::_commit(::_fileno(file)) == 0;
#else
    return ::fsync(::fileno(file)) == 0;
#endif
}

Status replace_file(const std::string& from, const std::string& to) {
#ifdef _WIN32
    // rename() refuses an existing target on Windows; MoveFileEx replaces it.
    if (!::MoveFileExA(from.c_str(), to.c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) {
        const DWORD code = ::GetLastError();
        std::remove(from.c_str());
        return make_error("cannot rename '" + from + "' to '" + to + "' (Windows error " + std::to_string(code) + ")");
    }
#else
    if (std::rename(from.c_str(), to.c_str()) != 0) {
        const int err = errno;
        std::remove(from.c_str());
        return make_error("cannot rename '" + from + "' to '" + to + "': " + std::strerror(err));
    }
    // The rename itself durable: the directory entry is on the disk too.
    std::filesystem::path dir = std::filesystem::path(to).parent_path();
    if (dir.empty()) dir = ".";
    if (const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY); fd >= 0) {
        (void)::fsync(fd);
        ::close(fd);
    }
#endif
    return {};
}

}  // namespace folio
