// JSON written for clients: bytes that are not UTF-8 (a token can be part of
// a character) become U+FFFD instead of an exception.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace folio::server {

inline std::string dump_json(const nlohmann::json& value) {
    return value.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

}  // namespace folio::server
