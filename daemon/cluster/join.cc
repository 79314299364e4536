#include "daemon/cluster/join.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>

#include "protocol/wire/errors.h"

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

// The next MEMBER_LIST `wanted` accepts, until `deadline`.
std::optional<protocol::Message> next_list(protocol::Node& node,
                                           const std::function<bool(const proto::Envelope&)>& wanted,
                                           Clock::time_point deadline, std::stop_token stop) {
  for (;;) {
    auto m = node.mailbox().pop(proto::MEMBER_LIST, deadline, stop);
    if (!m) {
      if (stop.stop_requested()) throw protocol::Aborted(node.id(), "joining");
      return std::nullopt;
    }
    if (wanted(m->envelope)) return m;
  }
}

std::optional<protocol::Message> next_list(protocol::Node& node, const std::string& from,
                                           Clock::time_point deadline, std::stop_token stop) {
  return next_list(
      node, [&](const proto::Envelope& e) { return e.sender() == from; }, deadline, stop);
}

// The contact first, then up to donors - 1 other members of its table in a
// random order (the rest stand by for silent donors), each connected.
DownloadPlan plan_download(protocol::Node& node, const proto::MemberList& table, const std::string& contact,
                           const proto::Hello& hello, size_t optimizer_floats, size_t donors) {
  DownloadPlan plan;
  plan.segment_lengths = share_cut_lengths(hello);
  plan.param_floats = hello.parameter_floats();
  plan.optimizer_floats = optimizer_floats;
  plan.stall = kRetry * 5;
  plan.take_over = plan.segment_lengths.empty();  // the shares split no mass: a donor keeps its snapshot
  std::vector<const proto::Member*> others;
  for (const auto& m : table.members()) {
    // A member admitted for a later round has no state to give before it enters.
    if (m.id() != contact && m.id() != node.id() && m.since_round() <= table.round()) others.push_back(&m);
  }
  std::shuffle(others.begin(), others.end(), std::mt19937_64(std::random_device{}()));
  plan.donors.push_back(contact);
  for (const proto::Member* m : others) {
    node.add_peer(m->id(), m->endpoint());
    plan.donors.push_back(m->id());
  }
  plan.shares = share_count(plan.segment_lengths, plan.param_floats, plan.optimizer_floats,
                            plan.donors.size(), std::max<size_t>(1, donors));
  return plan;
}

}  // namespace

JoinResult join_cluster(protocol::Node& node, const std::vector<std::string>& endpoints, proto::Hello hello,
                        size_t optimizer_floats, std::chrono::milliseconds timeout, size_t donors,
                        std::stop_token stop, const std::function<void(const ReplicaState&)>& on_state) {
  // Until the contact is known, its answer comes from a stranger.
  node.validator().set_open_types({proto::MEMBER_LIST, proto::STATE_CHUNK});
  const auto started = Clock::now();
  const auto deadline = started + timeout;
  JoinResult r;
  proto::MemberList table;
  // (1) HELLO to each endpoint in turn, through a connection named after it.
  std::vector<std::string> probes;
  for (const auto& ep : endpoints) {
    probes.push_back("join:" + ep);
    node.transport().connect(probes.back(), ep);
  }
  hello.set_ready(false);
  hello.set_by_shares(true);
  // Only the answer to this HELLO names the contact.
  std::random_device entropy;
  hello.set_nonce(std::uniform_int_distribution<uint64_t>(1, UINT64_MAX)(entropy));
  const auto answers = [n = hello.nonce()](const proto::Envelope& e) {
    return e.member_list().answers_nonce() == n;
  };
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
    auto m = next_list(node, answers, std::min(deadline, Clock::now() + kRetry), stop);
    if (!m) continue;
    const proto::MemberList& list = m->envelope.member_list();
    if (!list.refused().empty()) throw JoinRefused("the cluster refused this worker: " + list.refused());
    r.contact = m->envelope.sender();
    r.answer_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    r.topology_seed = list.topology_seed();
    table = list;
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

  // (2) The state in shares, then (3) ready -> the announcement naming our round.
  DownloadPlan plan = plan_download(node, table, r.contact, hello, optimizer_floats, donors);
  std::string from = r.contact;
  for (uint32_t i = 1; i < plan.shares; ++i) from += ", " + plan.donors[i];
  spdlog::info("node '{}': joining through '{}', downloading the state in {} share{} from {}", node.id(),
               r.contact, plan.shares, plan.shares == 1 ? "" : "s", from);
  plan.ask = [&](const std::string& donor, uint32_t index) {
    proto::Hello ask = hello;
    ask.mutable_share()->set_index(index);
    ask.mutable_share()->set_of(plan.shares);
    send_hello(node, donor, ask);
  };
  Download d = download_state(node, plan, stop);
  r.state = std::move(d.state);
  r.donors = std::move(d.donors);
  r.shares_reasked = d.reasked;
  r.shares_taken_over = d.taken_over;
  r.download_ms = d.ms;
  r.snapshot_wait_ms = d.wait_ms;
  if (on_state) on_state(r.state);
  node.validator().set_open_types({proto::HELLO, proto::REUNION});
  hello.set_ready(true);
  hello.clear_share();
  const std::string& admitter = r.donors.front();  // it sent a share: it may admit this worker
  for (;;) {
    if (Clock::now() >= deadline) {
      throw StateTransferError("member '" + admitter +
                               "' sent the state but never admitted this worker within " +
                               std::to_string(timeout.count()) + " ms");
    }
    send_hello(node, admitter, hello);
    auto m = next_list(node, admitter, std::min(deadline, Clock::now() + kRetry), stop);
    if (!m) continue;
    for (const auto& mem : m->envelope.member_list().members()) {
      if (mem.id() == node.id() && mem.since_round() > 0) {
        r.admitted = m->envelope.member_list();
        r.since_round = mem.since_round();
        r.start_at = Clock::now() + std::chrono::milliseconds(
                                        std::min<uint32_t>(m->envelope.member_list().starts_in_ms(), 10000));
        r.join_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
        return r;
      }
    }
  }
}

}  // namespace gossipd::daemon
