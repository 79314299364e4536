// A silent rank or an abort must end every collective call with a typed
// error naming who and which timeout (or the abort) ended it - never a
// hang (that would be the test's own timeout).
#include <gtest/gtest.h>

#include "protocol/collectives/ring.h"
#include "protocol/wire/errors.h"
#include "tests/protocol/test_cluster.h"

namespace gossipd::protocol {
namespace {

using Clock = std::chrono::steady_clock;
using testing::TestCluster;

TEST(CollectiveFailure, SilentRankGivesPeerTimeoutNamingIt) {
  constexpr size_t kRanks = 3;
  constexpr auto kTimeout = std::chrono::milliseconds(700);
  TestCluster cluster(kRanks);
  // n2 is up (its sockets answer) but never joins the collective.
  struct Outcome {
    std::string peer;
    std::chrono::milliseconds timeout{0};
    Clock::duration took{};
  };
  std::vector<Outcome> outcomes(kRanks - 1);
  auto errors = cluster.run(
      [&](size_t r) {
        CollectiveOptions o;
        o.timeout = kTimeout;
        Group g(cluster.node(r), 1, cluster.ids(), o);
        std::vector<float> v(100000, 1.0f);
        const auto t0 = Clock::now();
        try {
          AllreduceRing(g, v).run();
        } catch (const PeerTimeout& e) {
          outcomes[r] = {e.peer(), e.timeout(), Clock::now() - t0};
          throw;
        } catch (const TransportError& e) {
          outcomes[r] = {e.peer(), {}, Clock::now() - t0};
          throw;
        }
      },
      kRanks - 1);
  for (size_t r = 0; r + 1 < kRanks; ++r) {
    ASSERT_TRUE(errors[r]) << "rank " << r << " finished an allreduce with a silent member";
  }
  // n0 gives up on n2 not before its timeout (a slow machine only makes it
  // later; a hang would be the test's own timeout).
  EXPECT_GE(outcomes[0].took, kTimeout);
  // n0's left neighbour is the silent n2; n1 waits on n0, which is stuck:
  // a timeout too over ZeroMQ, on the direct path n0 closing its connection
  // when it gives up (PeerLost), both naming n0.
  EXPECT_EQ(outcomes[0].peer, "n2");
  EXPECT_EQ(outcomes[0].timeout, kTimeout);
  EXPECT_EQ(outcomes[1].peer, "n0");
}

// The peer is closed before the call (no "midway": the call cannot tell).
TEST(CollectiveFailure, AClosedPeerGivesPeerTimeoutNamingIt) {
  constexpr auto kTimeout = std::chrono::milliseconds(700);
  TestCluster cluster(2);
  cluster.node(1).close();  // dead: sockets gone
  CollectiveOptions o;
  o.timeout = kTimeout;
  Group g(cluster.node(0), 1, cluster.ids(), o);
  std::vector<float> v(1 << 20, 1.0f);
  try {
    AllreduceRing(g, v).run();
    FAIL() << "allreduce with a dead peer returned";
  } catch (const PeerTimeout& e) {
    EXPECT_EQ(e.peer(), "n1");
    EXPECT_EQ(e.node(), "n0");
    EXPECT_NE(std::string(e.what()).find("n1"), std::string::npos);
    // The call gave up by the timeout it was given, not by a longer wait
    // of something else (a retry's, a reconnection's).
    EXPECT_EQ(e.timeout(), kTimeout);
  }
  // The buffer is ours again (zero-copy sends were released): writable now.
  v.assign(v.size(), 2.0f);
}

TEST(CollectiveFailure, StopTokenAbortsABlockedCall) {
  TestCluster cluster(2);
  std::stop_source stop;
  CollectiveOptions o;
  o.timeout = std::chrono::seconds(60);
  o.stop = stop.get_token();
  Group g(cluster.node(0), 1, cluster.ids(), o);
  std::vector<float> v(1000, 1.0f);
  std::jthread aborter([&] {
    // The sleep is the point: n1 never joins, so by now the call is blocked
    // waiting for it, and the stop must end the wait.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop.request_stop();
  });
  // Aborted, not PeerTimeout: the call's own timeout (60 s) cannot have
  // ended it, so the stop did; no bound on how soon is needed.
  EXPECT_THROW(AllreduceRing(g, v).run(), Aborted);
}

// After a failed call, the group can be used again once everyone is back:
// leftovers of the failed call are dropped as stale, not mistaken for new data.
TEST(CollectiveFailure, GroupRecoversAfterATimeout) {
  TestCluster cluster(2);
  CollectiveOptions o;
  o.timeout = std::chrono::milliseconds(300);
  Group g0(cluster.node(0), 1, cluster.ids(), o);
  Group g1(cluster.node(1), 1, cluster.ids(), o);
  std::vector<float> v0(5000, 1.0f);
  EXPECT_THROW(AllreduceRing(g0, v0).run(), PeerTimeout);  // n1 was not there
  g1.next_seq();  // n1 skips the call n0 gave up on, as a re-formed ring would
  std::vector<std::vector<float>> v{std::vector<float>(5000, 1.0f), std::vector<float>(5000, 2.0f)};
  testing::expect_no_errors(cluster.run([&](size_t r) { AllreduceRing(r == 0 ? g0 : g1, v[r]).run(); }));
  EXPECT_EQ(v[0], std::vector<float>(5000, 3.0f));
  EXPECT_EQ(v[1], std::vector<float>(5000, 3.0f));
}

}  // namespace
}  // namespace gossipd::protocol
