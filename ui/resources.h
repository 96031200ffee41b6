// The studio's compiled-in resources (icons) live in a static library;
// call this once after the QApplication exists.
#pragma once

#include <QIcon>

namespace folio::ui {
void init_resources();

// Icon `name` (resources/icons/<name>.svg): the SVG itself, or where Qt has
// no SVG support (the Windows build) the PNG the build rendered from it
// (ui/CMakeLists.txt).
QIcon studio_icon(const char* name);
}  // namespace folio::ui
