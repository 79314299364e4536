#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>

#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// The worker's status, written by the training thread and read by the HTTP
// thread. One proto message so /status has its schema in gossip.proto.
class WorkerState {
 public:
  WorkerState();
  void update(const std::function<void(proto::Status&)>& fn);
  proto::Status snapshot() const;

 private:
  mutable std::mutex mu_;
  proto::Status status_;
  std::chrono::steady_clock::time_point start_;
};

// FNV-1a over the bytes of a float buffer, as 16 hex digits: equal replicas
// have equal hashes.
std::string param_hash(std::span<const float> params);

}  // namespace gossipd::daemon
