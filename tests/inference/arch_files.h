// The architecture families' small random-weight files (tools/make_arch_gguf.py,
// with SmolLM2's vocabulary), written where a test asks, and their sha256:
// shared by test_arch_golden (the files as made) and test_inference_golden
// (the files quantized to Q4_K_M by Folio's quantizer).
#pragma once

#include <cstdint>
#include <string>

#include "folio_test.h"
#include "gguf_fixture.h"

namespace arch_files {

// Writes `family`'s file at `path`; false with `message` when it cannot (no
// .venv or SmolLM2 GGUF: a message not starting "make_arch", so a caller may
// skip; the script failing: one that does).
inline bool make(const std::string& family, const std::string& path, std::string& message) {
    const std::string python = gguf_fixture::python();
    const std::string vocab = folio_test::model_path(folio_test::kSmolLM2);
    if (python.empty() || vocab.empty()) {
        message = "needs .venv/bin/python and the SmolLM2 GGUF (its vocabulary): run scripts/setup.sh";
        return false;
    }
    std::string output;
    const int status = gguf_fixture::run_command(python + " " + folio_test::source_dir() + "/tools/make_arch_gguf.py " +
                                                     family + " " + path + " --vocab-from " + vocab + " 2>&1",
                                                 output);
    message = "make_arch_gguf.py: " + output;
    return status == 0;
}

inline std::string sha256(const std::string& path) {
    std::string output;
    if (gguf_fixture::run_command("sha256sum " + path, output) != 0) return {};
    return output.substr(0, output.find(' '));
}

// The sha256 of the file's bytes from `offset` on (a GGUF's data section:
// the goldens' tensor_data_sha256).
inline std::string sha256_from(const std::string& path, uint64_t offset) {
    std::string output;
    if (gguf_fixture::run_command("tail -c +" + std::to_string(offset + 1) + " " + path + " | sha256sum", output) != 0)
        return {};
    return output.substr(0, output.find(' '));
}

}  // namespace arch_files
