// `folio chat` as a child process with its stdin, stdout and stderr on
// pipes, so that a test can type lines, wait for output and send signals
// (Ctrl+C) as a terminal would.
#pragma once

#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace folio_test {

class ChatProcess {
public:
    explicit ChatProcess(const std::vector<std::string>& args) {
        int in[2], out[2], err[2];
        if (::pipe(in) || ::pipe(out) || ::pipe(err)) return;
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(in[0], 0);
            ::dup2(out[1], 1);
            ::dup2(err[1], 2);
            for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) ::close(fd);
            std::vector<char*> argv{const_cast<char*>(FOLIO_CLI_PATH), const_cast<char*>("chat")};
            for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
            argv.push_back(nullptr);
            ::execv(FOLIO_CLI_PATH, argv.data());
            ::_exit(127);
        }
        ::close(in[0]);
        ::close(out[1]);
        ::close(err[1]);
        stdin_ = in[1];
        stdout_ = out[0];
        stderr_ = err[0];
        ::fcntl(stdout_, F_SETFL, O_NONBLOCK);
        ::fcntl(stderr_, F_SETFL, O_NONBLOCK);
    }
    ~ChatProcess() {
        if (pid_ > 0 && exit_code_ < 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        for (int fd : {stdin_, stdout_, stderr_})
            if (fd >= 0) ::close(fd);
    }
    bool started() const { return pid_ > 0; }
    void type(const std::string& line) { [[maybe_unused]] auto n = ::write(stdin_, line.data(), line.size()); }
    void close_stdin() {
        ::close(stdin_);
        stdin_ = -1;
    }
    void signal(int sig) { ::kill(pid_, sig); }
    const std::string& out() const { return out_; }
    const std::string& err() const { return err_; }

    // Reads what is there until `done()` holds or `timeout_s` passes; false on the timeout.
    template <class Pred>
    bool wait_for(Pred done, double timeout_s) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        while (!done()) {
            if (std::chrono::steady_clock::now() > until) return false;
            pollfd fds[2] = {{stdout_, POLLIN, 0}, {stderr_, POLLIN, 0}};
            ::poll(fds, 2, 50);
            drain();
            if (exited() && !done()) {
                drain();
                return done();
            }
        }
        return true;
    }
    // Waits for the exit; its code (128 + signal when killed), -1 on the timeout.
    int wait_exit(double timeout_s) {
        wait_for([&] { return exited(); }, timeout_s);
        drain();
        return exit_code_;
    }

private:
    void drain() {
        char buf[4096];
        for (auto [fd, sink] : {std::pair{stdout_, &out_}, std::pair{stderr_, &err_}})
            for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) sink->append(buf, static_cast<size_t>(n));
    }
    bool exited() {
        if (exit_code_ >= 0) return true;
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return true;
    }

    pid_t pid_ = -1;
    int stdin_ = -1, stdout_ = -1, stderr_ = -1;
    int exit_code_ = -1;
    std::string out_, err_;
};

}  // namespace folio_test
