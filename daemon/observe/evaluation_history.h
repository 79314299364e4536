#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <string>

#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// A member's evaluations so far (the records its JSON lines get), the last
// `capacity` of them: what /history serves and the page at / draws, so a
// page opened mid-run shows the whole curve. Each is rendered once, as it
// comes (the page asks every second). Thread-safe.
class EvaluationHistory {
 public:
  explicit EvaluationHistory(size_t capacity = 4096) : capacity_(capacity) {}
  void add(const proto::EpochRecord& record);
  // The records, oldest first, as a JSON array of EpochRecord objects.
  std::string json() const;
  size_t size() const;

 private:
  size_t capacity_;
  mutable std::mutex mu_;
  std::deque<std::string> records_;  // each as JSON
};

}  // namespace gossipd::daemon
