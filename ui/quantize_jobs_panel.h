// The Jobs panel: every quantization job of this session as a card (newest
// last), following the QuantizeQueue's signals; a card's Cancel goes to the
// queue, its Load to the window (the same path as Model > Open).
#pragma once

#include <QHash>
#include <QWidget>

class QLabel;
class QScrollArea;
class QVBoxLayout;

namespace folio::ui {

class QuantizeJobCard;
class QuantizeQueue;

class QuantizeJobsPanel : public QWidget {
    Q_OBJECT
public:
    explicit QuantizeJobsPanel(QuantizeQueue* queue, QWidget* parent = nullptr);

    QuantizeJobCard* card(quint64 id) const { return cards_.value(id); }
    int cardCount() const { return static_cast<int>(cards_.size()); }

signals:
    void loadRequested(const QString& path);
    void useAsDraftRequested(const QString& source, const QString& output);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void addCard(quint64 id);

    QuantizeQueue* queue_;
    QHash<quint64, QuantizeJobCard*> cards_;
    QScrollArea* scroll_ = nullptr;
    QVBoxLayout* list_ = nullptr;
    QLabel* empty_ = nullptr;
};

}  // namespace folio::ui
