#include "daemon/bench/inproc_cluster.h"

#include "protocol/transport/dispatcher.h"

namespace gossipd::daemon {

InProcCluster::InProcCluster(size_t n, const MembershipOptions& options, const Shape& shape) {
  std::vector<std::string> ids;
  for (size_t i = 0; i < n; ++i) ids.push_back(id(i));
  members_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    auto m = std::make_unique<Member>();
    protocol::NodeOptions no;
    no.id = id(i);
    no.validation.cluster_id = "inproc-cluster";
    no.validation.max_members = n + 8;
    no.initial_members = ids;
    no.receive_thread = false;  // the hub hands each message over on its sender's thread
    m->node = std::make_unique<protocol::Node>(no, hub_);
    hub_.set_sink(m->node->endpoint(), [node = m->node.get()](protocol::RawMessage raw) {
      protocol::dispatch(node->validator(), node->mailbox(), std::move(raw));
    });
    members_[i] = std::move(m);
  }
  for (size_t i = 0; i < n; ++i) {
    Member& m = *members_[i];
    std::map<std::string, std::string> peers;
    for (size_t j = 0; j < n; ++j)
      if (j != i) peers[id(j)] = "inproc-hub://" + id(j);
    proto::Member self;
    self.set_id(id(i));
    self.set_endpoint(m.node->endpoint());
    if (shape) shape(i, self, peers);
    MembershipOptions o = options;
    o.on_lost = [this, lost = m.lost](const std::string& why, const std::vector<std::string>&) {
      std::lock_guard lock(lost_mu_);
      *lost = why;
    };
    m.membership = std::make_unique<Membership>(*m.node, self, peers, o, m.delegate, m.metrics);
  }
}

InProcCluster::~InProcCluster() {
  for (size_t i = 0; i < members_.size(); ++i)
    if (members_[i]) kill(i);
}

void InProcCluster::arm_all() {
  for (auto& m : members_)
    if (m) m->membership->arm();
}

void InProcCluster::kill(size_t i) {
  members_[i]->membership.reset();
  members_[i]->node->close();
  members_[i].reset();
}

bool InProcCluster::listed_everywhere(const std::string& who) const {
  for (const auto& m : members_)
    if (m && !m->membership->knows(who)) return false;
  return true;
}

bool InProcCluster::dropped_everywhere(const std::string& who) const {
  for (const auto& m : members_)
    if (m && m->membership->knows(who)) return false;
  return true;
}

bool InProcCluster::wait_dropped(const std::string& who, std::chrono::steady_clock::time_point deadline) {
  for (auto& m : members_) {
    if (!m) continue;
    const Membership& mm = *m->membership;
    if (!mm.wait_until([&] { return !mm.knows(who); }, deadline, {})) return false;
  }
  return true;
}

double InProcCluster::counter(size_t i, const std::string& name) const {
  // The registry hands back the counter the membership registered under that name.
  return members_[i] ? members_[i]->metrics.counter(name, "").value() : 0.0;
}

double InProcCluster::gauge(size_t i, const std::string& name) const {
  return members_[i] ? members_[i]->metrics.gauge(name, "").value() : 0.0;
}

std::string InProcCluster::lost(size_t i) const {
  std::lock_guard lock(lost_mu_);
  return members_[i] ? *members_[i]->lost : "";
}

proto::Envelope InProcCluster::ping_from(const std::string& from, uint64_t seq) {
  proto::Envelope env;
  env.set_version(protocol::kProtocolVersion);
  env.set_cluster_id("inproc-cluster");
  env.set_sender(from);
  env.set_type(proto::PING);
  env.mutable_probe()->set_seq(seq);
  return env;
}

bool InProcCluster::deliver(size_t i, const proto::Envelope& env) {
  const std::string bytes = env.SerializeAsString();
  protocol::RawMessage raw;
  raw.peer = env.sender();
  const auto* data = reinterpret_cast<const std::byte*>(bytes.data());
  raw.frames.emplace_back(std::vector<std::byte>(data, data + bytes.size()));
  return hub_.deliver("inproc-hub://" + id(i), std::move(raw));
}

}  // namespace gossipd::daemon
