#include "daemon/modes/groups/overlapped_exchange.h"

#include <algorithm>

namespace gossipd::daemon {

OverlappedExchange::OverlappedExchange(ShardClient& client, size_t params)
    : client_(client), grads_(params, 0.0f), fresh_(params, 0.0f) {}

OverlappedExchange::~OverlappedExchange() {
  if (!in_flight_.valid()) return;
  try {
    in_flight_.get();
  } catch (...) {  // stopped or failed with the run: nothing is left to apply it to
  }
}

void OverlappedExchange::start(uint64_t step, float lr, std::pair<size_t, size_t> shards,
                               std::pair<size_t, size_t> range, std::span<const float> grads,
                               std::span<const float> params, std::vector<uint64_t> computed_on,
                               std::stop_token stop) {
  range_ = range;
  computed_on_ = std::move(computed_on);
  const auto first = static_cast<std::ptrdiff_t>(range.first),
             last = static_cast<std::ptrdiff_t>(range.second);
  std::copy(grads.begin() + first, grads.begin() + last, grads_.begin() + first);
  std::copy(params.begin() + first, params.begin() + last, fresh_.begin() + first);
  in_flight_ = std::async(std::launch::async, [this, step, lr, shards, stop] {
    client_.exchange(step, lr, shards, grads_, fresh_, stop, computed_on_);
  });
}

void OverlappedExchange::finish(std::span<float> params) {
  std::future<void> done = std::move(in_flight_);
  done.get();
  std::copy(fresh_.begin() + static_cast<std::ptrdiff_t>(range_.first),
            fresh_.begin() + static_cast<std::ptrdiff_t>(range_.second),
            params.begin() + static_cast<std::ptrdiff_t>(range_.first));
}

}  // namespace gossipd::daemon
