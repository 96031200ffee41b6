// Markdown as a chat reader expects it. CommonMark joins the lines of a
// paragraph into one ("Roses are red\nViolets are blue" renders as one
// line), but a model's reply, like a chat message, means each line break:
// poems, addresses, lists typed without blank lines. chat_markdown() makes
// every single line break inside a paragraph a hard one; fenced code is
// left as it is.
#pragma once

#include <QString>

namespace folio::ui {

QString chat_markdown(const QString& text);

}  // namespace folio::ui
