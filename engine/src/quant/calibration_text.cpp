// The default calibration text (imatrix.h): licences, because they are on
// every Debian-family system and may be redistributed verbatim; not GPL-3,
// the evaluation text.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "folio/imatrix.h"

namespace folio {

std::vector<std::string> default_calibration_files() {
    static const char* const kFiles[] = {"Apache-2.0", "MPL-2.0", "MPL-1.1", "GFDL-1.3", "Artistic", "CC0-1.0"};
    std::vector<std::string> out;
    for (const char* name : kFiles) {
        const std::string path = std::string("/usr/share/common-licenses/") + name;
        std::error_code ec;
        if (std::filesystem::is_regular_file(path, ec)) out.push_back(path);
    }
    return out;
}

Result<std::string> read_calibration_text(const std::vector<std::string>& files) {
    if (files.empty())
        return make_error("no calibration text: give one (-f TEXT), or install Debian's base-files "
                          "(/usr/share/common-licenses)");
    std::ostringstream text;
    for (const std::string& path : files) {
        std::ifstream in(path, std::ios::binary);
        if (!in) return make_error("cannot read the calibration text '" + path + "'");
        text << in.rdbuf() << "\n\n";
    }
    return text.str();
}

}  // namespace folio
