// ThreadPool: every task runs exactly once, on a valid thread index, across
// many back-to-back calls, odd task counts, sleeping workers and shutdown.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cpu/thread_pool.h"
#include "folio_test.h"

using folio::cpu::ThreadPool;

namespace {

// Runs n tasks and says what went wrong, or "".
std::string run_and_check(ThreadPool& pool, int64_t n) {
    std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
    std::atomic<int> bad_thread{0};
    pool.parallel_for(n, [&](int64_t task, int thread) {
        runs[static_cast<size_t>(task)].fetch_add(1, std::memory_order_relaxed);
        if (thread < 0 || thread >= pool.size()) bad_thread.fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i)
        if (runs[static_cast<size_t>(i)].load() != 1)
            return "task " + std::to_string(i) + " of " + std::to_string(n) + " ran " +
                   std::to_string(runs[static_cast<size_t>(i)].load()) + " times";
    if (bad_thread.load()) return "thread index out of range";
    return "";
}

}  // namespace

class TestThreadPool : public QObject {
    Q_OBJECT
#if !FOLIO_TEST_WITH_QT
    // The no-Qt runner's generated main() takes the slots' addresses.
    friend int main();
#endif

private slots:
    void default_size_is_physical_cores() {
        QVERIFY(folio::cpu::physical_core_count() >= 1);
        ThreadPool pool;
        QCOMPARE(pool.size(), folio::cpu::physical_core_count());
    }

    void zero_and_one_task() {
        for (int threads : {1, 2, 4}) {
            ThreadPool pool(threads);
            int calls = 0;
            pool.parallel_for(0, [&](int64_t, int) { ++calls; });
            QCOMPARE(calls, 0);
            pool.parallel_for(1, [&](int64_t task, int) { calls += 1 + static_cast<int>(task); });
            QCOMPARE(calls, 1);
        }
    }

    void every_task_runs_exactly_once() {
        for (int threads : {1, 2, 3, 8}) {
            ThreadPool pool(threads);
            QCOMPARE(pool.size(), threads);
            for (int call = 0; call < 3000; ++call) {
                const std::string problem = run_and_check(pool, call % 67);
                QVERIFY2(problem.empty(), (problem + " (" + std::to_string(threads) + " threads)").c_str());
            }
            const std::string big = run_and_check(pool, 100000);
            QVERIFY2(big.empty(), (big).c_str());
        }
    }

    // Workers that went to sleep between calls must wake for the next one.
    void wakes_sleeping_workers() {
        ThreadPool pool(2);
        for (int round = 0; round < 3; ++round) {
            std::this_thread::sleep_for(std::chrono::milliseconds(60));
            std::atomic<int> on_worker{0};
            std::atomic<int> done{0};
            pool.parallel_for(64, [&](int64_t, int thread) {
                if (thread != 0) on_worker.fetch_add(1);
                // Slow enough that the caller cannot take all 64 before the worker wakes.
                std::this_thread::sleep_for(std::chrono::microseconds(200));
                done.fetch_add(1);
            });
            QCOMPARE(done.load(), 64);
            QVERIFY2(on_worker.load() > 0, "the worker thread took no task");
        }
    }

    void results_visible_to_caller() {
        ThreadPool pool(2);
        std::vector<int64_t> out(1000, -1);
        for (int call = 0; call < 200; ++call) {
            pool.parallel_for(1000, [&](int64_t task, int) { out[static_cast<size_t>(task)] = task * call; });
            for (int64_t i = 0; i < 1000; ++i) QCOMPARE(out[static_cast<size_t>(i)], i * call);
        }
    }

    void construct_and_destroy_quickly() {
        for (int i = 0; i < 50; ++i) {
            ThreadPool pool(3);
            if (i % 2) QVERIFY(run_and_check(pool, 5).empty());
        }
    }
};

FOLIO_TEST_MAIN(TestThreadPool)
#include "test_thread_pool.moc"
