#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "daemon/cluster/replica_state.h"
#include "daemon/cluster/state_share.h"

namespace gossipd::daemon {

// One share of a snapshot of the state, for one joiner.
struct ShareTransfer {
  std::string to;
  uint32_t index = 0;
  ShareSpan span;
  std::shared_ptr<const ReplicaState> state;
};

// The shares a contact owes its joiners, sent one at a time on a thread of
// its own: a burst of joiners cannot take every link at once, and the
// worker that queued them does not wait for the download.
class ShareQueue {
 public:
  // `send` streams one share (it reports its own failures); it is called
  // on the queue's thread only, between start() and stop().
  explicit ShareQueue(std::function<void(const ShareTransfer&)> send) : send_(std::move(send)) {}
  ~ShareQueue() { stop(); }
  ShareQueue(const ShareQueue&) = delete;
  ShareQueue& operator=(const ShareQueue&) = delete;

  void start();
  // Ends the thread once the shares queued are sent (each send bounds its
  // own wait).
  void stop();
  void push(ShareTransfer t);
  // Takes the next share, waiting for one; nullopt once `stop` is requested
  // and none is left.
  std::optional<ShareTransfer> pop(std::stop_token stop);

 private:
  std::function<void(const ShareTransfer&)> send_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<ShareTransfer> queue_;
  std::jthread thread_;
};

}  // namespace gossipd::daemon
