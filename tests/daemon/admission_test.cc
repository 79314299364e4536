// A contact's joiners on their own (daemon/cluster/admission.h): what each
// asked for, when it may be admitted, when it is forgotten. Time is passed
// in, nothing sleeps, nothing is sent.
#include "daemon/cluster/admission.h"

#include <gtest/gtest.h>

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
using daemon::Admission;

const auto t0 = Admission::Clock::time_point{} + 1h;

proto::Hello hello(const std::string& endpoint, size_t params = 100) {
  proto::Hello h;
  h.set_endpoint(endpoint);
  h.set_group("g");
  h.set_parameter_floats(params);
  h.set_optimizer_state_floats(params);
  return h;
}

TEST(Admission, AJoinerIsSentTheWholeStateOnceConnectedAndThenMayBeAdmitted) {
  Admission a(8, 60s);
  EXPECT_FALSE(a.open());
  a.set_policy(daemon::JoinPolicy{[](const proto::Hello&) { return std::string(); }, 7});
  EXPECT_TRUE(a.open());
  EXPECT_EQ(a.topology_seed(), 7u);
  EXPECT_TRUE(a.hello("j", hello("tcp://j:1"), "", t0).empty());
  EXPECT_FALSE(a.take_ready("j"));      // its state has not gone out
  EXPECT_TRUE(a.due().shares.empty());  // not connected yet: its state would go to no one
  a.connected("j", "tcp://elsewhere:1");
  EXPECT_TRUE(a.due().shares.empty());
  a.connected("j", "tcp://j:1");
  const auto due = a.due();
  ASSERT_EQ(due.shares.size(), 1u);
  EXPECT_EQ(due.shares[0].to, "j");
  EXPECT_EQ(due.shares[0].span.floats(), 200u);  // the whole state
  EXPECT_TRUE(due.kept.count("j"));              // shares cut anywhere: one snapshot serves all
  EXPECT_TRUE(a.due().shares.empty());           // once
  a.hello("j", hello("tcp://j:1"), "", t0);      // a repeated HELLO asks nothing more
  EXPECT_TRUE(a.due().shares.empty());
  const auto ready = a.take_ready("j");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->endpoint, "tcp://j:1");
  EXPECT_EQ(ready->group, "g");
  EXPECT_FALSE(a.serving("j"));
}

TEST(Admission, AHeldSnapshotServesALaterShareAtOnce) {
  Admission a(8, 60s);
  auto h = hello("tcp://j:1");
  h.mutable_share()->set_index(0);
  h.mutable_share()->set_of(2);
  a.hello("j", h, "", t0);
  a.connected("j", "tcp://j:1");
  ASSERT_EQ(a.due().shares.size(), 1u);
  auto state = std::make_shared<const daemon::ReplicaState>();
  a.hold("j", state);
  h.mutable_share()->set_index(1);
  const auto now = a.hello("j", h, "", t0);
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0].index, 1u);
  EXPECT_EQ(now[0].state, state);
  EXPECT_TRUE(a.due().shares.empty());  // not again at the next step
}

TEST(Admission, ARefusedJoinerIsNeverAdmittedAndForgottenSooner) {
  Admission a(8, 60s);
  a.hello("no", hello("tcp://no:1"), "wrong --algo", t0);
  a.hello("yes", hello("tcp://yes:1"), "", t0);
  a.connected("no", "tcp://no:1");
  a.connected("yes", "tcp://yes:1");
  const auto due = a.due();
  ASSERT_EQ(due.shares.size(), 1u);  // the accepted one's, only
  EXPECT_EQ(due.shares[0].to, "yes");
  EXPECT_FALSE(a.take_ready("no"));
  EXPECT_TRUE(a.expire(t0 + 1s).empty());
  const auto gone = a.expire(t0 + 2s);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].id, "no");
  EXPECT_TRUE(gone[0].refused);
  EXPECT_TRUE(a.expire(t0 + 59s).empty());
  const auto late = a.expire(t0 + 60s);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].id, "yes");
  EXPECT_FALSE(late[0].refused);
  EXPECT_EQ(a.pending(), 0u);
}

TEST(Admission, HellosFromNewIdsBeyondTheLimitAreOneJoinTooMany) {
  Admission a(1, 60s);
  EXPECT_FALSE(a.full("a"));
  a.hello("a", hello("tcp://a:1"), "", t0);
  EXPECT_FALSE(a.full("a"));  // its own repeat is served
  EXPECT_TRUE(a.full("b"));
  a.forget("a");  // it entered the table otherwise
  EXPECT_FALSE(a.full("b"));
}

}  // namespace
}  // namespace gossipd::testing
