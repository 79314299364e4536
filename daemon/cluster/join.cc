#include "daemon/cluster/join.h"

#include <spdlog/spdlog.h>

#include "protocol/errors.h"

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kRetry = std::chrono::milliseconds(2000);

void send_hello(protocol::Node& node, const std::string& to, const proto::Hello& hello) {
  proto::Envelope env = node.envelope(proto::HELLO);
  *env.mutable_hello() = hello;
  try {
    node.transport().send(to, {protocol::envelope_frame(env)}, std::chrono::milliseconds(100));
  } catch (const protocol::PeerTimeout&) {
    // Not connected yet: the retry sends again.
  }
}

// The next MEMBER_LIST from `from` ("" = anyone) until `deadline`.
std::optional<protocol::Message> next_list(protocol::Node& node, const std::string& from,
                                           Clock::time_point deadline, std::stop_token stop) {
  for (;;) {
    auto m = node.mailbox().pop(proto::MEMBER_LIST, deadline, stop);
    if (!m) {
      if (stop.stop_requested()) throw protocol::Aborted(node.id(), "joining");
      return std::nullopt;
    }
    if (from.empty() || m->envelope.sender() == from) return m;
  }
}

}  // namespace

JoinResult join_cluster(protocol::Node& node, const std::vector<std::string>& endpoints, proto::Hello hello,
                        size_t optimizer_floats, std::chrono::milliseconds timeout, std::stop_token stop,
                        const std::function<void(const ReplicaState&)>& on_state) {
  // Until the contact is known, its answer comes from a stranger.
  node.validator().set_open_types({proto::MEMBER_LIST, proto::STATE_CHUNK});
  const auto deadline = Clock::now() + timeout;
  JoinResult r;
  // (1) HELLO to each endpoint in turn, through a connection named after it.
  std::vector<std::string> probes;
  for (const auto& ep : endpoints) {
    probes.push_back("join:" + ep);
    node.transport().connect(probes.back(), ep);
  }
  hello.set_ready(false);
  std::string contact_endpoint;
  for (size_t attempt = 0; r.contact.empty(); ++attempt) {
    if (Clock::now() >= deadline) {
      throw NoMemberAnswered("no member answered at " + endpoints.front() +
                             (endpoints.size() > 1 ? " (or the other --join endpoints)" : "") + " within " +
                             std::to_string(timeout.count()) +
                             " ms: check the endpoint, --cluster-id and the CURVE keys, and that no live "
                             "member already uses this --id");
    }
    send_hello(node, probes[attempt % probes.size()], hello);
    auto m = next_list(node, "", std::min(deadline, Clock::now() + kRetry), stop);
    if (!m) continue;
    const proto::MemberList& list = m->envelope.member_list();
    if (!list.refused().empty()) throw JoinRefused("the cluster refused this worker: " + list.refused());
    r.contact = m->envelope.sender();
    r.topology_seed = list.topology_seed();
    for (const auto& mem : list.members()) {
      if (mem.id() == r.contact) contact_endpoint = mem.endpoint();
    }
  }
  // The probes connect under this node's id too, and a member's socket
  // takes one connection per id: they go before the real one is made.
  for (const auto& p : probes) node.transport().disconnect(p);
  if (!contact_endpoint.empty()) node.add_peer(r.contact, contact_endpoint);
  if (!node.validator().is_member(r.contact)) {
    throw StateTransferError("member '" + r.contact + "' answered but is not in its own member list");
  }
  spdlog::info("node '{}': joining through '{}', downloading the state", node.id(), r.contact);

  // (2) The state, then (3) ready -> the announcement naming our round.
  r.state = receive_state(node, r.contact, hello.parameter_floats(), optimizer_floats, kRetry * 5, stop);
  if (on_state) on_state(r.state);
  node.validator().set_open_types({proto::HELLO});
  hello.set_ready(true);
  for (;;) {
    if (Clock::now() >= deadline) {
      throw StateTransferError("member '" + r.contact +
                               "' sent the state but never admitted this worker within " +
                               std::to_string(timeout.count()) + " ms");
    }
    send_hello(node, r.contact, hello);
    auto m = next_list(node, r.contact, std::min(deadline, Clock::now() + kRetry), stop);
    if (!m) continue;
    for (const auto& mem : m->envelope.member_list().members()) {
      if (mem.id() == node.id() && mem.since_round() > 0) {
        r.admitted = m->envelope.member_list();
        r.since_round = mem.since_round();
        r.start_at = Clock::now() + std::chrono::milliseconds(
                                        std::min<uint32_t>(m->envelope.member_list().starts_in_ms(), 10000));
        return r;
      }
    }
  }
}

}  // namespace gossipd::daemon
