#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>

#include "protocol/transport/modelled_losses.h"
#include "protocol/transport/transport.h"

namespace gossipd::protocol {

// Connects InProcTransports living in one process (unit tests, gossipctl
// simulate). Endpoints are "inproc-hub://<node id>".
class InProcHub {
 public:
  // What becomes of a message to an endpoint nobody is bound to.
  enum class Absent {
    kDrop,  // lost (a test's injection to nowhere reports false)
    kHold,  // held for whoever binds there next, as a ZeroMQ DEALER queues for
            // a peer that is not up yet (members that start one after another)
  };
  explicit InProcHub(Absent absent = Absent::kDrop) : absent_(absent) {}

  using Sink = std::function<void(RawMessage)>;
  struct Inbox {
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<RawMessage> queue;
    bool bound = false;
    // Set: messages go to it on the sender's thread instead of the queue;
    // unbind waits (unique lock) for the calls in progress (shared).
    std::shared_mutex sink_mutex;
    Sink sink;
  };

  std::shared_ptr<Inbox> bind(const std::string& endpoint);
  void unbind(const std::string& endpoint);
  // Delivers raw frames as if sent by transport identity raw.peer; false when
  // nobody is bound there (held for a later binder with Absent::kHold).
  // Tests use it to inject malformed messages.
  bool deliver(const std::string& endpoint, RawMessage raw);
  // Messages and bytes (all frames) delivered from transport identity `peer` so far.
  struct Sent {
    uint64_t messages = 0;
    uint64_t bytes = 0;
  };
  Sent sent_by(const std::string& peer) const;
  // From now on what reaches `endpoint` (bound) is handed to `sink` on the
  // sender's thread, not queued for the binder's receive(): a thousand
  // in-process members then need no receive thread each (InProcCluster).
  // Unbinding the endpoint waits for the sink's calls in progress, so what
  // the sink refers to may go once the endpoint is unbound.
  void set_sink(const std::string& endpoint, Sink sink);
  // From now on (until unmuted) what transport identity `peer` sends is
  // lost on the way, as from a host whose sends stall; its sender cannot tell.
  void mute(const std::string& peer, bool muted = true);
  // The segments this hub's modelled network loses (set before any member
  // starts; gossipctl simulate), or none.
  void set_losses(std::shared_ptr<const ModelledLosses> losses) { losses_ = std::move(losses); }
  const ModelledLosses* losses() const { return losses_.get(); }

 private:
  const Absent absent_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Inbox>> inboxes_;
  std::map<std::string, Sent> sent_;
  std::set<std::string> muted_;
  std::shared_ptr<const ModelledLosses> losses_;
};

// In-process transport: copies frames into the receiver's inbox.
class InProcTransport : public Transport {
 public:
  InProcTransport(InProcHub& hub, std::string node_id);
  ~InProcTransport() override;

  const std::string& node_id() const override { return node_id_; }
  std::string endpoint() const override { return endpoint_; }
  void connect(const std::string& peer, const std::string& endpoint) override;
  void disconnect(const std::string& peer) override;
  void reset(const std::string& /*peer*/) override {}  // nothing is ever queued by reference
  void send(const std::string& peer, std::vector<OutFrame> frames,
            std::chrono::milliseconds timeout) override;
  std::optional<RawMessage> receive(std::chrono::milliseconds timeout) override;
  // Delivery is synchronous: nothing is ever queued.
  void flush_on_close(std::chrono::milliseconds) override {}
  void close() override;
  const ModelledLosses* modelled_losses() const override { return hub_.losses(); }

 private:
  InProcHub& hub_;
  std::string node_id_;
  std::string endpoint_;
  std::shared_ptr<InProcHub::Inbox> inbox_;
  std::mutex peers_mutex_;
  std::map<std::string, std::string> peers_;
  bool closed_ = false;
};

}  // namespace gossipd::protocol
