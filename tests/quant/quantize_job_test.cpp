// QuantizeJob on small models of real shapes: every preset writes a GGUF
// that reopens with the planned types, the metadata carried and values close
// to the source; progress runs forward to Done; cancel stops it within a
// second and leaves nothing (an existing file under the name stays as it
// was); a write that hits a size limit fails clearly and leaves nothing; a
// hostile or damaged source is refused with a message naming the problem.
#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "folio/dequant.h"
#include "folio/quantize_job.h"
#include "folio_test.h"
#include "quant_fixture.h"

using namespace folio;
using quant_fixture::exists;
using quant_fixture::temp_path;

namespace {

Result<QuantizeReport> quantize(const std::string& src, const std::string& out, QuantPreset preset,
                                std::function<void(const QuantizeProgress&)> on_progress = {}) {
    QuantizeOptions options;
    options.source = src;
    options.output = out;
    options.preset = preset;
    options.threads = 2;
    options.on_progress = std::move(on_progress);
    QuantizeJob job(options);
    return job.run();
}

std::vector<float> decode(const GgufTensorInfo& t) {
    std::vector<float> out(size_t(t.n_elements()));
    (void)dequantize(*t.type(), t.data, t.nbytes, out.data(), t.n_elements());
    return out;
}

}  // namespace

class QuantizeJobTest : public QObject {
    Q_OBJECT
private:
    std::string source_ = temp_path("tiny-llama.F32.gguf");
    std::string gemma_ = temp_path("tiny-gemma3.F32.gguf");

private slots:
    void initTestCase() {
        Status a = quant_fixture::write_dummy_gguf("tiny-llama", source_);
        QVERIFY2(a.ok(), a.ok() ? "" : a.error().message.c_str());
        Status b = quant_fixture::write_dummy_gguf("tiny-gemma3", gemma_);
        QVERIFY2(b.ok(), b.ok() ? "" : b.error().message.c_str());
    }
    void cleanupTestCase() {
        std::filesystem::remove(source_);
        std::filesystem::remove(gemma_);
    }

    void everyPresetWritesAFileWithThePlannedTypes() {
        auto source = GgufFile::open(source_);
        QVERIFY(source.ok());
        auto model = load_model_description(source_);
        QVERIFY(model.ok());
        for (QuantPreset preset : {QuantPreset::Q4_K_M, QuantPreset::Q4_K_S, QuantPreset::Q4_0, QuantPreset::Q5_K_M,
                                   QuantPreset::Q6_K, QuantPreset::Q8_0}) {
            const std::string name(preset_info(preset).name);
            const std::string out = temp_path("out." + name + ".gguf");
            auto report = quantize(source_, out, preset);
            QVERIFY2(report.ok(), report.ok() ? "" : report.error().message.c_str());
            auto file = GgufFile::open(out);
            QVERIFY2(file.ok(), name.c_str());
            QCOMPARE(file->version(), 3u);
            QCOMPARE(uint64_t(file->file_size()), report->output_bytes);
            QCOMPARE(*file->get_u32("general.file_type"), preset_info(preset).file_type);
            QCOMPARE(*file->get_u32("general.quantization_version"), 2u);
            QCOMPARE(*file->get_string("folio.quantize.preset"), name);
            // The source is recorded (absolute), for the studio's model library.
            QCOMPARE(*file->get_string("folio.quantize.source"),
                     std::filesystem::absolute(source_).lexically_normal().string());
            // Everything else the source said is said again.
            for (const GgufKeyValue& kv : source->metadata()) {
                if (kv.key == "general.file_type") continue;
                QVERIFY2(file->has(kv.key), (name + ": key " + kv.key + " was not carried").c_str());
            }
            auto plan = plan_quantization(*model, preset);
            QVERIFY(plan.ok());
            QCOMPARE(file->tensors().size(), plan->size());
            for (size_t i = 0; i < plan->size(); ++i) {
                const GgufTensorInfo& t = file->tensors()[i];
                QCOMPARE(t.name, (*plan)[i].name);
                QCOMPARE(t.ggml_type, uint32_t((*plan)[i].type));
                // Values decode close to the source's (4-bit: ~0.1 RMS relative).
                const std::vector<float> got = decode(t), want = decode(*source->find_tensor(t.name));
                double err = 0, ref = 0;
                for (size_t k = 0; k < got.size(); ++k) {
                    err += (double(got[k]) - want[k]) * (double(got[k]) - want[k]);
                    ref += double(want[k]) * want[k];
                }
                QVERIFY2(ref == 0 || std::sqrt(err / ref) < 0.12, (name + ": " + t.name).c_str());
            }
            std::filesystem::remove(out);
            std::filesystem::remove(report->report_path);
        }
    }

    void progressRunsForwardToDone() {
        const std::string out = temp_path("progress.gguf");
        std::vector<QuantizeProgress> seen;
        auto report = quantize(gemma_, out, QuantPreset::Q4_K_M, [&](const QuantizeProgress& p) { seen.push_back(p); });
        QVERIFY2(report.ok(), report.ok() ? "" : report.error().message.c_str());
        QVERIFY(seen.size() >= 3);
        QVERIFY(seen.front().phase == QuantizePhase::Planning);
        QVERIFY(seen.back().phase == QuantizePhase::Done);
        QCOMPARE(seen.back().bytes_done, seen.back().bytes_total);
        QCOMPARE(seen.back().bytes_total, report->output_bytes > 0 ? seen.back().bytes_total : 0);
        for (size_t i = 1; i < seen.size(); ++i) {
            QVERIFY(seen[i].bytes_done >= seen[i - 1].bytes_done);
            QVERIFY(seen[i].elapsed_s >= seen[i - 1].elapsed_s);
        }
        QVERIFY(std::any_of(seen.begin(), seen.end(), [](const QuantizeProgress& p) { return p.phase == QuantizePhase::Validating; }));
        std::filesystem::remove(out);
        std::filesystem::remove(report->report_path);
    }

    void cancelStopsWithinASecondAndLeavesNothing() {
        const std::string out = temp_path("cancel.gguf");
        { std::ofstream(out) << "the previous file"; }
        QuantizeOptions options;
        options.source = gemma_;
        options.output = out;
        options.threads = 2;
        std::chrono::steady_clock::time_point cancelled_at{};
        options.on_progress = [&](const QuantizeProgress& p) {
            if (p.phase == QuantizePhase::Quantizing && p.tensor_index >= 2 && cancelled_at == decltype(cancelled_at){}) {
                cancelled_at = std::chrono::steady_clock::now();
                std::thread([this] { job_->cancel(); }).join();  // from another thread, as the studio does
            }
        };
        QuantizeJob cancellable(options);
        job_ = &cancellable;
        auto report = cancellable.run();
        const auto returned_at = std::chrono::steady_clock::now();
        QVERIFY(!report.ok());
        QVERIFY(cancellable.was_cancelled());
        QVERIFY2(report.error().message.find("cancelled") != std::string::npos, report.error().message.c_str());
        QVERIFY(cancelled_at != decltype(cancelled_at){});
        QVERIFY(returned_at - cancelled_at < std::chrono::seconds(1));
        QVERIFY(!exists(out + ".tmp"));
        std::ifstream in(out);
        std::string previous((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        QCOMPARE(previous, std::string("the previous file"));
        std::filesystem::remove(out);
    }

    // A child process whose files may not grow past 256 KiB (RLIMIT_FSIZE,
    // as a full disk would stop them) quantizes; the write fails with a
    // message, and neither the output nor its temporary file remains.
    void aFullDiskFailsClearlyAndLeavesNothing() {
        const std::string out = temp_path("full-disk.gguf");
        int pipe_fds[2];
        QVERIFY(::pipe(pipe_fds) == 0);
        const pid_t child = ::fork();
        QVERIFY(child >= 0);
        if (child == 0) {
            ::close(pipe_fds[0]);
            std::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG
            struct rlimit limit = {256 << 10, 256 << 10};
            ::setrlimit(RLIMIT_FSIZE, &limit);
            auto report = quantize(gemma_, out, QuantPreset::Q8_0);
            const std::string message = report.ok() ? "OK" : report.error().message;
            (void)!::write(pipe_fds[1], message.data(), message.size());
            ::_exit(0);
        }
        ::close(pipe_fds[1]);
        std::string message;
        char buffer[4096];
        ssize_t n;
        while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0) message.append(buffer, size_t(n));
        ::close(pipe_fds[0]);
        int status = 0;
        ::waitpid(child, &status, 0);
        QVERIFY2(message != "OK", "the quantization went through despite the file size limit");
        QVERIFY2(message.find("File too large") != std::string::npos && message.find("nothing was left") != std::string::npos,
                 message.c_str());
        QVERIFY(!exists(out));
        QVERIFY(!exists(out + ".tmp"));
    }

    void notEnoughFreeSpaceIsRefusedBeforeWriting() {
        auto free_bytes = free_disk_bytes(temp_path("x.gguf"));
        QVERIFY(free_bytes.ok());
        QVERIFY(*free_bytes > 0);
        auto missing = free_disk_bytes("/no/such/folder/x.gguf");
        QVERIFY(!missing.ok());
        QVERIFY2(missing.error().message.find("/no/such/folder") != std::string::npos, missing.error().message.c_str());
        auto report = quantize(gemma_, "/no/such/folder/x.gguf", QuantPreset::Q4_K_M);
        QVERIFY(!report.ok());
    }

    // Validation reopens the blocks and compares result and source on a
    // text: more bits, closer to the source; the JSON report says the same.
    void validationMeasuresTheResultAgainstItsSource() {
        const std::string text = temp_path("validation.txt");
        {
            std::ofstream out(text);
            for (int i = 0; i < 200; ++i) out << "The quick brown fox " << i << " jumps over the lazy dog. ";
        }
        auto measure = [&](QuantPreset preset) {
            QuantizeOptions options;
            options.source = source_;
            options.output = temp_path(std::string("validated.") + std::string(preset_info(preset).name) + ".gguf");
            options.preset = preset;
            options.threads = 2;
            options.validation_text = text;
            options.validation_chunks = 2;
            options.validation_ctx = 256;
            QuantizeJob job(options);
            return job.run();
        };
        auto q8 = measure(QuantPreset::Q8_0);
        auto q4 = measure(QuantPreset::Q4_0);
        QVERIFY2(q8.ok(), q8.ok() ? "" : q8.error().message.c_str());
        QVERIFY2(q4.ok(), q4.ok() ? "" : q4.error().message.c_str());
        QVERIFY(q8->blocks_checked && q8->quality_measured && q4->quality_measured);
        QCOMPARE(q8->quality.n_tokens, int64_t(2 * (256 - 1 - 128)));
        QVERIFY(q8->quality.ppl_base > 1 && std::isfinite(q8->quality.ppl));
        QCOMPARE(q8->quality.ppl_base, q4->quality.ppl_base);  // the same source on the same tokens
        QVERIFY2(q8->quality.mean_kld < q4->quality.mean_kld,
                 (std::to_string(q8->quality.mean_kld) + " vs " + std::to_string(q4->quality.mean_kld)).c_str());
        QVERIFY(q8->quality.same_top >= q4->quality.same_top);
        QVERIFY(q8->quality.p99_kld >= q8->quality.median_kld);
        std::ifstream in(q8->report_path);
        const nlohmann::json report = nlohmann::json::parse(in, nullptr, false);
        QVERIFY(!report.is_discarded());
        QCOMPARE(report["quality"]["mean_kld"].get<double>(), q8->quality.mean_kld);
        QCOMPARE(report["tensors"].size(), q8->tensors.size());
        for (const auto& r : {*q8, *q4}) {
            std::filesystem::remove(r.output);
            std::filesystem::remove(r.report_path);
        }
        std::filesystem::remove(text);
    }

    void damagedSourcesAreRefusedClearly() {
        // A NaN in a weight: the tensor and row are named, nothing is left.
        const std::string nan_source = temp_path("nan.gguf");
        Status w = quant_fixture::write_dummy_gguf("tiny-llama", nan_source, [](const std::string& name, std::vector<std::byte>& b) {
            if (name == "blk.1.ffn_up.weight") {
                const float nan = std::nanf("");
                std::memcpy(b.data() + 4 * 300, &nan, 4);
            }
        });
        QVERIFY(w.ok());
        const std::string out = temp_path("nan.out.gguf");
        auto report = quantize(nan_source, out, QuantPreset::Q4_K_M);
        QVERIFY(!report.ok());
        QVERIFY2(report.error().message.find("blk.1.ffn_up.weight") != std::string::npos &&
                     report.error().message.find("NaN") != std::string::npos,
                 report.error().message.c_str());
        QVERIFY(!exists(out) && !exists(out + ".tmp"));

        // A truncated file.
        const std::string truncated = temp_path("truncated.gguf");
        std::filesystem::copy_file(source_, truncated, std::filesystem::copy_options::overwrite_existing);
        std::filesystem::resize_file(truncated, std::filesystem::file_size(source_) / 2);
        auto cut = quantize(truncated, out, QuantPreset::Q4_K_M);
        QVERIFY(!cut.ok());
        QVERIFY2(cut.error().message.find("truncated.gguf") != std::string::npos, cut.error().message.c_str());
        QVERIFY(!exists(out) && !exists(out + ".tmp"));

        // Not a model at all.
        const std::string text = temp_path("text.gguf");
        { std::ofstream(text) << "just some text, not a model"; }
        auto not_model = quantize(text, out, QuantPreset::Q4_K_M);
        QVERIFY(!not_model.ok());
        QVERIFY2(not_model.error().message.find("neither a GGUF file") != std::string::npos, not_model.error().message.c_str());

        // An architecture Folio does not run.
        const std::string other = temp_path("other-arch.gguf");
        {
            auto file = GgufFile::open(source_);
            QVERIFY(file.ok());
            GgufWriter writer;
            for (const GgufKeyValue& kv : file->metadata())
                writer.set(kv.key, kv.key == "general.architecture" ? GgufValue::string("rwkv6") : kv.value);
            for (const GgufTensorInfo& t : file->tensors())
                QVERIFY(writer.add_tensor(t.name, *t.type(), t.shape, std::span<const std::byte>(t.data, t.nbytes)).ok());
            QVERIFY(writer.write(other).ok());
        }
        auto arch = quantize(other, out, QuantPreset::Q4_K_M);
        QVERIFY(!arch.ok());
        QVERIFY2(arch.error().message.find("rwkv6") != std::string::npos, arch.error().message.c_str());
        for (const std::string& p : {nan_source, truncated, text, other}) std::filesystem::remove(p);
    }

private:
    QuantizeJob* job_ = nullptr;
};

FOLIO_TEST_MAIN(QuantizeJobTest)
#include "quantize_job_test.moc"
