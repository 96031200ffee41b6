// The model library over a folder of real models and broken ones: the
// SmolLM2 GGUF (Q4_1) and its Hugging Face folder, Gemma 3 (Q4_K_M), a tiny
// GGUF of an architecture Folio does not run, a damaged GGUF, a text file
// named .gguf and a file that is no model at all; plus ~/models (a fake
// home) holding a Folio-style quantization that records its source, and a
// Hugging Face cache snapshot. The scan runs off the UI thread; each model
// gets its row with the right columns, quantized ones under their source
// (recorded, or by name), unsupported and damaged files say so in their row
// and are not loaded; search filters (children keep their source shown),
// sorting orders by the numbers, the memory column follows the engine
// settings, Load (and a double click) loads, Quantize opens the dialog on
// the row's model. Screenshots at 1500x950 and 1024x700.
#include <QAction>
#include <QApplication>
#include <QMouseEvent>
#include <QDockWidget>
#include <QFile>
#include <QHeaderView>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTreeView>

#include <cstring>

#include "folio/gguf.h"
#include "folio_test.h"
#include "gui_test_support.h"
#include "ui/library_model.h"
#include "ui/library_panel.h"
#include "ui/library_scan.h"
#include "ui/model_library.h"
#include "ui/quantize_dialog.h"

using namespace folio::ui;

namespace {

QString models_dir() {
    const QString env = qEnvironmentVariable("FOLIO_MODELS_DIR");
    return env.isEmpty() ? QString(FOLIO_SOURCE_DIR) + "/models" : env;
}

bool write_file(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

// A GGUF that parses but whose architecture Folio has no graph for.
folio::Status write_unsupported_gguf(const QString& path) {
    folio::GgufWriter w;
    w.set("general.architecture", folio::GgufValue::string("gpt2"));
    w.set("general.name", folio::GgufValue::string("tiny gpt2"));
    w.set("gpt2.block_count", folio::GgufValue::u32(1));
    w.set("gpt2.context_length", folio::GgufValue::u32(64));
    w.set("gpt2.embedding_length", folio::GgufValue::u32(8));
    w.set("gpt2.attention.head_count", folio::GgufValue::u32(2));
    std::vector<std::byte> weights(8 * 16 * sizeof(float));
    if (auto ok = w.add_tensor("token_embd.weight", folio::TensorType::F32, {8, 16}, std::move(weights)); !ok) return ok;
    return w.write(path.toStdString());
}

// The SmolLM2 file again under another name, recording (as Folio's quantizer does) the folder it came from.
folio::Status write_recorded_child(const QString& from, const QString& path, const QString& source) {
    auto file = folio::GgufFile::open(from.toStdString());
    if (!file) return file.error();
    folio::GgufWriter w(file->alignment());
    for (const folio::GgufKeyValue& kv : file->metadata()) w.set(kv.key, kv.value);
    w.set("folio.quantize.source", folio::GgufValue::string(source.toStdString()));
    for (const folio::GgufTensorInfo& t : file->tensors())
        if (auto ok = w.add_tensor(t.name, *t.type(), t.shape, std::span<const std::byte>(t.data, t.nbytes)); !ok) return ok;
    return w.write(path.toStdString());
}

const LibraryEntry* find_entry(const ModelLibrary& library, const QString& name) {
    for (const LibraryEntry& e : library.entries())
        if (e.name == name) return &e;
    return nullptr;
}

QString cell(LibraryPanel* panel, const QString& path, int column) {
    const QModelIndex at = panel->model()->indexForPath(path);
    return panel->model()->data(at.siblingAtColumn(column)).toString();
}

QStringList top_names(QSortFilterProxyModel* proxy) {
    QStringList out;
    for (int r = 0; r < proxy->rowCount(); ++r) out << proxy->index(r, LibraryModel::Name).data().toString();
    return out;
}

}  // namespace

class LibraryTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { init_resources(); }

    void names_and_base_names() {
        QCOMPARE(library_base_name("SmolLM2-135M-Instruct.Q4_1.gguf"), QString("smollm2-135m-instruct"));
        QCOMPARE(library_base_name("SmolLM2-135M-Instruct-hf.Q4_K_M.gguf"), QString("smollm2-135m-instruct"));
        QCOMPARE(library_base_name("SmolLM2-135M-Instruct-hf"), QString("smollm2-135m-instruct"));
        QCOMPARE(library_base_name("gemma-3-270m-q4_k_m.gguf"), QString("gemma-3-270m"));
        QCOMPARE(library_base_name("Llama-3-8B-F16.gguf"), QString("llama-3-8b"));
        QCOMPARE(library_base_name("q4_0.gguf"), QString("q4_0"));  // never stripped to nothing
    }

    void library_lists_scans_filters_sorts_and_loads() {
        const QString smol = models_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
        const QString hf = models_dir() + "/SmolLM2-135M-Instruct-hf";
        const QString gemma = models_dir() + "/gemma-3-270m-q4_k_m.gguf";
        if (!QFileInfo::exists(smol) || !QFileInfo::exists(hf + "/config.json") || !QFileInfo::exists(gemma)) {
            if (qEnvironmentVariableIntValue("FOLIO_REQUIRE_MODELS")) QFAIL("test models missing (models/)");
            QSKIP("test models missing (models/)");
        }
        folio_gui_test::DataDir data;
        QTemporaryDir home, lib;
        const QByteArray old_home = qgetenv("HOME");
        qputenv("HOME", home.path().toLocal8Bit());

        QVERIFY(QFile::link(smol, lib.path() + "/SmolLM2-135M-Instruct.Q4_1.gguf"));
        QVERIFY(QFile::link(hf, lib.path() + "/SmolLM2-135M-Instruct-hf"));
        QVERIFY(QFile::link(gemma, lib.path() + "/gemma-3-270m-q4_k_m.gguf"));
        QVERIFY(write_unsupported_gguf(lib.path() + "/tiny-gpt2.gguf").ok());
        QByteArray damaged("GGUF\x03\x00\x00\x00", 8);
        damaged += QByteArray(8, '\xff') + QByteArray(64, '\x41');  // a tensor count no file holds
        QVERIFY(write_file(lib.path() + "/broken.gguf", damaged));
        QVERIFY(write_file(lib.path() + "/readme.gguf", "These are my models.\n"));
        QVERIFY(write_file(lib.path() + "/notes.txt", "not a model\n"));
        QVERIFY(QDir(lib.path()).mkpath("tokenizer-only"));
        QVERIFY(write_file(lib.path() + "/tokenizer-only/config.json", "{}"));  // no weights: not a model
        // Hugging Face folders: a model type Folio has no graph for, and a config.json that is not JSON.
        QVERIFY(QDir(lib.path()).mkpath("mamba-hf"));
        QVERIFY(write_file(lib.path() + "/mamba-hf/config.json", R"({"model_type": "mamba"})"));
        QVERIFY(write_file(lib.path() + "/mamba-hf/model.safetensors", QByteArray(16, '\0')));
        QVERIFY(QDir(lib.path()).mkpath("broken-hf"));
        QVERIFY(write_file(lib.path() + "/broken-hf/config.json", "{not json"));
        QVERIFY(write_file(lib.path() + "/broken-hf/model.safetensors", QByteArray(16, '\0')));

        // ~/models: a quantization that records its source; the Hugging Face cache: a snapshot.
        QVERIFY(QDir(home.path()).mkpath("models"));
        const QString child = home.path() + "/models/my-finetune.gguf";
        QVERIFY(write_recorded_child(smol, child, lib.path() + "/SmolLM2-135M-Instruct-hf").ok());
        const QString snapshot = home.path() + "/.cache/huggingface/hub/models--HuggingFaceTB--SmolLM2-135M-Instruct/snapshots/0123abcd";
        QVERIFY(QDir().mkpath(snapshot));
        for (const QString& f : QDir(hf).entryList(QDir::Files)) QVERIFY(QFile::link(hf + "/" + f, snapshot + "/" + f));

        MainWindowOptions options;
        options.load_model = false;
        auto w = std::make_unique<MainWindow>(options);
        w->resize(1500, 950);
        w->show();
        ModelLibrary* library = w->library();
        LibraryPanel* panel = w->libraryPanel();
        QCOMPARE(library->standardFolders(), (QStringList{home.path() + "/models", home.path() + "/.cache/huggingface/hub"}));
        library->addFolder(lib.path());

        // The scan runs on its own thread: the UI thread's timer keeps its pace meanwhile.
        QElapsedTimer since;
        since.start();
        library->rescan();
        QVERIFY2(since.elapsed() < 100, qPrintable(QString::number(since.elapsed())));
        QVERIFY(library->isScanning());
        QVERIFY(library->entries().isEmpty());
        qint64 worst_gap = 0, last = since.elapsed();
        QTimer pace;
        connect(&pace, &QTimer::timeout, this, [&] {
            worst_gap = std::max(worst_gap, since.elapsed() - last);
            last = since.elapsed();
        });
        pace.start(20);
        QTRY_VERIFY_WITH_TIMEOUT(!library->isScanning(), 60000);
        pace.stop();
        qInfo("library scan: %lld ms, the UI timer's longest gap %lld ms", since.elapsed(), worst_gap);
        QVERIFY2(worst_gap < 500, qPrintable(QString::number(worst_gap)));

        // One row per model; notes.txt and the folder without weights are not models.
        QStringList names;
        for (const LibraryEntry& e : library->entries()) names << e.name;
        names.sort();
        QCOMPARE(names, (QStringList{"HuggingFaceTB/SmolLM2-135M-Instruct", "SmolLM2-135M-Instruct-hf",
                                     "SmolLM2-135M-Instruct.Q4_1.gguf", "broken-hf", "broken.gguf",
                                     "gemma-3-270m-q4_k_m.gguf", "mamba-hf", "my-finetune.gguf", "readme.gguf",
                                     "tiny-gpt2.gguf"}));
        const QString q4 = lib.path() + "/SmolLM2-135M-Instruct.Q4_1.gguf";
        const QString folder = lib.path() + "/SmolLM2-135M-Instruct-hf";

        // Columns of a ready GGUF, against the file itself.
        auto file = folio::GgufFile::open(smol.toStdString());
        QVERIFY(file.ok());
        uint64_t parameters = 0;
        for (const folio::GgufTensorInfo& t : file->tensors()) parameters += static_cast<uint64_t>(t.n_elements());
        QCOMPARE(cell(panel, q4, LibraryModel::Name), QString("SmolLM2-135M-Instruct.Q4_1.gguf"));
        QCOMPARE(cell(panel, q4, LibraryModel::Architecture), QString("llama"));
        QCOMPARE(cell(panel, q4, LibraryModel::Parameters), format_count(parameters));
        const QString mix = cell(panel, q4, LibraryModel::Quantization);
        QVERIFY2(mix.contains("Q4_1 ") && mix.contains('%'), qPrintable(mix));
        QCOMPARE(mix, quantization_text(find_entry(*library, "SmolLM2-135M-Instruct.Q4_1.gguf")->summary));
        QCOMPARE(cell(panel, q4, LibraryModel::Size), format_bytes(static_cast<uint64_t>(QFileInfo(smol).size())));
        QCOMPARE(cell(panel, q4, LibraryModel::Context), QString("%1 K").arg(*file->get_u32("llama.context_length") / 1024));
        QCOMPARE(cell(panel, q4, LibraryModel::Fits), QString("yes"));
        QCOMPARE(cell(panel, q4, LibraryModel::Status), QString("ready"));
        // The Hugging Face folder: its config's facts, BF16/F32 weights, the size of its files.
        QCOMPARE(cell(panel, folder, LibraryModel::Architecture), QString("llama"));
        QVERIFY(cell(panel, folder, LibraryModel::Parameters).endsWith(" M"));
        QVERIFY(!cell(panel, folder, LibraryModel::Quantization).startsWith("Q"));
        QVERIFY(find_entry(*library, "SmolLM2-135M-Instruct-hf")->size_bytes > 500'000'000);
        QVERIFY(!panel->model()->indexForPath(lib.path() + "/notes.txt").isValid());
        QCOMPARE(cell(panel, lib.path() + "/gemma-3-270m-q4_k_m.gguf", LibraryModel::Architecture), QString("gemma3"));

        // Quantized children under their source: by the recorded source, and by name.
        const QModelIndex folder_row = panel->model()->indexForPath(folder);
        QVERIFY(!folder_row.parent().isValid());
        QCOMPARE(panel->model()->rowCount(folder_row), 2);
        QStringList children;
        for (int r = 0; r < 2; ++r) children << panel->model()->index(r, 0, folder_row).data().toString();
        children.sort();
        QCOMPARE(children, (QStringList{"SmolLM2-135M-Instruct.Q4_1.gguf", "my-finetune.gguf"}));
        QCOMPARE(find_entry(*library, "my-finetune.gguf")->recorded_source, QFileInfo(folder).canonicalFilePath());
        QVERIFY(!panel->model()->indexForPath(lib.path() + "/gemma-3-270m-q4_k_m.gguf").parent().isValid());
        QVERIFY(!panel->model()->indexForPath(snapshot).parent().isValid());

        // Unsupported and damaged files say so in their rows.
        const QString gpt2 = cell(panel, lib.path() + "/tiny-gpt2.gguf", LibraryModel::Status);
        QVERIFY2(gpt2.startsWith("unsupported: architecture 'gpt2' is not supported"), qPrintable(gpt2));
        QCOMPARE(cell(panel, lib.path() + "/tiny-gpt2.gguf", LibraryModel::Architecture), QString("gpt2"));
        const QString broken = cell(panel, lib.path() + "/broken.gguf", LibraryModel::Status);
        QVERIFY2(broken.startsWith("error: "), qPrintable(broken));
        QCOMPARE(cell(panel, lib.path() + "/broken.gguf", LibraryModel::Fits), QString("—"));
        const QString readme = cell(panel, lib.path() + "/readme.gguf", LibraryModel::Status);
        QVERIFY2(readme.startsWith("error: ") && readme.contains("not a GGUF file"), qPrintable(readme));
        const QString mamba = cell(panel, lib.path() + "/mamba-hf", LibraryModel::Status);
        QVERIFY2(mamba.startsWith("unsupported: ") && mamba.contains("mamba"), qPrintable(mamba));
        QCOMPARE(cell(panel, lib.path() + "/mamba-hf", LibraryModel::Architecture), QString("mamba"));
        QVERIFY(cell(panel, lib.path() + "/broken-hf", LibraryModel::Status).startsWith("error: "));

        // The memory column follows the engine settings.
        EngineSettings huge;
        huge.kv_budget_mib = uint64_t(1) << 30;  // 1 PiB of KV cache
        panel->setEngineSettings(huge);
        // The tooltip gives the numbers, MemAvailable among them (it was never read before this test).
        const QString fits_tip = panel->model()->data(panel->model()->indexForPath(q4).siblingAtColumn(LibraryModel::Fits), Qt::ToolTipRole).toString();
        QVERIFY2(fits_tip.contains("available") && fits_tip.contains("will not fit"), qPrintable(fits_tip));
        QCOMPARE(cell(panel, q4, LibraryModel::Fits), QString("no"));
        panel->setEngineSettings(EngineSettings{});
        QCOMPARE(cell(panel, q4, LibraryModel::Fits), QString("yes"));

        // Search: name, architecture, quantization, status word; a matching child keeps its source shown.
        w->findChild<QAction*>("libraryAction")->trigger();
        QVERIFY(panel->isVisible());
        QTRY_VERIFY(panel->height() >= w->height() / 3);  // room for more than a few rows
        QSortFilterProxyModel* proxy = panel->proxy();
        const int all = proxy->rowCount();
        QCOMPARE(all, 8);  // 10 models, 2 of them children
        QTest::keyClicks(panel->search(), "gemma");
        QCOMPARE(top_names(proxy), QStringList{"gemma-3-270m-q4_k_m.gguf"});
        panel->search()->setText("finetune");
        QCOMPARE(top_names(proxy), QStringList{"SmolLM2-135M-Instruct-hf"});
        QCOMPARE(proxy->rowCount(proxy->index(0, 0)), 1);
        panel->search()->setText("unsupported");
        QCOMPARE(top_names(proxy), (QStringList{"mamba-hf", "tiny-gpt2.gguf"}));
        panel->search()->clear();
        QCOMPARE(proxy->rowCount(), all);

        // Sort: by size, largest first (numbers, not their text); by name.
        panel->view()->header()->setSortIndicator(LibraryModel::Size, Qt::DescendingOrder);
        QCOMPARE(proxy->sortColumn(), int(LibraryModel::Size));
        for (int r = 1; r < proxy->rowCount(); ++r)
            QVERIFY(proxy->index(r - 1, LibraryModel::Size).data(LibraryModel::SortRole).toULongLong() >=
                    proxy->index(r, LibraryModel::Size).data(LibraryModel::SortRole).toULongLong());
        QCOMPARE(proxy->index(proxy->rowCount() - 1, LibraryModel::Name).data().toString(), QString("readme.gguf"));
        panel->view()->header()->setSortIndicator(LibraryModel::Name, Qt::AscendingOrder);
        QStringList sorted = top_names(proxy), expected = sorted;
        std::sort(expected.begin(), expected.end(), [](const QString& a, const QString& b) { return a.compare(b, Qt::CaseInsensitive) < 0; });
        QCOMPARE(sorted, expected);

        QVERIFY(folio_gui_test::save(w.get(), "library-1500x950.png"));
        QVERIFY(folio_gui_test::save(panel, "library-panel.png"));

        // An unsupported row is not loaded: its row says why, the Load button is off.
        QVERIFY(panel->selectPath(lib.path() + "/tiny-gpt2.gguf"));
        QVERIFY(!panel->findChild<QPushButton*>("libraryLoad")->isEnabled());
        emit panel->view()->activated(panel->view()->currentIndex());
        QVERIFY2(panel->statusText().contains("cannot be loaded") && panel->statusText().contains("gpt2"), qPrintable(panel->statusText()));
        QVERIFY(!w->bridge()->isLoading());
        QVERIFY(w->lastError().isEmpty());
        QVERIFY(panel->selectPath(lib.path() + "/broken.gguf"));
        QVERIFY(!panel->findChild<QPushButton*>("libraryQuantize")->isEnabled());

        // Quantize to INT4 from a row: the dialog on that model, its output beside it.
        QVERIFY(panel->selectPath(folder));
        panel->findChild<QPushButton*>("libraryQuantize")->click();
        QVERIFY(w->quantizeDialog() != nullptr);
        QCOMPARE(w->quantizeDialog()->outputPath(), folder + ".Q4_K_M.gguf");
        w->quantizeDialog()->reject();
        QTRY_VERIFY(w->quantizeDialog() == nullptr);

        // A model that will not fit with the engine settings: Load asks first (window-modal); No loads nothing.
        EngineSettings normal = w->bridge()->settings();
        w->bridge()->setSettings(huge);
        QVERIFY(panel->selectPath(q4));
        panel->findChild<QPushButton*>("libraryLoad")->click();
        QTRY_VERIFY_WITH_TIMEOUT(w->memoryQuestion() != nullptr, 20000);
        QVERIFY2(w->memoryQuestion()->text().contains("will not fit"), qPrintable(w->memoryQuestion()->text()));
        w->memoryQuestion()->button(QMessageBox::No)->click();
        QTRY_VERIFY(w->memoryQuestion() == nullptr);
        QTest::qWait(100);
        QVERIFY(!w->bridge()->isLoaded() && !w->bridge()->isLoading());
        w->bridge()->setSettings(normal);

        // Load: the row's model becomes the loaded one; a double click does the same.
        QVERIFY(panel->selectPath(q4));
        QVERIFY(panel->findChild<QPushButton*>("libraryLoad")->isEnabled());
        panel->findChild<QPushButton*>("libraryLoad")->click();
        QTRY_VERIFY_WITH_TIMEOUT(w->bridge()->isLoaded() || !w->lastError().isEmpty(), 60000);
        QVERIFY2(w->lastError().isEmpty(), qPrintable(w->lastError()));
        QCOMPARE(QFileInfo(w->bridge()->model().path).fileName(), QString("SmolLM2-135M-Instruct.Q4_1.gguf"));
        QVERIFY(panel->selectPath(child));
        const QModelIndex child_row = panel->view()->currentIndex();
        QVERIFY(child_row.parent().isValid());
        // A double click loads too. As a window system delivers it: press, release, then the double-click
        // press and its release (QTest::mouseDClick sends no release before the double click, which an
        // item view, still drag-selecting, ignores).
        QWidget* viewport = panel->view()->viewport();
        const QPoint at = panel->view()->visualRect(child_row).center();
        QTest::mouseClick(viewport, Qt::LeftButton, {}, at);
        QMouseEvent dbl(QEvent::MouseButtonDblClick, QPointF(at), QPointF(viewport->mapToGlobal(at)), Qt::LeftButton,
                        Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(viewport, &dbl);
        QTest::mouseRelease(viewport, Qt::LeftButton, {}, at);
        QTRY_VERIFY2_WITH_TIMEOUT(
            (QFileInfo(w->bridge()->model().path).fileName() == "my-finetune.gguf" && w->bridge()->isLoaded()) ||
                !w->lastError().isEmpty(),
            qPrintable(panel->statusText() + " | " + w->bridge()->model().path), 60000);
        QVERIFY2(w->lastError().isEmpty(), qPrintable(w->lastError()));

        w->resize(1024, 700);
        QTRY_VERIFY(w->isCompact());
        w->findChild<QAction*>("libraryAction")->trigger();
        QTest::qWait(100);
        QVERIFY(folio_gui_test::save(w.get(), "library-1024x700.png"));

        w->close();
        w.reset();
        qputenv("HOME", old_home);
    }
};

QTEST_MAIN(LibraryTest)
#include "test_library.moc"
