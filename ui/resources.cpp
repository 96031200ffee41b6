#include "ui/resources.h"

#include <QtCore/qglobal.h>

// Q_INIT_RESOURCE must be used from the global namespace.
static void init_folio_resources() { Q_INIT_RESOURCE(folio); }

namespace folio::ui {
void init_resources() { init_folio_resources(); }

QIcon studio_icon(const char* name) {
    return QIcon(QStringLiteral(":/icons/%1.%2").arg(QLatin1String(name), QLatin1String(FOLIO_ICON_FORMAT)));
}
}  // namespace folio::ui
