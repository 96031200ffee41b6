#include "stop_signal.h"

#include <csignal>

#ifdef _WIN32
#include <condition_variable>
#include <mutex>
#include <windows.h>
#else
#include <pthread.h>
#endif

namespace folio::cli {

#ifdef _WIN32
namespace {

// Windows runs a console control handler on a thread of its own, so it may
// lock and notify.
std::mutex g_mutex;
std::condition_variable g_stopped;
const char* g_reason = nullptr;

BOOL WINAPI on_console_event(DWORD event) {
    const char* reason = event == CTRL_C_EVENT       ? "Ctrl+C"
                         : event == CTRL_BREAK_EVENT ? "Ctrl+Break"
                                                     : "the console closing";
    {
        std::lock_guard lock(g_mutex);
        if (!g_reason) g_reason = reason;
    }
    g_stopped.notify_all();
    return TRUE;
}

}  // namespace

StopSignal::StopSignal() { ::SetConsoleCtrlHandler(on_console_event, TRUE); }

const char* StopSignal::wait() {
    std::unique_lock lock(g_mutex);
    g_stopped.wait(lock, [] { return g_reason != nullptr; });
    return g_reason;
}

#else

namespace {
sigset_t stop_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
}
}  // namespace

StopSignal::StopSignal() {
    // Their default action first: a shell starts a background job with
    // SIGINT ignored, and an ignored signal never reaches sigwait().
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    const sigset_t set = stop_signals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error value, not the end of the process
}

const char* StopSignal::wait() {
    const sigset_t set = stop_signals();
    int signal_number = 0;
    sigwait(&set, &signal_number);
    return signal_number == SIGTERM ? "SIGTERM" : "SIGINT";
}

#endif

}  // namespace folio::cli
