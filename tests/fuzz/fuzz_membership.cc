// Membership's handlers (HELLO, MEMBER_LIST, PING, ACK, PING_REQ, LEAVE) on validated
// messages (accusations acted on: --evict-byzantine), with a join policy in place and a worker that reports
// steps (so admitted joiners get a snapshot streamed). The view must stay consistent: this node in it, within
// --max-members.
#include <cassert>

#include "daemon/cluster/membership.h"
#include "daemon/cluster/status_delegate.h"
#include "tests/fuzz/harness.h"

using namespace gossipd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Harness h;
  h.node->validator().set_open_types({proto::HELLO});
  daemon::WorkerState state;
  daemon::StatusDelegate delegate(state);
  daemon::MetricsRegistry metrics;
  daemon::MembershipOptions o;
  o.heartbeat_interval = std::chrono::hours(1);
  o.failure_timeout = std::chrono::hours(2);
  o.admit_ahead = std::chrono::milliseconds(0);
  o.state_chunk_bytes = 64;
  o.max_members = 8;
  proto::Member self;
  self.set_id("self");
  self.set_endpoint("inproc-hub://self");
  daemon::Membership membership(*h.node, self, {{"m1", "inproc-hub://m1"}, {"m2", "inproc-hub://m2"}}, o,
                                delegate, metrics);
  membership.set_join_policy(daemon::JoinPolicy{
      [](const proto::Hello& hello) { return hello.algo() == "crossover" ? "" : "another --algo"; }, 7});
  membership.evict_byzantine(2);  // accusations (ACCUSED) evict on a quorum of 2
  uint64_t round = 0;
  h.each_valid(data, size, [&](protocol::Message& m) {
    membership.handle(m);
    membership.at_step(++round, [](const daemon::ShareSpan&) {
      daemon::ReplicaState s;
      s.params.assign(40, 1.0f);
      s.optimizer.assign(8, 0.5f);
      return s;
    });
    const auto view = membership.view_at(round + 1);
    assert(view.size() >= 1 && view.size() <= o.max_members);
    assert(membership.members().members(0).id() == "self");
  });
  return 0;
}
