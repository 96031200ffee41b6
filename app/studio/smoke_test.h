// `folio-studio --smoke-test PNG`: an unattended check that an installed
// studio works (packaging/linux/test-install.sh): once the model is loaded and
// the --chat message has its reply, the window is saved to PNG and the studio
// quits with 0; a failed load or reply, or no reply within the time limit,
// quits with 1 and says why on stderr.
#pragma once

#include <QString>

namespace folio::ui {
class MainWindow;
}

void start_smoke_test(folio::ui::MainWindow& window, const QString& png_path, int timeout_s = 300);
