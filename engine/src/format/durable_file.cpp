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

#ifdef _WIN32
std::string last_windows_error() {
    const DWORD code = ::GetLastError();
    char* text = nullptr;
    ::FormatMessageA(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr,
                     code, 0, reinterpret_cast<char*>(&text), 0, nullptr);
    std::string message = text ? text : "Windows error " + std::to_string(code);
    if (text) ::LocalFree(text);
    while (!message.empty() && (message.back() == '\n' || message.back() == '\r' || message.back() == '.'))
        message.pop_back();
    return message;
}
#endif

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
        const std::string why = last_windows_error();
        std::remove(from.c_str());
        return make_error("cannot rename '" + from + "' to '" + to + "': " + why);
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
