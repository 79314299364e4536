#include "daemon/cli.h"

#include <cblas.h>
#include <malloc.h>

#include <csignal>

#include <iostream>

#include "trainer/errors.h"

namespace gossipd::daemon {

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

void set_blas_threads(int threads) { openblas_set_num_threads(threads < 1 ? 1 : threads); }

SignalWatcher::SignalWatcher(std::stop_source& stop) : signals_(io_, SIGINT, SIGTERM) {
  signals_.async_wait([&stop](const asio::error_code& ec, int) {
    if (!ec) stop.request_stop();
  });
  thread_ = std::thread([this] { io_.run(); });
}

SignalWatcher::~SignalWatcher() {
  io_.stop();
  thread_.join();
}

}  // namespace gossipd::daemon
