// Shared by the studio's GUI suites: a fresh data folder per window (so a
// test never reads another's sessions or settings), waiting for a model, and
// screenshots.
#pragma once

#include <QDir>
#include <QImage>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <memory>

#include "ui/engine_bridge.h"
#include "ui/main_window.h"
#include "ui/resources.h"

namespace folio_gui_test {

// Points FOLIO_STUDIO_DATA at a new temporary folder for as long as it lives.
struct DataDir {
    QTemporaryDir dir;
    DataDir() { qputenv("FOLIO_STUDIO_DATA", dir.path().toLocal8Bit()); }
    QString path() const { return dir.path(); }
};

// A main window on `model`, waited for until the model is loaded (or failed).
inline std::unique_ptr<folio::ui::MainWindow> open_window(const QString& model, int timeout_ms = 60000) {
    folio::ui::MainWindowOptions options;
    options.model = model;
    auto window = std::make_unique<folio::ui::MainWindow>(options);
    window->resize(1280, 860);
    window->show();
    QElapsedTimer t;
    t.start();
    while (!window->bridge()->isLoaded() && window->lastError().isEmpty() && t.elapsed() < timeout_ms)
        QTest::qWait(20);
    return window;
}

#ifdef FOLIO_SCREENSHOT_DIR
// Screenshots for review: FOLIO_SCREENSHOT_DIR (environment) overrides the
// build tree's folder (the suites that take them define the macro).
inline QString screenshot_dir() {
    const QString env = qEnvironmentVariable("FOLIO_SCREENSHOT_DIR");
    const QString dir = env.isEmpty() ? QString(FOLIO_SCREENSHOT_DIR) : env;
    QDir().mkpath(dir);
    return dir;
}

inline bool save(QWidget* widget, const QString& name) {
    const QString path = screenshot_dir() + "/" + name;
    const QImage image = widget->grab().toImage();
    const bool ok = !image.isNull() && image.save(path, "PNG");
    qInfo("screenshot %s: %dx%d %s", qPrintable(path), image.width(), image.height(), ok ? "written" : "FAILED");
    return ok;
}
#endif

}  // namespace folio_gui_test
