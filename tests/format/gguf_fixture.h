// Helpers for the GGUF tests: a byte-level builder for hand-made (and
// deliberately broken) files, and the bridge to the Python reference reader.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>
#include <span>
#include <string>
#include <vector>

#include "folio/gguf.h"

namespace gguf_fixture {

// Appends GGUF fields as little-endian bytes, exactly as written, so a test
// can put any value in any field.
class RawGguf {
public:
    RawGguf& u8(uint8_t v) { return le(v, 1); }
    RawGguf& u32(uint32_t v) { return le(v, 4); }
    RawGguf& u64(uint64_t v) { return le(v, 8); }
    RawGguf& str(const std::string& s) {
        u64(s.size());
        for (char c : s) bytes.push_back(std::byte(static_cast<unsigned char>(c)));
        return *this;
    }
    RawGguf& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
        return u32(0x46554747).u32(version).u64(n_tensors).u64(n_kv);
    }
    RawGguf& kv_u32(const std::string& key, uint32_t v) { return str(key).u32(4).u32(v); }
    RawGguf& tensor_info(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
        str(name).u32(uint32_t(dims.size()));
        for (uint64_t d : dims) u64(d);
        return u32(type).u64(offset);
    }
    RawGguf& pad(size_t alignment = 32) {
        while (bytes.size() % alignment) bytes.push_back(std::byte{0});
        return *this;
    }
    RawGguf& zeros(size_t n) {
        bytes.insert(bytes.end(), n, std::byte{0});
        return *this;
    }
    folio::Result<folio::GgufFile> parse() const { return folio::GgufFile::parse(bytes, "test.gguf"); }

    std::vector<std::byte> bytes;

private:
    RawGguf& le(uint64_t v, int n) {
        for (int i = 0; i < n; ++i) bytes.push_back(std::byte(uint8_t(v >> (8 * i))));
        return *this;
    }
};

inline std::vector<std::byte> pattern_bytes(size_t n, uint32_t seed) {
    std::vector<std::byte> out(n);
    uint32_t x = seed * 2654435761u + 1;
    for (auto& b : out) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b = std::byte(uint8_t(x));
    }
    return out;
}

inline std::string python() {
    const std::string path = std::string(FOLIO_SOURCE_DIR) + "/.venv/bin/python";
    return std::filesystem::exists(path) ? path : std::string();
}

// Runs a command, returns its exit status and fills `output` with its stdout.
inline int run_command(const std::string& command, std::string& output) {
    output.clear();
    std::FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return -1;
    char buffer[65536];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
    const int status = ::pclose(pipe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("folio-" + std::to_string(::getpid()) + "-" + name)).string();
}

}  // namespace gguf_fixture

// Resolves .venv/bin/python into `var`, or skips the slot (fails in CI,
// FOLIO_REQUIRE_MODELS=1, where the venv exists).
#define GGUF_REQUIRE_PYTHON(var)                                                              \
    const std::string var = gguf_fixture::python();                                           \
    do {                                                                                      \
        if (var.empty()) {                                                                    \
            if (folio_test::models_required()) QFAIL(".venv/bin/python missing: run scripts/setup.sh"); \
            QSKIP(".venv/bin/python missing: run scripts/setup.sh");                          \
        }                                                                                     \
    } while (0)
