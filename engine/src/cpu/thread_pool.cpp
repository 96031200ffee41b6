#include "cpu/thread_pool.h"

#include <fstream>
#include <set>
#include <string>

#if defined(__linux__)
#include <sched.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace folio::cpu {
namespace {

// How long an idle worker polls before sleeping. Between two matmuls of one
// token the gap is a few microseconds; a futex wake-up costs tens.
constexpr int kSpinIterations = 1 << 15;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

}  // namespace

int physical_core_count() {
    int logical = static_cast<int>(std::thread::hardware_concurrency());
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        // One entry per core: the sibling list is the same for all its threads.
        std::set<std::string> cores;
        int allowed = 0;
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
            if (!CPU_ISSET(cpu, &set)) continue;
            ++allowed;
            std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) +
                             "/topology/thread_siblings_list");
            std::string siblings;
            if (in && std::getline(in, siblings)) cores.insert(siblings);
            else cores.insert("cpu" + std::to_string(cpu));
        }
        if (!cores.empty()) return static_cast<int>(cores.size());
        if (allowed > 0) logical = allowed;
    }
#endif
    return logical > 0 ? logical : 1;
}

ThreadPool::ThreadPool(int n_threads) {
    if (n_threads <= 0) n_threads = physical_core_count();
    workers_.reserve(static_cast<size_t>(n_threads - 1));
    for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    stopping_.store(true);
    generation_.fetch_add(1);
    generation_.notify_all();
    for (auto& worker : workers_) worker.join();
}

void ThreadPool::drain(int thread_index) {
    const int64_t n = job_tasks_;
    for (int64_t task = next_task_.fetch_add(1, std::memory_order_relaxed); task < n;
         task = next_task_.fetch_add(1, std::memory_order_relaxed))
        job_fn_(job_ctx_, task, thread_index);
}

void ThreadPool::run(int64_t n_tasks, TaskFn fn, void* ctx) {
    if (n_tasks <= 0) return;
    if (workers_.empty() || n_tasks == 1) {
        for (int64_t task = 0; task < n_tasks; ++task) fn(ctx, task, 0);
        return;
    }
    job_fn_ = fn;
    job_ctx_ = ctx;
    job_tasks_ = n_tasks;
    next_task_.store(0, std::memory_order_relaxed);
    workers_done_.store(0, std::memory_order_relaxed);
    // seq_cst pairs with the worker's sleepers_ increment: either we see it
    // and wake it, or it sees the new generation before sleeping.
    generation_.fetch_add(1);
    if (sleepers_.load() > 0) generation_.notify_all();

    drain(0);

    const int n_workers = static_cast<int>(workers_.size());
    for (int spins = 0; workers_done_.load(std::memory_order_acquire) < n_workers; ++spins) {
        if (spins < kSpinIterations) cpu_relax();
        else std::this_thread::yield();
    }
}

void ThreadPool::worker_loop(int thread_index) {
    uint32_t seen = generation_.load(std::memory_order_acquire);
    for (;;) {
        uint32_t now = generation_.load(std::memory_order_acquire);
        for (int spins = 0; now == seen && spins < kSpinIterations; ++spins) {
            cpu_relax();
            now = generation_.load(std::memory_order_acquire);
        }
        if (now == seen) {
            sleepers_.fetch_add(1);
            generation_.wait(seen);
            sleepers_.fetch_sub(1);
            now = generation_.load(std::memory_order_acquire);
        }
        seen = now;
        if (stopping_.load()) return;
        drain(thread_index);
        workers_done_.fetch_add(1, std::memory_order_release);
    }
}

}  // namespace folio::cpu
