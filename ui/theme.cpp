#include "ui/theme.h"

#include <QApplication>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>

namespace folio::ui {

namespace {

bool g_dark = false;

QPalette dark_palette() {
    QPalette p;
    const QColor window(0x2b, 0x2d, 0x31), base(0x1e, 0x1f, 0x22), text(0xe6, 0xe6, 0xe6), accent(0x4f, 0x7c, 0xff);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(0x9a, 0x9a, 0x9a));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, Qt::red);
    p.setColor(QPalette::Link, accent.lighter(130));
    p.setColor(QPalette::Highlight, accent);
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Mid, QColor(0x4a, 0x4d, 0x52));
    p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x80, 0x80, 0x80));
    p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x80, 0x80, 0x80));
    p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x80, 0x80, 0x80));
    return p;
}

QPalette& system_palette() {
    static QPalette palette = QApplication::palette();
    return palette;
}

}  // namespace

void apply_theme(ThemeMode mode) {
    const QPalette& system = system_palette();  // taken before the first change
    QApplication::setStyle(QStyleFactory::create("Fusion"));
    bool dark = mode == ThemeMode::Dark;
    if (mode == ThemeMode::System) dark = system.color(QPalette::Window).lightness() < 128;
    g_dark = dark;
    QApplication::setPalette(dark ? dark_palette() : QApplication::style()->standardPalette());
}

bool theme_is_dark() { return g_dark; }

ThemeMode theme_from_string(const QString& name) {
    if (name == "light") return ThemeMode::Light;
    if (name == "dark") return ThemeMode::Dark;
    return ThemeMode::System;
}

QString theme_to_string(ThemeMode mode) {
    switch (mode) {
        case ThemeMode::Light: return "light";
        case ThemeMode::Dark: return "dark";
        case ThemeMode::System: break;
    }
    return "system";
}

}  // namespace folio::ui
