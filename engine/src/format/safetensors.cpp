#include "format/safetensors.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "format/hf_json.h"

namespace folio::safetensors {
namespace {

using nlohmann::json;

// Tensors deeper than this are not model weights; the cap also bounds the
// element-count arithmetic below.
constexpr size_t kMaxRank = 8;

struct Dtype {
    TensorType type;
    uint32_t element_bytes;
};

std::optional<Dtype> dtype_from_name(const std::string& name) {
    if (name == "F32") return Dtype{TensorType::F32, 4};
    if (name == "F16") return Dtype{TensorType::F16, 2};
    if (name == "BF16") return Dtype{TensorType::BF16, 2};
    return std::nullopt;
}

// Reads a JSON integer that must be >= 0 (JSON numbers may be signed or floats).
std::optional<uint64_t> as_unsigned(const json& v) {
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_number_integer()) {
        const int64_t i = v.get<int64_t>();
        if (i >= 0) return static_cast<uint64_t>(i);
    }
    return std::nullopt;
}

struct Range {
    uint64_t begin = 0;
    uint64_t end = 0;
    size_t tensor = 0;
};

Result<Tensor> describe_tensor(const std::string& name, const json& entry, const std::byte* data_section,
                               uint64_t data_size, const std::string& source, Range& range) {
    const std::string where = "tensor '" + name + "' in '" + source + "'";
    if (name.empty()) return make_error("'" + source + "': a tensor has an empty name");
    if (!entry.is_object()) return make_error(where + ": header entry is not a JSON object");

    const auto dtype_it = entry.find("dtype");
    if (dtype_it == entry.end() || !dtype_it->is_string())
        return make_error(where + ": missing or non-string \"dtype\"");
    const std::string dtype_name = dtype_it->get<std::string>();
    const std::optional<Dtype> dtype = dtype_from_name(dtype_name);
    if (!dtype)
        return make_error(where + " has dtype " + dtype_name + "; Folio reads F32, F16 and BF16 safetensors");

    const auto shape_it = entry.find("shape");
    if (shape_it == entry.end() || !shape_it->is_array()) return make_error(where + ": missing \"shape\" array");
    if (shape_it->size() > kMaxRank)
        return make_error(where + ": shape has " + std::to_string(shape_it->size()) + " dimensions (at most " +
                          std::to_string(kMaxRank) + ")");
    Tensor t;
    t.name = name;
    t.type = dtype->type;
    t.file = source;
    uint64_t expected_bytes = dtype->element_bytes;
    bool overflow = false;
    for (const json& d : *shape_it) {
        const std::optional<uint64_t> dim = as_unsigned(d);
        if (!dim || *dim > static_cast<uint64_t>(INT64_MAX))
            return make_error(where + ": shape " + hf::describe_json(*shape_it) + " holds a value that is not a size");
        t.shape.push_back(static_cast<int64_t>(*dim));
        if (*dim != 0 && expected_bytes > UINT64_MAX / *dim) overflow = true;
        else expected_bytes *= *dim;
    }
    if (overflow) return make_error(where + ": shape " + hf::describe_json(*shape_it) + " is too large");

    const auto offsets_it = entry.find("data_offsets");
    if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2)
        return make_error(where + ": \"data_offsets\" must be an array [begin, end]");
    const std::optional<uint64_t> begin = as_unsigned((*offsets_it)[0]);
    const std::optional<uint64_t> end = as_unsigned((*offsets_it)[1]);
    if (!begin || !end || *begin > *end)
        return make_error(where + ": data_offsets " + hf::describe_json(*offsets_it) + " are not a range");
    if (*end > data_size)
        return make_error(where + ": data_offsets " + hf::describe_json(*offsets_it) + " end past the data section (" +
                          std::to_string(data_size) + " bytes); the file is truncated or corrupt");
    if (*end - *begin != expected_bytes)
        return make_error(where + ": data_offsets " + hf::describe_json(*offsets_it) + " span " +
                          std::to_string(*end - *begin) + " bytes but shape " + hf::describe_json(*shape_it) + " of " +
                          dtype_name + " needs " + std::to_string(expected_bytes));
    t.data = data_section + *begin;
    t.nbytes = expected_bytes;
    range.begin = *begin;
    range.end = *end;
    return t;
}

Result<std::string> read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return make_error("cannot open '" + path + "'");
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return make_error("cannot read '" + path + "'");
    return text.str();
}

// Shard names come from a file the user was handed: keep them inside the folder.
bool is_plain_relative(const std::string& file_name) {
    const std::filesystem::path p(file_name);
    if (file_name.empty() || p.is_absolute()) return false;
    for (const auto& part : p)
        if (part == "..") return false;
    return true;
}

}  // namespace

Result<std::vector<Tensor>> parse(const std::byte* bytes, size_t size, const std::string& source) {
    if (size < 8)
        return make_error("'" + source + "' is too short for a safetensors file (" + std::to_string(size) +
                          " bytes, the header length alone takes 8)");
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(bytes[i]);
    if (header_len > kMaxHeaderBytes)
        return make_error("'" + source + "': safetensors header length " + std::to_string(header_len) +
                          " exceeds the " + std::to_string(kMaxHeaderBytes) + "-byte cap; not a safetensors file?");
    if (header_len > size - 8)
        return make_error("'" + source + "': safetensors header length " + std::to_string(header_len) +
                          " runs past the end of the file (" + std::to_string(size) + " bytes); truncated?");

    const char* header_begin = reinterpret_cast<const char*>(bytes + 8);
    json header;
    try {
        header = json::parse(header_begin, header_begin + header_len);
    } catch (const json::exception& e) {
        return make_error("'" + source + "': safetensors header is not valid JSON: " + e.what());
    }
    if (!header.is_object()) return make_error("'" + source + "': safetensors header is not a JSON object");

    const std::byte* data_section = bytes + 8 + header_len;
    const uint64_t data_size = size - 8 - header_len;
    std::vector<Tensor> tensors;
    std::vector<Range> ranges;
    try {
        for (const auto& [name, entry] : header.items()) {
            if (name == "__metadata__") continue;  // free-form strings, nothing Folio needs
            Range range;
            Result<Tensor> t = describe_tensor(name, entry, data_section, data_size, source, range);
            if (!t) return t.error();
            range.tensor = tensors.size();
            ranges.push_back(range);
            tensors.push_back(std::move(t.value()));
        }
    } catch (const json::exception& e) {
        return make_error("'" + source + "': unreadable safetensors header: " + e.what());
    }

    // Two tensors sharing bytes would alias weights that are meant to be
    // independent; the format forbids it, so a file that does is corrupt.
    std::sort(ranges.begin(), ranges.end(),
              [](const Range& a, const Range& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
    for (size_t i = 1; i < ranges.size(); ++i) {
        const Range& prev = ranges[i - 1];
        const Range& cur = ranges[i];
        if (cur.begin < prev.end)
            return make_error("'" + source + "': tensors '" + tensors[prev.tensor].name + "' and '" +
                              tensors[cur.tensor].name + "' overlap in the data section");
    }

    std::vector<Tensor> ordered;
    ordered.reserve(tensors.size());
    for (const Range& r : ranges) ordered.push_back(std::move(tensors[r.tensor]));
    return ordered;
}

Result<Archive> read_file(const std::string& path) {
    Result<std::shared_ptr<const MappedFile>> file = MappedFile::open(path);
    if (!file) return file.error();
    Result<std::vector<Tensor>> tensors = parse((*file)->data(), (*file)->size(), path);
    if (!tensors) return tensors.error();
    Archive archive;
    archive.files.push_back(std::move(file.value()));
    archive.tensors = std::move(tensors.value());
    return archive;
}

Result<Archive> read_index(const std::string& index_path) {
    Result<std::string> text = read_text_file(index_path);
    if (!text) return text.error();

    // tensor name -> shard file name, grouped by shard so each file is mapped once
    std::map<std::string, std::set<std::string>> tensors_of_shard;
    try {
        const json index = json::parse(*text);
        if (!index.is_object()) return make_error("'" + index_path + "' is not a JSON object");
        const auto map_it = index.find("weight_map");
        if (map_it == index.end() || !map_it->is_object())
            return make_error("'" + index_path + "' has no \"weight_map\" object");
        for (const auto& [tensor, shard] : map_it->items()) {
            if (!shard.is_string())
                return make_error("'" + index_path + "': weight_map entry for tensor '" + tensor +
                                  "' is not a file name");
            const std::string shard_name = shard.get<std::string>();
            if (!is_plain_relative(shard_name))
                return make_error("'" + index_path + "': tensor '" + tensor + "' points to '" + shard_name +
                                  "', outside the model folder");
            tensors_of_shard[shard_name].insert(tensor);
        }
    } catch (const json::exception& e) {
        return make_error("'" + index_path + "' is not valid JSON: " + e.what());
    }
    if (tensors_of_shard.empty()) return make_error("'" + index_path + "': weight_map lists no tensors");

    const std::filesystem::path dir = std::filesystem::path(index_path).parent_path();
    Archive archive;
    std::set<std::string> seen;
    for (const auto& [shard_name, listed] : tensors_of_shard) {
        const std::string shard_path = (dir / shard_name).string();
        std::error_code ec;
        if (!std::filesystem::is_regular_file(shard_path, ec))
            return make_error("'" + index_path + "' names shard '" + shard_name + "' (for tensor '" +
                              *listed.begin() + "'), but '" + shard_path + "' does not exist");
        Result<Archive> shard = read_file(shard_path);
        if (!shard) return shard.error();
        std::set<std::string> present;
        for (Tensor& t : shard->tensors) {
            if (!seen.insert(t.name).second)
                return make_error("tensor '" + t.name + "' is stored twice: again in '" + shard_path + "'");
            present.insert(t.name);
            archive.tensors.push_back(std::move(t));
        }
        for (const std::string& name : listed)
            if (!present.count(name))
                return make_error("'" + index_path + "' places tensor '" + name + "' in '" + shard_name +
                                  "', but that file does not hold it");
        archive.files.push_back(std::move(shard->files.front()));
    }
    return archive;
}

}  // namespace folio::safetensors
