#include "protocol/transport/inproc_transport.h"

#include <cstring>

#include "protocol/wire/errors.h"

namespace gossipd::protocol {

std::shared_ptr<InProcHub::Inbox> InProcHub::bind(const std::string& endpoint) {
  std::lock_guard lock(mutex_);
  auto& slot = inboxes_[endpoint];
  if (slot && slot->bound) throw ProtocolConfigError("inproc hub: '" + endpoint + "' already bound");
  if (!slot) slot = std::make_shared<Inbox>();  // else: what was held for it
  slot->bound = true;
  return slot;
}

void InProcHub::unbind(const std::string& endpoint) {
  std::shared_ptr<Inbox> inbox;
  {
    std::lock_guard lock(mutex_);
    auto it = inboxes_.find(endpoint);
    if (it == inboxes_.end()) return;
    inbox = std::move(it->second);
    inboxes_.erase(it);
  }
  std::unique_lock sink_lock(inbox->sink_mutex);
  inbox->sink = nullptr;
}

void InProcHub::set_sink(const std::string& endpoint, Sink sink) {
  std::shared_ptr<Inbox> inbox;
  {
    std::lock_guard lock(mutex_);
    auto it = inboxes_.find(endpoint);
    if (it == inboxes_.end() || !it->second->bound)
      throw ProtocolConfigError("inproc hub: no sink for '" + endpoint + "': nobody is bound there");
    inbox = it->second;
  }
  std::unique_lock sink_lock(inbox->sink_mutex);
  inbox->sink = std::move(sink);
}

bool InProcHub::deliver(const std::string& endpoint, RawMessage raw) {
  std::shared_ptr<Inbox> inbox;
  bool bound = false;
  {
    std::lock_guard lock(mutex_);
    if (muted_.count(raw.peer)) return true;  // lost on the way
    auto it = inboxes_.find(endpoint);
    if (it == inboxes_.end()) {
      if (absent_ == Absent::kDrop) return false;
      it = inboxes_.emplace(endpoint, std::make_shared<Inbox>()).first;
    }
    inbox = it->second;
    bound = inbox->bound;
    Sent& sent = sent_[raw.peer];
    ++sent.messages;
    for (const auto& f : raw.frames) sent.bytes += f.size();
  }
  {
    std::shared_lock sink_lock(inbox->sink_mutex);
    if (inbox->sink) {
      inbox->sink(std::move(raw));
      return bound;
    }
  }
  {
    std::lock_guard lock(inbox->mutex);
    inbox->queue.push_back(std::move(raw));
  }
  inbox->cv.notify_one();
  return bound;
}

void InProcHub::mute(const std::string& peer, bool muted) {
  std::lock_guard lock(mutex_);
  if (muted) {
    muted_.insert(peer);
  } else {
    muted_.erase(peer);
  }
}

InProcHub::Sent InProcHub::sent_by(const std::string& peer) const {
  std::lock_guard lock(mutex_);
  const auto it = sent_.find(peer);
  return it == sent_.end() ? Sent{} : it->second;
}

InProcTransport::InProcTransport(InProcHub& hub, std::string node_id)
    : hub_(hub), node_id_(std::move(node_id)), endpoint_("inproc-hub://" + node_id_) {
  if (node_id_.empty()) throw ProtocolConfigError("transport: node id must not be empty");
  inbox_ = hub_.bind(endpoint_);
}

InProcTransport::~InProcTransport() { close(); }

void InProcTransport::connect(const std::string& peer, const std::string& endpoint) {
  std::lock_guard lock(peers_mutex_);
  peers_[peer] = endpoint;
}

void InProcTransport::disconnect(const std::string& peer) {
  std::lock_guard lock(peers_mutex_);
  peers_.erase(peer);
}

void InProcTransport::send(const std::string& peer, std::vector<OutFrame> frames, std::chrono::milliseconds) {
  std::string endpoint;
  {
    std::lock_guard lock(peers_mutex_);
    auto it = peers_.find(peer);
    if (it == peers_.end()) {
      throw PeerGone(node_id_, peer);
    }
    endpoint = it->second;
  }
  RawMessage raw{node_id_, {}};
  for (const auto& f : frames) {
    std::vector<std::byte> bytes(f.size);
    if (f.size > 0) std::memcpy(bytes.data(), f.data, f.size);
    raw.frames.emplace_back(std::move(bytes));
  }
  // Like a DEALER towards an absent peer: the message is silently lost.
  hub_.deliver(endpoint, std::move(raw));
}

std::optional<RawMessage> InProcTransport::receive(std::chrono::milliseconds timeout) {
  std::unique_lock lock(inbox_->mutex);
  if (!inbox_->cv.wait_for(lock, timeout, [&] { return !inbox_->queue.empty(); })) return std::nullopt;
  RawMessage raw = std::move(inbox_->queue.front());
  inbox_->queue.pop_front();
  return raw;
}

void InProcTransport::close() {
  if (closed_) return;
  closed_ = true;
  hub_.unbind(endpoint_);
}

}  // namespace gossipd::protocol
