#include "daemon/config/cli.h"

#include <cblas.h>
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <asio.hpp>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include "trainer/errors.h"

namespace gossipd::daemon {

CLI::Validator congestion_name() {
  return CLI::Validator(
      [](const std::string& name) -> std::string {
        const bool ok = !name.empty() && name.size() <= 15 &&
                        name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
        return ok ? "" : "'" + name + "' is not a congestion control's name (e.g. reno, cubic, bbr, system)";
      },
      "NAME");
}

int run_cli(CLI::App& app, int argc, char** argv, const std::function<int()>& run) {
  const std::string prog = app.get_name();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << prog << ": error: " << e.what() << " (see '" << prog << " --help')\n";
    return kExitUsage;
  }
  try {
    return run();
  } catch (const UsageError& e) {
    std::cerr << prog << ": error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const trainer::DataError& e) {
    std::cerr << prog << ": error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    std::cerr << prog << ": error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << prog << ": error: " << e.what() << "\n";
    return kExitFailure;
  }
}

void tune_allocator() {
  // Blocks up to 64 MiB come from the heap, and up to 512 MiB of free heap
  // stays mapped for reuse; the peak is what training needs anyway.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

void sleep_unless_stopped(std::chrono::steady_clock::duration d, std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait_for(lock, stop, d, [] { return false; });
}

const char* version() { return GOSSIPD_VERSION; }

std::string version_line(const std::string& program) { return program + " " + version(); }

std::string default_cache_dir() {
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d)
    return (std::filesystem::path(d) / "gossipd").string();
  if (const char* d = std::getenv("HOME"); d && *d)
    return (std::filesystem::path(d) / ".cache" / "gossipd").string();
  return (std::filesystem::temp_directory_path() / "gossipd").string();
}

void set_blas_threads(int threads) { openblas_set_num_threads(threads < 1 ? 1 : threads); }

struct SignalWatcher::Impl {
  asio::io_context io;
  asio::signal_set signals{io, SIGINT, SIGTERM};
  std::thread thread;
};

SignalWatcher::SignalWatcher(std::stop_source& stop) : impl_(std::make_unique<Impl>()) {
  impl_->signals.async_wait([&stop](const asio::error_code& ec, int) {
    if (!ec) stop.request_stop();
  });
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

SignalWatcher::~SignalWatcher() {
  impl_->io.stop();
  impl_->thread.join();
}

}  // namespace gossipd::daemon
