// A fixed set of worker threads for the CPU backend's data-parallel loops.
// parallel_for() is called a hundred-odd times per decoded token, so a call
// costs no allocation: workers spin briefly for the next job, then sleep on
// a futex; tasks are claimed from one atomic word and the calling thread
// works too. The caller waits for the tasks, not for every worker, so a
// worker the OS has descheduled does not stall a call it took no part in.
// Owned by the backend that uses it (no global instance).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace folio::cpu {

// Physical cores this process may use (hyper-threads share SIMD units, so
// matmul gains nothing from them); at least 1.
int physical_core_count();

class ThreadPool {
public:
    // n_threads counts the calling thread: 1 runs everything inline.
    // 0 means physical_core_count().
    explicit ThreadPool(int n_threads = 0);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return static_cast<int>(workers_.size()) + 1; }

    // Runs fn(task_index, thread_index) for every task_index in [0, n_tasks)
    // exactly once, spread over the threads (thread_index in [0, size()), 0 is
    // the caller), and returns when all are done. Not reentrant: fn must not
    // call parallel_for on the same pool.
    template <typename Fn>
    void parallel_for(int64_t n_tasks, Fn&& fn) {
        using F = std::remove_reference_t<Fn>;
        run(n_tasks, [](void* ctx, int64_t task, int thread) { (*static_cast<F*>(ctx))(task, thread); },
            const_cast<void*>(static_cast<const void*>(&fn)));
    }

private:
    using TaskFn = void (*)(void* ctx, int64_t task, int thread);

    void run(int64_t n_tasks, TaskFn fn, void* ctx);
    void run_batch(int64_t first_task, int64_t n_tasks);
    void worker_loop(int thread_index, uint32_t seen_generation);
    void drain(int thread_index);

    std::vector<std::thread> workers_;

    // The current job. Written only while no task is outstanding; read by a
    // thread only while it holds a claimed, unfinished task.
    TaskFn job_fn_ = nullptr;
    void* job_ctx_ = nullptr;
    int64_t job_first_task_ = 0;

    // The claim word: job serial | task count | next task (see thread_pool.cpp).
    alignas(64) std::atomic<uint64_t> claims_{0};
    alignas(64) std::atomic<int64_t> tasks_done_{0};
    alignas(64) std::atomic<uint32_t> generation_{0};  // bumped per job: wakes workers
    alignas(64) std::atomic<int> sleepers_{0};
    std::atomic<bool> stopping_{false};
    uint64_t serial_ = 0;
};

}  // namespace folio::cpu
