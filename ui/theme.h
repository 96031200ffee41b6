// Light and dark themes. "System" follows the desktop's palette (Qt 6.4
// reports no colour scheme, so a dark system palette means dark); the
// choice is saved in the settings.
#pragma once

#include <QString>

namespace folio::ui {

enum class ThemeMode { System, Light, Dark };

void apply_theme(ThemeMode mode);
bool theme_is_dark();
ThemeMode theme_from_string(const QString& name);
QString theme_to_string(ThemeMode mode);

}  // namespace folio::ui
