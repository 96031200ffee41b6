#include "cpu/thread_pool.h"

#include <algorithm>
#include <chrono>
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
constexpr auto kSpinTime = std::chrono::microseconds(300);

// The claim word packs (serial, task count, next task) so that one
// compare-exchange both checks a task is left in *this* job and takes it: a
// worker still holding a stale view of an old job fails the exchange.
constexpr int kIndexBits = 22;
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
constexpr int64_t kMaxBatch = static_cast<int64_t>(kIndexMask);

uint64_t pack(uint64_t serial, uint64_t count) { return (serial << (2 * kIndexBits)) | (count << kIndexBits); }

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
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
            if (!CPU_ISSET(cpu, &set)) continue;
            std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) +
                             "/topology/thread_siblings_list");
            std::string siblings;
            if (in && std::getline(in, siblings)) cores.insert(siblings);
            else cores.insert("cpu" + std::to_string(cpu));
        }
        if (!cores.empty()) return static_cast<int>(cores.size());
    }
#endif
    return logical > 0 ? logical : 1;
}

ThreadPool::ThreadPool(int n_threads) {
    if (n_threads <= 0) n_threads = physical_core_count();
    workers_.reserve(static_cast<size_t>(n_threads - 1));
    // Workers start from the generation as of now: a job (or shutdown) posted
    // before a worker first runs must still count as new to it.
    const uint32_t start = generation_.load();
    for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i, start] { worker_loop(i, start); });
}

ThreadPool::~ThreadPool() {
    stopping_.store(true);
    generation_.fetch_add(1);
    generation_.notify_all();
    for (auto& worker : workers_) worker.join();
}

void ThreadPool::drain(int thread_index) {
    int64_t done = 0;
    uint64_t word = claims_.load(std::memory_order_acquire);
    for (;;) {
        const uint64_t next = word & kIndexMask;
        if (next >= ((word >> kIndexBits) & kIndexMask)) break;
        if (claims_.compare_exchange_weak(word, word + 1, std::memory_order_acquire, std::memory_order_acquire)) {
            job_fn_(job_ctx_, job_first_task_ + static_cast<int64_t>(next), thread_index);
            ++done;
            word = claims_.load(std::memory_order_acquire);
        }
    }
    if (done) tasks_done_.fetch_add(done, std::memory_order_release);
}

void ThreadPool::run(int64_t n_tasks, TaskFn fn, void* ctx) {
    if (n_tasks <= 0) return;
    if (workers_.empty() || n_tasks == 1) {
        for (int64_t task = 0; task < n_tasks; ++task) fn(ctx, task, 0);
        return;
    }
    job_fn_ = fn;
    job_ctx_ = ctx;
    for (int64_t first = 0; first < n_tasks; first += kMaxBatch)
        run_batch(first, std::min(kMaxBatch, n_tasks - first));
}

void ThreadPool::run_batch(int64_t first_task, int64_t n_tasks) {
    job_first_task_ = first_task;
    tasks_done_.store(0, std::memory_order_relaxed);
    ++serial_;
    claims_.store(pack(serial_, static_cast<uint64_t>(n_tasks)), std::memory_order_release);
    // seq_cst pairs with the worker's sleepers_ increment: either we see it
    // and wake it, or it sees the new generation before sleeping.
    generation_.fetch_add(1);
    if (sleepers_.load() > 0) generation_.notify_all();

    drain(0);

    for (int spins = 0; tasks_done_.load(std::memory_order_acquire) < n_tasks; ++spins) {
        if (spins < 4096) cpu_relax();
        else std::this_thread::yield();  // a worker holding a task was descheduled
    }
}

void ThreadPool::worker_loop(int thread_index, uint32_t seen) {
    for (;;) {
        uint32_t now = generation_.load(std::memory_order_acquire);
        if (now == seen) {
            const auto give_up = std::chrono::steady_clock::now() + kSpinTime;
            for (int spins = 1; now == seen; ++spins) {
                cpu_relax();
                now = generation_.load(std::memory_order_acquire);
                if (spins % 64 == 0 && std::chrono::steady_clock::now() > give_up) break;
            }
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
    }
}

}  // namespace folio::cpu
