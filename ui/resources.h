// The studio's compiled-in resources (icons) live in a static library;
// call this once after the QApplication exists.
#pragma once

namespace folio::ui {
void init_resources();
}
