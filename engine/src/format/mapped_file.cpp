#include "folio/mapped_file.h"

#include <cerrno>
#include <cstring>

#ifdef _WIN32
#include <windows.h>

#include "format/durable_file.h"  // last_windows_error
#else
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace folio {

#ifdef _WIN32
// Paths are UTF-8. The -A functions take them because the executables'
// manifest (packaging/windows/folio.manifest) sets the UTF-8 code page.

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::string& path) {
    HANDLE file = ::CreateFileA(path.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_DELETE, nullptr,
                                OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (file == INVALID_HANDLE_VALUE) return make_error("cannot open '" + path + "': " + last_windows_error());
    BY_HANDLE_FILE_INFORMATION info{};
    if (!::GetFileInformationByHandle(file, &info) || (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)) {
        ::CloseHandle(file);
        return make_error("'" + path + "' is not a regular file");
    }
    const size_t size = (size_t(info.nFileSizeHigh) << 32) | info.nFileSizeLow;
    const std::byte* data = nullptr;
    if (size > 0) {
        HANDLE mapping = ::CreateFileMappingA(file, nullptr, PAGE_READONLY, 0, 0, nullptr);
        void* p = mapping ? ::MapViewOfFile(mapping, FILE_MAP_READ, 0, 0, 0) : nullptr;
        const std::string why = p ? "" : last_windows_error();
        if (mapping) ::CloseHandle(mapping);  // the view keeps the mapping and the file alive
        if (!p) {
            ::CloseHandle(file);
            return make_error("cannot map '" + path + "' (" + std::to_string(size) + " bytes): " + why);
        }
        data = static_cast<const std::byte*>(p);
    }
    ::CloseHandle(file);
    return std::shared_ptr<const MappedFile>(new MappedFile(path, data, size, false));
}

Result<std::shared_ptr<const MappedFile>> MappedFile::anonymous(const std::string& name, size_t size,
                                                                const std::function<void(std::byte*)>& fill) {
    if (size == 0) return std::shared_ptr<const MappedFile>(new MappedFile(name, nullptr, 0, true));
    // Committed pages are zero and take memory only when touched.
    void* p = ::VirtualAlloc(nullptr, size, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    if (!p) return make_error("cannot reserve " + std::to_string(size) + " bytes for '" + name + "': " + last_windows_error());
    auto* data = static_cast<std::byte*>(p);
    if (fill) fill(data);
    DWORD old = 0;
    ::VirtualProtect(p, size, PAGE_READONLY, &old);
    return std::shared_ptr<const MappedFile>(new MappedFile(name, data, size, true));
}

MappedFile::~MappedFile() {
    if (!data_) return;
    if (anonymous_) ::VirtualFree(const_cast<std::byte*>(data_), 0, MEM_RELEASE);
    else ::UnmapViewOfFile(data_);
}

#else

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return make_error("cannot open '" + path + "': " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        return make_error("cannot stat '" + path + "': " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return make_error("'" + path + "' is not a regular file");
    }
    const size_t size = static_cast<size_t>(st.st_size);
    const std::byte* data = nullptr;
    if (size > 0) {
        void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int err = errno;
            ::close(fd);
            return make_error("cannot map '" + path + "' (" + std::to_string(size) + " bytes): " + std::strerror(err));
        }
        data = static_cast<const std::byte*>(p);
    }
    ::close(fd);  // the mapping keeps the file alive
    return std::shared_ptr<const MappedFile>(new MappedFile(path, data, size, false));
}

Result<std::shared_ptr<const MappedFile>> MappedFile::anonymous(const std::string& name, size_t size,
                                                                const std::function<void(std::byte*)>& fill) {
    if (size == 0) return std::shared_ptr<const MappedFile>(new MappedFile(name, nullptr, 0, true));
    const int prot = fill ? PROT_READ | PROT_WRITE : PROT_READ;
    void* p = ::mmap(nullptr, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return make_error("cannot reserve " + std::to_string(size) + " bytes for '" + name + "': " + std::strerror(errno));
    auto* data = static_cast<std::byte*>(p);
    if (fill) {
        fill(data);
        ::mprotect(p, size, PROT_READ);
    }
    return std::shared_ptr<const MappedFile>(new MappedFile(name, data, size, true));
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

#endif

}  // namespace folio
