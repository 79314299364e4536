// Membership's events in process, over the real ZeroMQ loopback transport:
// a LEAVE is flushed when the leaver's node closes (not slept on), and the
// peer's view change wakes whoever waits on it.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "daemon/cluster/membership.h"
#include "daemon/cluster/status_delegate.h"

namespace gossipd::daemon {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::unique_ptr<protocol::Node> node(const std::string& id, const std::string& peer) {
  protocol::NodeOptions o;
  o.id = id;
  o.listen = "tcp://127.0.0.1:0";
  o.initial_members = {peer};
  return std::make_unique<protocol::Node>(o);
}

// Failure detection never armed and a timeout of hours: only a LEAVE can
// take a member out of the other's view.
MembershipOptions no_eviction() {
  MembershipOptions o;
  o.failure_timeout = std::chrono::hours(2);
  return o;
}

proto::Member member(const std::string& id, const protocol::Node& n) {
  proto::Member m;
  m.set_id(id);
  m.set_endpoint(n.endpoint());
  return m;
}

// What a training member has in flight when it is told to stop: payloads
// queued to the peer ahead of the LEAVE (junk here, which the peer rejects
// and counts; its place in the queue is what matters).
void queue_payloads(protocol::Node& from, const std::string& to) {
  auto bytes = std::make_shared<std::vector<std::byte>>(4 << 20, std::byte{0x5a});
  for (int i = 0; i < 4; ++i) {
    from.transport().send(to,
                          {protocol::envelope_frame(from.envelope(proto::SEGMENT)),
                           protocol::OutFrame::borrowed(bytes->data(), bytes->size(), bytes)},
                          10s);
  }
}

// One run: "a" queues 16 MB to "b", leaves behind it, and its node is gone,
// sockets, context and all, as at the end of a process. With the sockets'
// queues dropped at close, the LEAVE would be lost (b then keeps a in its
// view for as long as the failure timeout).
bool b_sees_the_leave_of_a_gone_node() {
  auto a = node("a", "b");
  auto b = node("b", "a");
  WorkerState state_a, state_b;
  StatusDelegate delegate_a(state_a), delegate_b(state_b);
  MetricsRegistry metrics_a, metrics_b;
  Membership mb(*b, member("b", *b), {{"a", a->endpoint()}}, no_eviction(), delegate_b, metrics_b);
  {
    Membership ma(*a, member("a", *a), {{"b", b->endpoint()}}, no_eviction(), delegate_a, metrics_a);
    EXPECT_TRUE(mb.view().contains("a"));
    queue_payloads(*a, "b");
    ma.leave();
  }
  a->close();
  a.reset();  // the ZeroMQ context ends: the flush is over (or given up) by now
  return mb.wait_until([&] { return !mb.view().contains("a"); }, Clock::now() + 30s, {});
}

TEST(MembershipLeave, APeerTakesTheLeaverOutOfItsViewOnEveryOf50Runs) {
  for (int run = 0; run < 50; ++run) {
    ASSERT_TRUE(b_sees_the_leave_of_a_gone_node()) << "run " << run << ": the LEAVE never arrived";
  }
}

}  // namespace
}  // namespace gossipd::daemon
