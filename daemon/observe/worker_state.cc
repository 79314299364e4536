#include "daemon/observe/worker_state.h"

#include <cstdio>
#include <cstring>

namespace gossipd::daemon {

WorkerState::WorkerState() : start_(std::chrono::steady_clock::now()) { status_.set_state("starting"); }

void WorkerState::update(const std::function<void(proto::Status&)>& fn) {
  std::lock_guard lock(mu_);
  fn(status_);
}

proto::Status WorkerState::snapshot() const {
  std::lock_guard lock(mu_);
  proto::Status s = status_;
  s.set_uptime_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  return s;
}

std::string param_hash(std::span<const float> params) {
  uint64_t h = 0xcbf29ce484222325ULL;
  const auto* bytes = reinterpret_cast<const unsigned char*>(params.data());
  for (size_t i = 0; i < params.size_bytes(); ++i) {
    h ^= bytes[i];
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace gossipd::daemon
