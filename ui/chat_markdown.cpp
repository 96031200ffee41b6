#include "ui/chat_markdown.h"

#include <QStringList>

namespace folio::ui {

QString chat_markdown(const QString& text) {
    QStringList lines = text.split('\n');
    bool in_fence = false;
    for (qsizetype i = 0; i < lines.size(); ++i) {
        const QString trimmed = lines[i].trimmed();
        if (trimmed.startsWith("```") || trimmed.startsWith("~~~")) {
            in_fence = !in_fence;
            continue;
        }
        const bool last = i + 1 == lines.size();
        if (in_fence || last || trimmed.isEmpty() || lines[i + 1].trimmed().isEmpty()) continue;
        // A line already ending in a hard break (two spaces or a backslash) stays as it is.
        if (lines[i].endsWith("  ") || lines[i].endsWith('\\')) continue;
        // Table rows break on their own; a break inside one would split the table.
        if (trimmed.startsWith('|')) continue;
        lines[i] += QStringLiteral("  ");
    }
    return lines.join('\n');
}

}  // namespace folio::ui
