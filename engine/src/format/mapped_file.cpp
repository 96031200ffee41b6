#include "folio/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace folio {

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
    return std::shared_ptr<const MappedFile>(new MappedFile(path, data, size));
}

Result<std::shared_ptr<const MappedFile>> MappedFile::anonymous(const std::string& name, size_t size,
                                                                const std::function<void(std::byte*)>& fill) {
    if (size == 0) return std::shared_ptr<const MappedFile>(new MappedFile(name, nullptr, 0));
    const int prot = fill ? PROT_READ | PROT_WRITE : PROT_READ;
    void* p = ::mmap(nullptr, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return make_error("cannot reserve " + std::to_string(size) + " bytes for '" + name + "': " + std::strerror(errno));
    auto* data = static_cast<std::byte*>(p);
    if (fill) {
        fill(data);
        ::mprotect(p, size, PROT_READ);
    }
    return std::shared_ptr<const MappedFile>(new MappedFile(name, data, size));
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace folio
