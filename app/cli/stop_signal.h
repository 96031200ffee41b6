// Waiting until the user stops a command that runs until stopped (folio
// serve): SIGINT / SIGTERM on POSIX, Ctrl+C / Ctrl+Break / closing the
// console on Windows.
#pragma once

namespace folio::cli {

class StopSignal {
public:
    // Before any thread starts: on POSIX the signals are blocked here so that
    // every thread inherits the mask and only wait() takes them.
    StopSignal();
    StopSignal(const StopSignal&) = delete;
    StopSignal& operator=(const StopSignal&) = delete;

    // Blocks until a stop request comes; its name ("SIGINT", "Ctrl+C", ...).
    const char* wait();
};

}  // namespace folio::cli
