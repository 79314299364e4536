#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "protocol/shm/payload_ring.h"
#include "protocol/transport/transport.h"

namespace gossipd::protocol {

struct SharedPayloadOptions {
  size_t ring_bytes = size_t{2} << 20;        // per peer sent to; a payload up to half of it goes in
  size_t min_frame_bytes = size_t{16} << 10;  // smaller frames stay on the socket
  size_t max_rings = 16;                      // peers with a ring at once; the least recently used goes
  // A slot whose descriptor never arrived (queued on a connection the bound
  // closed, 10 s at most) is reused after this.
  std::chrono::milliseconds reclaim_after{15000};
};

// The last frame of a message whose payloads went through a ring: the ring
// announced (size and name; none once the reader has mapped it) and which
// frames are descriptors.
struct PayloadTrailer {
  uint64_t ring_bytes = 0;
  std::string ring;
  std::vector<uint16_t> indices;
};

// Messages between members on one host (same_host of their endpoints):
// payload frames of min_frame_bytes or more go through a ring in shared
// memory (PayloadRingWriter, one per peer sent to) and only a descriptor of
// each travels on the socket, followed by a trailer frame naming which
// frames are descriptors; the receiving side copies each payload out of the
// ring and hands the message on as if it had come whole. A new ring is
// announced in the trailers of messages whose payloads still go inline
// until the reader has mapped it; a reader that cannot map one (restarted,
// or a /dev/shm of its own) says so, and the writer makes another, or after
// three refusals keeps that peer's payloads on the socket. Gossip segments
// between members on one host so skip the TCP stack; everything else (the
// envelope, small messages, other hosts, a full ring) goes as before.
//
// A descriptor that does not match its ring (a name not ours, bounds, a
// slot already read or reclaimed) leaves its frame empty: the validator
// drops the message (its payload's size) and counts it.
class SharedPayloadTransport : public Transport {
 public:
  SharedPayloadTransport(std::unique_ptr<Transport> inner, SharedPayloadOptions options = {});
  ~SharedPayloadTransport() override;

  const std::string& node_id() const override { return inner_->node_id(); }
  std::string endpoint() const override { return inner_->endpoint(); }
  void connect(const std::string& peer, const std::string& endpoint) override;
  void disconnect(const std::string& peer) override;
  void reset(const std::string& peer) override { inner_->reset(peer); }
  void send(const std::string& peer, std::vector<OutFrame> frames,
            std::chrono::milliseconds timeout) override;
  std::optional<RawMessage> receive(std::chrono::milliseconds timeout) override;
  void flush_on_close(std::chrono::milliseconds bound) override { inner_->flush_on_close(bound); }
  void close() override { inner_->close(); }
  ConnectionCounts connection_counts() const override { return inner_->connection_counts(); }
  void ask_to_close(const std::string& request) override { inner_->ask_to_close(request); }
  void release(const std::string& peer) override { inner_->release(peer); }

  // Payload bytes sent through rings; descriptors received that did not match.
  uint64_t shared_bytes_sent() const { return shared_bytes_.load(); }
  uint64_t descriptors_refused() const { return refused_.load(); }

 private:
  struct Ring {
    std::unique_ptr<PayloadRingWriter> writer;
    uint64_t last_use = 0;
  };
  // Puts the big frames of `frames` into peer's ring (mutex_ held); the
  // descriptors put, for a cancel when the send fails.
  std::vector<PayloadDescriptor> put_frames(const std::string& peer, std::vector<OutFrame>& frames);
  PayloadRingWriter* ring_for(const std::string& peer);  // mutex_ held; nullptr when none can be made
  void cancel(const std::vector<PayloadDescriptor>& put);
  void restore(RawMessage& m, const PayloadTrailer& t);
  void notify(const std::string& peer, const std::string& ring, const std::string& why);
  void refused_by(const std::string& peer, const std::string& ring);

  std::unique_ptr<Transport> inner_;
  SharedPayloadOptions options_;
  std::mutex mutex_;  // rings_, same_host_, uses_
  std::set<std::string> same_host_;
  std::map<std::string, int> refusals_;           // rings a peer could not map
  std::map<std::string, std::string> endpoints_;  // each peer's, as last connected
  std::map<std::string, Ring> rings_;
  uint64_t uses_ = 0;
  bool warned_ = false;
  PayloadRingReader reader_;  // receive()'s thread only
  std::atomic<uint64_t> shared_bytes_{0}, refused_{0};
};

}  // namespace gossipd::protocol
