#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <string>

#include "protocol/wire/errors.h"

// Declared only: CLI11's header costs seconds per translation unit, so only
// the files that define flags include <CLI/CLI.hpp>.
namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace gossipd::daemon {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;  // a fault while running
constexpr int kExitUsage = 2;    // bad flags, config or input data

// Bad user input found after flag parsing (a file that cannot be written, a
// combination of flags that does not fit). main prints it as one line and
// exits 2.
class UsageError : public protocol::Error {
 public:
  using protocol::Error::Error;
};

// A fault of the daemon's own while it runs: a file it cannot write (disk
// full), a server it cannot start, a child it cannot fork. main prints it as
// one line and exits 1.
class DaemonError : public protocol::Error {
 public:
  using protocol::Error::Error;
};

// Parses argv with `app`, then calls `run`. Every error becomes one line on
// stderr prefixed with the program name, and an exit code: 2 for bad flags,
// config or data, 1 for faults while running.
int run_cli(CLI::App& app, int argc, char** argv, const std::function<int()>& run);

// Checks a TCP congestion control's name (gossipd run --data-congestion,
// gossipctl bench --congestion): letters, digits and '_', at most 15
// (TCP_CA_NAME_MAX), or "system". Whether the kernel has it is known only
// when a socket tries.
CLI::Validator congestion_name();

// Keeps freed heap memory in the process instead of returning it to the
// kernel at once: the transport receives every large tensor into a freshly
// allocated buffer, and with glibc's defaults each one was mmap'ed or
// trimmed anew and page-faulted in, page by page. Call first thing in main.
void tune_allocator();

// SIGTERM/SIGINT only request a stop: the command finishes or aborts what it
// is doing, and sockets, files and threads close in order. Asio's signal_set
// installs a process-wide handler, so the signal is caught whichever thread
// the kernel picks (OpenBLAS starts threads before main).
class SignalWatcher {
 public:
  explicit SignalWatcher(std::stop_source& stop);
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  struct Impl;  // Asio's io_context and signal_set, and their thread
  std::unique_ptr<Impl> impl_;
};

// Sleeps for `d`, or less when `stop` fires.
void sleep_unless_stopped(std::chrono::steady_clock::duration d, std::stop_token stop);

// The version, as project(VERSION) in the top CMakeLists.txt defines it.
const char* version();

// "PROG VERSION" for --version.
std::string version_line(const std::string& program);

// Sets the number of OpenBLAS threads for this process (>= 1).
void set_blas_threads(int threads);

// Where gossipd keeps what it measured on this machine (the pipeline
// planner's layer profiles), the default of --cache-dir:
// $XDG_CACHE_HOME/gossipd, else $HOME/.cache/gossipd, else
// TMPDIR/gossipd. The one place the environment is read for it.
std::string default_cache_dir();

}  // namespace gossipd::daemon
