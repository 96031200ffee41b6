// AWQ: the folded scales leave the full-precision model's function as it was
// (llama and gemma3; leaving out either fold breaks it), the alpha search
// finds the scale an outlier channel asks for and lowers the output error,
// and a QuantizeJob with awq writes a file that loads, runs and records it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "folio/backend.h"
#include "folio/generate.h"
#include "folio/gguf.h"
#include "folio/quantize_job.h"
#include "folio_test.h"
#include "quant/awq.h"
#include "quant_fixture.h"

using namespace folio;
using quant_fixture::temp_path;

namespace {

enum class Fold { Both, ColumnsOnly, NoMatrixRows };

// Random scales (log-uniform in [1/4, 4]) for every AWQ group of `model`,
// folded as the job folds them, or with a fold left out.
quant::AwqFolds random_folds(const ModelDescription& model, Fold fold, uint64_t seed) {
    std::vector<std::string> skipped;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> log_scale(std::log(0.25f), std::log(4.0f));
    quant::AwqFolds folds;
    for (const quant::AwqGroup& g : quant::awq_groups(model, skipped)) {
        const TensorView* first = model.find_tensor(g.members.front());
        std::vector<float> s(size_t(first->shape[0]));
        for (float& v : s) v = std::exp(log_scale(rng));
        s = g.tie(s);  // V -> attn_output: the heads that read one V row share its scale
        for (const std::string& m : g.members) folds.scale_columns(m, s);
        const bool is_norm = g.producer.find("_norm.") != std::string::npos;
        if (fold == Fold::Both || (fold == Fold::NoMatrixRows && is_norm)) folds.divide_rows(g.producer, g.producer_scales(s));
    }
    return folds;
}

// Writes the dummy `shape` with `folds` applied to its F32 tensors.
Status write_folded(const std::string& shape, const ModelDescription& source, const quant::AwqFolds& folds,
                    const std::string& path) {
    Status status;
    Status written = quant_fixture::write_dummy_gguf(shape, path, [&](const std::string& name, std::vector<std::byte>& bytes) {
        const TensorView* t = source.find_tensor(name);
        if (!t || t->type != TensorType::F32) return;
        std::vector<float> values(bytes.size() / 4);
        std::memcpy(values.data(), bytes.data(), bytes.size());
        if (Status s = folds.apply(name, t->shape, values); !s) status = s;
        std::memcpy(bytes.data(), values.data(), bytes.size());
    });
    return written ? status : written;
}

Result<std::vector<float>> all_logits(const std::string& path, const std::vector<int32_t>& tokens) {
    auto model = load_model_description(path);
    if (!model) return model.error();
    BackendOptions options;
    options.n_threads = 2;
    options.max_context = 256;
    auto backend = create_backend(*model, options);
    if (!backend) return backend.error();
    SequenceRunner runner(**backend);
    std::vector<float> logits;
    if (Status s = runner.append(tokens, logits, /*all_logits=*/true); !s) return s.error();
    return logits;
}

// max |a - b| relative to max |a|.
double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
        scale = std::max(scale, std::fabs(double(a[i])));
    }
    return diff / std::max(scale, 1e-30);
}

}  // namespace

class AwqTest : public QObject {
    Q_OBJECT

    void check_fold_is_exact(const std::string& shape) {
        const std::string source = temp_path("awq-src-" + shape + ".gguf");
        QVERIFY(quant_fixture::write_dummy_gguf(shape, source).ok());
        auto model = load_model_description(source);
        QVERIFY(model.ok());
        std::vector<std::string> skipped;
        QCOMPARE(quant::awq_groups(*model, skipped).size(), size_t(4 * model->hparams.n_layer));
        QVERIFY(skipped.empty());
        std::vector<int32_t> tokens;
        for (int i = 0; i < 40; ++i) tokens.push_back((i * 37 + 11) % 500);
        auto want = all_logits(source, tokens);
        QVERIFY2(want.ok(), want.ok() ? "" : want.error().message.c_str());

        const std::string folded = temp_path("awq-folded-" + shape + ".gguf");
        QVERIFY(write_folded(shape, *model, random_folds(*model, Fold::Both, 7), folded).ok());
        auto got = all_logits(folded, tokens);
        QVERIFY(got.ok());
        const double exact = relative_difference(*want, *got);
        QVERIFY2(exact < 1e-3, (shape + ": folded logits differ by " + std::to_string(exact)).c_str());

        // Each fold matters: without the norms' 1/s, or without ffn_up's and attn_v's, the function changes.
        for (Fold broken : {Fold::ColumnsOnly, Fold::NoMatrixRows}) {
            QVERIFY(write_folded(shape, *model, random_folds(*model, broken, 7), folded).ok());
            auto wrong = all_logits(folded, tokens);
            QVERIFY(wrong.ok());
            const double d = relative_difference(*want, *wrong);
            QVERIFY2(d > 100 * std::max(exact, 1e-5), (shape + ": a fold left out changes logits only by " + std::to_string(d)).c_str());
        }
        std::filesystem::remove(source);
        std::filesystem::remove(folded);
    }

private slots:
    void foldIsExactInFullPrecisionLlama() { check_fold_is_exact("tiny-llama"); }
    void foldIsExactInFullPrecisionGemma3() { check_fold_is_exact("tiny-gemma3"); }

    void alphaSearchScalesUpAnOutlierChannel() {
        const int64_t n_in = 256, n_out = 64, n_rows = 256;
        std::mt19937_64 rng(3);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> w(size_t(n_in * n_out)), x(size_t(n_rows * n_in));
        for (float& v : w) v = normal(rng);
        for (int64_t r = 0; r < n_rows; ++r)
            for (int64_t c = 0; c < n_in; ++c)
                x[size_t(r * n_in + c)] = normal(rng) * (c == 7 ? 40.0f : c == 100 ? 20.0f : 1.0f);
        std::vector<float> mean_abs(size_t(n_in), 0.0f);
        for (int64_t r = 0; r < n_rows; ++r)
            for (int64_t c = 0; c < n_in; ++c) mean_abs[size_t(c)] += std::fabs(x[size_t(r * n_in + c)]) / float(n_rows);
        cpu::ThreadPool pool(2);
        for (TensorType type : {TensorType::Q4_K, TensorType::Q4_0}) {
            const quant::AwqMember member{"w", type, n_in, n_out, w, {}};
            quant::AwqOptions options;
            options.grid = 10;
            auto best = quant::search_awq_scales(std::span(&member, 1), mean_abs, x, n_rows, options, pool);
            QVERIFY2(best.ok(), best.ok() ? "" : best.error().message.c_str());
            QVERIFY2(best->alpha > 0, traits(type).name.data());
            QVERIFY2(best->error < 0.8 * best->error_unscaled,
                     (std::to_string(best->error) + " vs " + std::to_string(best->error_unscaled)).c_str());
            QVERIFY(best->scales[7] > best->scales[100] && best->scales[100] > best->scales[0]);
            // The reported errors are the objective's values at alpha and at 0.
            auto at_alpha = quant::awq_output_error(std::span(&member, 1), best->scales, x, n_rows, pool);
            auto unscaled = quant::awq_output_error(std::span(&member, 1), std::vector<float>(size_t(n_in), 1.0f), x, n_rows, pool);
            QVERIFY(at_alpha.ok() && unscaled.ok());
            QCOMPARE(*at_alpha, best->error);
            QCOMPARE(*unscaled, best->error_unscaled);
        }
        // The objective is the quantizer's: an exact type has (nearly) no error to lower.
        const quant::AwqMember exact{"w", TensorType::F32, n_in, n_out, w, {}};
        auto none = quant::awq_output_error(std::span(&exact, 1), quant::awq_scales(mean_abs, 0.5f), x, n_rows, pool);
        const quant::AwqMember q4{"w", TensorType::Q4_K, n_in, n_out, w, {}};
        auto some = quant::awq_output_error(std::span(&q4, 1), quant::awq_scales(mean_abs, 0.5f), x, n_rows, pool);
        QVERIFY(none.ok() && some.ok());
        QVERIFY(*none < 1e-8 * *some);
    }

    void clipClampsEachBlockAndNeverRaisesTheError() {
        quant::AwqClip clip;
        clip.ratios = {1.0f, 0.5f};
        clip.choice = {1, 0};  // one row of two blocks: the first clipped to half its range
        std::vector<float> row(64);
        for (int i = 0; i < 64; ++i) row[size_t(i)] = float(i % 32) - 8.0f;  // -8 .. 23 in each block
        clip.apply(row.data(), 64, 0);
        QCOMPARE(row[31], 11.5f);   // 0.5 x 23
        QCOMPARE(row[0], -8.0f);    // inside the limit
        QCOMPARE(row[63], 23.0f);   // the second block keeps its range

        // A matrix with a few large weights: clipping may pay, and is kept only where it does.
        const int64_t n_in = 256, n_out = 32, n_rows = 128;
        std::mt19937_64 rng(5);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> w(size_t(n_in * n_out)), x(size_t(n_rows * n_in));
        for (size_t i = 0; i < w.size(); ++i) w[i] = normal(rng) * (i % 97 == 0 ? 6.0f : 1.0f);
        for (float& v : x) v = normal(rng);
        cpu::ThreadPool pool(2);
        const quant::AwqMember m{"w", TensorType::Q4_0, n_in, n_out, w, {}};
        const std::vector<float> ones(size_t(n_in), 1.0f);
        const quant::AwqOptions options;
        auto r = quant::search_awq_clip(m, ones, x, n_rows, options.clip_ratios, pool);
        QVERIFY2(r.ok(), r.ok() ? "" : r.error().message.c_str());
        QVERIFY(r->error <= r->error_unclipped);
        auto unclipped = quant::awq_output_error(std::span(&m, 1), ones, x, n_rows, pool);
        QVERIFY(unclipped.ok());
        QCOMPARE(r->error_unclipped, *unclipped);
        QVERIFY(r->clip.clips());  // this seed has weights worth clipping
        {
            QVERIFY(r->error < r->error_unclipped);
            QCOMPARE(r->clip.choice.size(), size_t(n_out * n_in / 32));
        }
    }

    void scalesAreNormalisedAndFloored() {
        const std::vector<float> mean_abs = {0.0f, 1.0f, 4.0f, 16.0f};
        const std::vector<float> s = quant::awq_scales(mean_abs, 0.5f);
        for (float v : s) QVERIFY(std::isfinite(v) && v > 0);
        const float lo = *std::min_element(s.begin(), s.end()), hi = *std::max_element(s.begin(), s.end());
        QVERIFY(std::fabs(std::sqrt(lo * hi) - 1.0f) < 1e-5f);
        QVERIFY(std::fabs(s[3] / s[2] - 2.0f) < 1e-5f);  // (16/4)^0.5
        for (float v : quant::awq_scales(mean_abs, 0.0f)) QCOMPARE(v, 1.0f);
    }

    void jobScalesFoldsAndWritesALoadableFile() {
        const std::string source = temp_path("awq-job-src.gguf"), text = temp_path("awq-job.txt"),
                          out = temp_path("awq-job.gguf");
        QVERIFY(quant_fixture::write_dummy_gguf("tiny-llama", source).ok());
        {
            std::ofstream t(text);
            for (int i = 0; i < 1500; ++i) t << "calibration words " << i * 7 << ", and more. ";
        }
        QuantizeOptions options;
        options.source = source;
        options.output = out;
        options.threads = 2;
        options.awq = true;
        QuantizeJob without_text(options);
        auto refused = without_text.run();
        QVERIFY(!refused.ok());
        QVERIFY2(refused.error().message.find("calibration text") != std::string::npos, refused.error().message.c_str());

        options.calibration_files = {text};
        options.calibration_chunks = 2;
        options.awq_rows = 128;
        options.awq_grid = 8;
        auto report = QuantizeJob(options).run();
        QVERIFY2(report.ok(), report.ok() ? "" : report.error().message.c_str());
        QVERIFY(report->awq);
        QCOMPARE(report->awq_groups.size(), size_t(8));
        // This seed's calibration scales some groups and not others, so both sides of the check below run.
        QVERIFY(std::any_of(report->awq_groups.begin(), report->awq_groups.end(), [](const auto& g) { return g.alpha > 0; }));
        QVERIFY(std::any_of(report->awq_groups.begin(), report->awq_groups.end(), [](const auto& g) { return g.alpha == 0; }));
        auto file = GgufFile::open(out);
        auto src = GgufFile::open(source);
        QVERIFY(file.ok() && src.ok());
        QVERIFY(file->get_string("folio.quantize.awq").ok());
        auto model = load_model_description(source);
        QVERIFY(model.ok());
        std::vector<std::string> skipped;
        const std::vector<quant::AwqGroup> groups = quant::awq_groups(*model, skipped);
        for (size_t i = 0; i < groups.size(); ++i) {
            QCOMPARE(report->awq_groups[i].input, groups[i].input);
            QVERIFY(report->awq_groups[i].error <= report->awq_groups[i].error_unscaled);
            const GgufTensorInfo* a = src->find_tensor(groups[i].producer);
            const GgufTensorInfo* b = file->find_tensor(groups[i].producer);
            QVERIFY(a && b);
            if (b->ggml_type != a->ggml_type) continue;  // ffn_up: quantized either way
            const bool changed = std::memcmp(a->data, b->data, a->nbytes) != 0;
            QCOMPARE(changed, report->awq_groups[i].alpha > 0);  // a norm takes 1/s exactly when scaled
        }
        std::vector<int32_t> tokens = {1, 5, 9, 200, 300};
        auto logits = all_logits(out, tokens);
        QVERIFY(logits.ok());
        for (float v : *logits) QVERIFY(std::isfinite(v));
        for (const std::string& p : {source, text, out, out + ".quality.json"}) std::filesystem::remove(p);
    }

    // folio imatrix --awq stores the sample in the imatrix file; a job that
    // reads it searches what a job that collects it searches.
    void imatrixFileCarriesTheActivations() {
        const std::string source = temp_path("awq-im-src.gguf"), text = temp_path("awq-im.txt"),
                          imatrix = temp_path("awq-im.imatrix.gguf"), a = temp_path("awq-im-a.gguf"),
                          b = temp_path("awq-im-b.gguf");
        QVERIFY(quant_fixture::write_dummy_gguf("tiny-llama", source).ok());
        {
            std::ofstream t(text);
            for (int i = 0; i < 1500; ++i) t << "calibration words " << i * 7 << ", and more. ";
        }
        auto model = load_model_description(source);
        auto calibration = read_calibration_text({text});
        QVERIFY(model.ok() && calibration.ok());
        ImatrixOptions options;
        options.n_chunks = 2;
        options.threads = 2;
        ActivationStats stats;
        stats.max_rows = 100;
        options.activations = &stats;
        auto m = collect_imatrix(*model, *calibration, options);
        QVERIFY(m.ok());
        QCOMPARE(stats.inputs.size(), size_t(2 * 4));  // attn_q ffn_gate ffn_down attn_output per layer
        for (const auto& [name, sample] : stats.inputs) {
            QVERIFY2(is_awq_input(name), name.c_str());
            QCOMPARE(sample.rows_seen, int64_t(2 * 512));
            QCOMPARE(sample.n_rows(), int64_t(100));  // bounded
        }
        QVERIFY(m->write(imatrix, &stats).ok());
        ActivationStats back;
        auto read = ImportanceMatrix::read(imatrix, &back);
        QVERIFY2(read.ok(), read.ok() ? "" : read.error().message.c_str());
        QCOMPARE(read->entries.size(), m->entries.size());
        QCOMPARE(back.max_rows, int64_t(100));
        for (const auto& [name, sample] : stats.inputs) {
            const ActivationSample& got = back.inputs[name];
            QVERIFY(got.rows == sample.rows);
            QCOMPARE(got.rows_seen, sample.rows_seen);
            QCOMPARE(got.mean_abs()[3], sample.mean_abs()[3]);
        }
        // A plain imatrix file has none, and --awq on it is refused with what to do.
        const std::string plain = temp_path("awq-im-plain.imatrix.gguf");
        QVERIFY(m->write(plain).ok());
        QuantizeOptions q;
        q.source = source;
        q.threads = 2;
        q.awq = true;
        q.awq_rows = 100;
        q.awq_grid = 6;
        q.output = a;
        q.imatrix_path = plain;
        auto refused = QuantizeJob(q).run();
        QVERIFY(!refused.ok());
        QVERIFY2(refused.error().message.find("folio imatrix --awq") != std::string::npos, refused.error().message.c_str());

        q.imatrix_path = imatrix;
        auto from_file = QuantizeJob(q).run();
        q.imatrix_path.clear();
        q.output = b;
        q.calibration_files = {text};
        q.calibration_chunks = 2;
        auto collected = QuantizeJob(q).run();
        QVERIFY2(from_file.ok(), from_file.ok() ? "" : from_file.error().message.c_str());
        QVERIFY(collected.ok());
        QCOMPARE(from_file->awq_groups.size(), collected->awq_groups.size());
        for (size_t i = 0; i < collected->awq_groups.size(); ++i)
            QCOMPARE(from_file->awq_groups[i].alpha, collected->awq_groups[i].alpha);
        for (const std::string& p : {source, text, imatrix, plain, a, b, a + ".quality.json", b + ".quality.json"})
            std::filesystem::remove(p);
    }
};

FOLIO_TEST_MAIN(AwqTest)
#include "awq_test.moc"
