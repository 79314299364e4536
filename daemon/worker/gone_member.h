#pragma once

#include <cstdint>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/cluster/membership.h"
#include "daemon/config/run_options.h"
#include "protocol/wire/errors.h"

namespace gossipd::daemon {

// A synchronous mode spread over processes (a grid, a pipeline) cannot go
// on without one of them. When its step fails with `error`, this waits up
// to `wait` for membership to drop a member of `members` (every process
// learns it by heartbeat, also those that share no group with it) and
// throws a TransportError naming it and saying what to do (`restart`);
// otherwise, or on `stop`, it rethrows `error`. Call it from the handler
// that caught `error`.
struct GoneMember {
  Membership& membership;
  const std::vector<std::string>& members;
  std::string self;     // this node's id
  std::string what;     // "grid cell", "pipeline stage"
  std::string restart;  // "restart every cell with the same --grid"
  std::chrono::milliseconds wait;
};
// How long a failed step waits for membership to name the member gone:
// the eviction's bound after the step's own timeout.
inline std::chrono::milliseconds gone_wait(const RunOptions& o) {
  return std::chrono::milliseconds(eviction_bound_ms(o) + o.timeout_ms);
}

[[noreturn]] void rethrow_naming_the_gone(const GoneMember& g, const protocol::TransportError& error,
                                          uint64_t round, std::stop_token stop);

// Runs `step` (training round `round`), naming the member gone if it fails.
template <typename Step>
auto naming_the_gone(const GoneMember& g, uint64_t round, std::stop_token stop, Step&& step) {
  try {
    return step();
  } catch (const protocol::Aborted&) {
    throw;
  } catch (const protocol::TransportError& e) {
    rethrow_naming_the_gone(g, e, round, stop);
  }
}

}  // namespace gossipd::daemon
