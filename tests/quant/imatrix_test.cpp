// The importance matrix: collected on a small model (every layer matrix,
// x^2 summed per column, the rows counted), written in llama.cpp's imatrix
// GGUF layout and read back, and used by the quantizer (different bytes,
// recorded in the metadata; a matrix for another model is refused).
#include <cmath>
#include <cstring>
#include <fstream>

#include "folio/gguf.h"
#include "folio/imatrix.h"
#include "folio/quantize_job.h"
#include "folio_test.h"
#include "quant_fixture.h"

using namespace folio;
using quant_fixture::temp_path;

class ImatrixTest : public QObject {
    Q_OBJECT
private:
    std::string source_ = temp_path("imatrix-tiny-llama.gguf");
    std::string text_ = std::string(200, 'x');

private slots:
    void initTestCase() {
        QVERIFY(quant_fixture::write_dummy_gguf("tiny-llama", source_).ok());
        text_.clear();
        for (int i = 0; i < 100; ++i) text_ += "calibration words " + std::to_string(i * 7) + ", ";
    }
    void cleanupTestCase() { std::filesystem::remove(source_); }

    void collectsEveryLayerMatrix() {
        auto model = load_model_description(source_);
        QVERIFY(model.ok());
        ImatrixOptions options;
        options.n_ctx = 64;
        options.n_chunks = 3;
        options.threads = 2;
        options.dataset_name = "test text";
        auto m = collect_imatrix(*model, text_, options);
        QVERIFY2(m.ok(), m.ok() ? "" : m.error().message.c_str());
        QCOMPARE(m->chunk_count, 3u);
        QCOMPARE(m->chunk_size, 64u);
        QCOMPARE(m->entries.size(), size_t(2 * 7));  // q k v o gate up down, two layers
        for (const auto& [name, e] : m->entries) {
            QVERIFY2(name.rfind("blk.", 0) == 0, name.c_str());
            QCOMPARE(e.count, 3.0f * 64);
            const TensorView* t = model->find_tensor(name);
            QVERIFY(t != nullptr);
            QCOMPARE(int64_t(e.sums.size()), t->shape[0]);
            for (float v : e.sums) QVERIFY(v > 0 && std::isfinite(v));
        }
        // Q, K and V read the same normed input, as gate and up do.
        QVERIFY(m->entries["blk.0.attn_q.weight"].sums == m->entries["blk.0.attn_k.weight"].sums);
        QVERIFY(m->entries["blk.1.ffn_gate.weight"].sums == m->entries["blk.1.ffn_up.weight"].sums);
        QVERIFY(m->entries["blk.0.attn_q.weight"].sums != m->entries["blk.0.attn_output.weight"].sums);
        auto w = m->weights_for("blk.0.ffn_down.weight", 512);
        QVERIFY(w.ok());
        QCOMPARE((*w)[5], m->entries["blk.0.ffn_down.weight"].sums[5] / (3.0f * 64));
        QVERIFY(!m->weights_for("blk.0.ffn_down.weight", 256).ok());  // another model's width
        QVERIFY(m->weights_for("output.weight", 256)->empty());
    }

    void fileIsLlamaCppsLayoutAndReadsBack() {
        ImportanceMatrix m;
        m.datasets = {"some.txt"};
        m.chunk_count = 5;
        m.chunk_size = 512;
        m.entries["blk.0.attn_q.weight"] = {{1.0f, 2.5f, 0.0f, 4.0f}, 2560.0f};
        m.entries["blk.0.ffn_down.weight"] = {{3.0f, 1.0f}, 2560.0f};
        const std::string path = temp_path("layout.imatrix.gguf");
        QVERIFY(m.write(path).ok());
        auto file = GgufFile::open(path);
        QVERIFY(file.ok());
        QCOMPARE(*file->get_string("general.type"), std::string("imatrix"));
        QCOMPARE(*file->get_u32("imatrix.chunk_count"), 5u);
        QCOMPARE(*file->get_u32("imatrix.chunk_size"), 512u);
        QCOMPARE(file->get_string_array("imatrix.datasets")->front(), std::string("some.txt"));
        const GgufTensorInfo* sums = file->find_tensor("blk.0.attn_q.weight.in_sum2");
        const GgufTensorInfo* counts = file->find_tensor("blk.0.attn_q.weight.counts");
        QVERIFY(sums && counts);
        QVERIFY(sums->shape == (std::vector<int64_t>{4, 1}));
        QVERIFY(counts->shape == (std::vector<int64_t>{1, 1}));
        QCOMPARE(sums->ggml_type, 0u);
        auto back = ImportanceMatrix::read(path);
        QVERIFY2(back.ok(), back.ok() ? "" : back.error().message.c_str());
        QCOMPARE(back->entries.size(), size_t(2));
        QVERIFY(back->entries["blk.0.attn_q.weight"].sums == m.entries["blk.0.attn_q.weight"].sums);
        QCOMPARE(back->entries["blk.0.ffn_down.weight"].count, 2560.0f);
        QCOMPARE(back->chunk_count, 5u);
        std::filesystem::remove(path);

        // Not an imatrix: a clear error.
        auto model_file = ImportanceMatrix::read(source_);
        QVERIFY(!model_file.ok());
        QVERIFY2(model_file.error().message.find("not an importance matrix") != std::string::npos,
                 model_file.error().message.c_str());
    }

    void quantizerUsesTheMatrixAndRecordsIt() {
        auto model = load_model_description(source_);
        QVERIFY(model.ok());
        ImatrixOptions options;
        options.n_ctx = 64;
        options.n_chunks = 2;
        options.threads = 2;
        options.dataset_name = "test text";
        auto m = collect_imatrix(*model, text_, options);
        QVERIFY(m.ok());
        const std::string imatrix = temp_path("tiny.imatrix.gguf");
        QVERIFY(m->write(imatrix).ok());
        auto run = [&](const std::string& matrix, const std::string& out) {
            QuantizeOptions q;
            q.source = source_;
            q.output = out;
            q.threads = 2;
            q.imatrix_path = matrix;
            return QuantizeJob(q).run();
        };
        const std::string plain = temp_path("plain.gguf"), weighted = temp_path("weighted.gguf");
        auto a = run("", plain);
        auto b = run(imatrix, weighted);
        QVERIFY(a.ok() && b.ok());
        auto fa = GgufFile::open(plain);
        auto fb = GgufFile::open(weighted);
        QVERIFY(fa.ok() && fb.ok());
        QCOMPARE(*fb->get_u32("quantize.imatrix.entries_count"), 14u);
        QCOMPARE(*fb->get_u32("quantize.imatrix.chunks_count"), 2u);
        QCOMPARE(*fb->get_string("quantize.imatrix.dataset"), std::string("test text"));
        QVERIFY(!fa->has("quantize.imatrix.file"));
        const GgufTensorInfo* x = fa->find_tensor("blk.0.ffn_gate.weight");
        const GgufTensorInfo* y = fb->find_tensor("blk.0.ffn_gate.weight");
        QCOMPARE(x->ggml_type, y->ggml_type);
        QVERIFY(std::memcmp(x->data, y->data, x->nbytes) != 0);

        // A matrix of another width is refused, and nothing is left.
        ImportanceMatrix wrong = *m;
        wrong.entries["blk.0.ffn_gate.weight"].sums.resize(128);
        const std::string wrong_path = temp_path("wrong.imatrix.gguf"), out = temp_path("wrong.gguf");
        QVERIFY(wrong.write(wrong_path).ok());
        auto c = run(wrong_path, out);
        QVERIFY(!c.ok());
        QVERIFY2(c.error().message.find("blk.0.ffn_gate.weight") != std::string::npos, c.error().message.c_str());
        QVERIFY(!quant_fixture::exists(out) && !quant_fixture::exists(out + ".tmp"));
        for (const auto* r : {&a, &b}) std::filesystem::remove((*r)->report_path);
        for (const std::string& p : {imatrix, plain, weighted, wrong_path}) std::filesystem::remove(p);
    }
};

FOLIO_TEST_MAIN(ImatrixTest)
#include "imatrix_test.moc"
