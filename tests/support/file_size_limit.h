#pragma once

#include <sys/resource.h>

#include <csignal>

namespace gossipd::testing {

// A file-size limit of 4 KiB for its scope (SIGXFSZ ignored meanwhile):
// posix_fallocate then refuses a shared-memory segment as a full /dev/shm
// would (EFBIG rather than ENOSPC). Tests of the fallback to sockets use it.
class TinyFileSizeLimit {
 public:
  TinyFileSizeLimit() : old_handler_(::signal(SIGXFSZ, SIG_IGN)) {
    rlimit tiny{};
    ok_ = ::getrlimit(RLIMIT_FSIZE, &before_) == 0;
    tiny = before_;
    tiny.rlim_cur = 4096;
    ok_ = ok_ && ::setrlimit(RLIMIT_FSIZE, &tiny) == 0;
  }
  ~TinyFileSizeLimit() {
    if (ok_) ::setrlimit(RLIMIT_FSIZE, &before_);
    ::signal(SIGXFSZ, old_handler_);
  }
  TinyFileSizeLimit(const TinyFileSizeLimit&) = delete;
  TinyFileSizeLimit& operator=(const TinyFileSizeLimit&) = delete;
  bool ok() const { return ok_; }

 private:
  rlimit before_{};
  void (*old_handler_)(int);
  bool ok_ = false;
};

}  // namespace gossipd::testing
