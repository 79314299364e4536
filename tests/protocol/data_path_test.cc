// Collectives over the direct data path (protocol/collectives/group_wire.h) where it is
// hard: injected faults, CURVE turning it off, groups in flight at once, a
// peer that dies, and agreement with the ZeroMQ path bit for bit.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>

#include "protocol/collectives/ring.h"
#include "protocol/transport/curve.h"
#include "protocol/transport/data_socket.h"
#include "protocol/wire/errors.h"
#include "tests/protocol/collective_inputs.h"
#include "tests/protocol/test_cluster.h"
#include "tests/support/temp_dir.h"

namespace gossipd::protocol {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using testing::input;
using testing::rank_input;
using testing::serial_sum;
using testing::TestCluster;
using testing::wait_until;

CollectiveOptions options(milliseconds timeout = std::chrono::seconds(10)) {
  CollectiveOptions o;
  o.timeout = timeout;
  o.chunk_bytes = 16 << 10;  // several pieces per block
  return o;
}

TEST(DataPath, FaultsOnTheDirectPath) {
  constexpr size_t kRanks = 3, kCount = 50021, kCalls = 5;
  NodeOptions base;
  base.faults.delay = milliseconds(2);
  base.faults.duplicate = 0.3;
  base.faults.reorder = 0.3;
  TestCluster cluster(kRanks, base);
  std::vector<std::vector<float>> out(kRanks, std::vector<float>(kCount));
  std::array<int, kRanks> wrong{};
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), 1, cluster.ids(), options());
    // A first call makes this rank's connections (unarmed: only the delay
    // applies); from then on its frames on them are duplicated and reordered.
    std::vector<float> v = rank_input(r, kCount, 0);
    AllreduceRing(g, v).run();
    if (v != serial_sum(kRanks, kCount, 0)) ++wrong[r];
    ASSERT_NE(g.wire(), nullptr);
    cluster.node(r).arm_faults();
    for (size_t call = 1; call <= kCalls; ++call) {
      v = rank_input(r, kCount, call);
      AllreduceRing(g, v).run();
      if (v != serial_sum(kRanks, kCount, call)) ++wrong[r];
    }
  }));
  EXPECT_EQ(wrong, (std::array<int, kRanks>{}));
  FaultCounts hit;
  uint64_t stale = 0;
  for (size_t r = 0; r < kRanks; ++r) {
    const FaultCounts f = cluster.node(r).fault_counts();
    hit.sent += f.sent;
    hit.duplicated += f.duplicated;
    hit.reordered += f.reordered;
    hit.dropped += f.dropped;
    stale += cluster.node(r).counters().get(RejectReason::kStale);
  }
  // 4 steps x 5 pieces per link per call: the faults hit the data frames.
  EXPECT_GE(hit.sent, (kCalls + 1) * kRanks * 20);
  EXPECT_GE(hit.duplicated, 10u);
  EXPECT_GE(hit.reordered, 10u);
  EXPECT_EQ(hit.dropped, 0u);
  // Every duplicate was dropped as stale, but for at most the copy of the
  // last piece each link carried (nothing after it looks at the link).
  EXPECT_LE(stale, hit.duplicated);
  EXPECT_GE(stale + kRanks, hit.duplicated);
}

TEST(DataPath, DropOnTheDirectPathIsPeerTimeoutNamingTheLeftNeighbour) {
  constexpr size_t kRanks = 3, kCount = 10007;
  constexpr milliseconds kTimeout{600};
  NodeOptions base;
  base.faults.drop = 1.0;  // once armed
  TestCluster cluster(kRanks, base);
  // The groups outlive the failed calls: nobody's connections close early.
  std::vector<std::unique_ptr<Group>> groups;
  for (size_t r = 0; r < kRanks; ++r)
    groups.push_back(std::make_unique<Group>(cluster.node(r), 1, cluster.ids(), options(kTimeout)));
  testing::expect_no_errors(cluster.run([&](size_t r) {
    std::vector<float> v = rank_input(r, kCount, 0);
    AllreduceRing(*groups[r], v).run();
    ASSERT_EQ(v, serial_sum(kRanks, kCount, 0));
  }));
  for (size_t r = 0; r < kRanks; ++r) cluster.node(r).arm_faults();
  struct Outcome {
    bool timeout = false;
    std::string peer;
    Clock::duration took{};
  };
  std::vector<Outcome> outcomes(kRanks);
  const auto errors = cluster.run([&](size_t r) {
    std::vector<float> v = rank_input(r, kCount, 1);
    const auto t0 = Clock::now();
    try {
      AllreduceRing(*groups[r], v).run();
    } catch (const TransportError& e) {
      outcomes[r] = {dynamic_cast<const PeerTimeout*>(&e) != nullptr, e.peer(), Clock::now() - t0};
      throw;
    }
  });
  for (size_t r = 0; r < kRanks; ++r) {
    SCOPED_TRACE(r);
    ASSERT_TRUE(errors[r]) << "an allreduce with every frame lost returned";
    EXPECT_TRUE(outcomes[r].timeout);
    EXPECT_EQ(outcomes[r].peer, cluster.ids()[(r + kRanks - 1) % kRanks]);
    EXPECT_GE(outcomes[r].took, kTimeout);  // the timeout's own, not an earlier give-up
    EXPECT_GT(cluster.node(r).fault_counts().dropped, 0u);
  }
}

TEST(DataPath, CurveTurnsThePathOff) {
  gossipd::testing::TempDir dir("gossipd_data_path_curve");
  const KeyPair keys = generate_keypair();
  const std::filesystem::path key = std::filesystem::path(dir.path()) / "cluster.key";
  const std::filesystem::path pub = std::filesystem::path(dir.path()) / "cluster.pub";
  write_secret_key_file(key, keys);
  write_public_key_file(pub, keys.public_key);
  NodeOptions base;
  base.curve = curve_options_from_files(key, pub);
  ASSERT_EQ(base.data_path, DataPath::kTcp);  // asked for, and still off
  constexpr size_t kRanks = 3, kCount = 20011;
  TestCluster cluster(kRanks, base);
  for (size_t r = 0; r < kRanks; ++r) EXPECT_EQ(cluster.node(r).data_listener(), nullptr) << r;
  std::vector<std::vector<float>> sum(kRanks), gathered(kRanks);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), 1, cluster.ids(), options());
    EXPECT_EQ(g.wire(), nullptr);
    sum[r] = rank_input(r, kCount, 0);
    AllreduceRing(g, sum[r]).run();
    gathered[r] = rank_input(r, kCount, 1);
    AllgatherRing(g, gathered[r]).run();
  }));
  std::vector<float> want_gathered(kCount);
  for (size_t b = 0; b < kRanks; ++b) {
    const BlockRange range = block_range(kCount, kRanks, b);
    for (size_t i = range.begin; i < range.end; ++i) want_gathered[i] = input(b, i, 1);
  }
  for (size_t r = 0; r < kRanks; ++r) {
    EXPECT_EQ(sum[r], serial_sum(kRanks, kCount, 0)) << r;
    EXPECT_EQ(gathered[r], want_gathered) << r;
  }
}

// Two groups over the same three nodes, in opposite rank orders (so each
// pair's rendezvous goes both ways), driven at once by two threads per node.
TEST(DataPath, GroupsInFlightAtOnce) {
  constexpr size_t kRanks = 3, kCount = 40009, kCalls = 4;
  TestCluster cluster(kRanks);
  const std::vector<std::string> forward = cluster.ids();
  const std::vector<std::string> backward(forward.rbegin(), forward.rend());
  std::array<std::atomic<int>, 2> wrong{}, direct{};
  std::atomic<int> done{0};
  testing::expect_no_errors(cluster.run([&](size_t r) {
    const auto work = [&](size_t which) {
      const uint32_t tag = which == 0 ? 11 : 12;
      Group g(cluster.node(r), tag, which == 0 ? forward : backward, options());
      for (size_t call = 0; call < kCalls; ++call) {
        // Different data per group: a piece crossing over would show.
        std::vector<float> v = rank_input(r, kCount, call + 100 * which);
        AllreduceRing(g, v).run();
        if (v != serial_sum(kRanks, kCount, call + 100 * which)) ++wrong[which];
      }
      if (g.wire()) ++direct[which];
      ++done;
    };
    std::exception_ptr other;
    {
      std::jthread second([&] {
        try {
          work(1);
        } catch (...) {
          other = std::current_exception();
        }
      });
      work(0);
    }
    if (other) std::rethrow_exception(other);
  }));
  EXPECT_EQ(done.load(), 2 * static_cast<int>(kRanks));
  EXPECT_EQ(wrong[0].load(), 0);
  EXPECT_EQ(wrong[1].load(), 0);
  EXPECT_EQ(direct[0].load(), static_cast<int>(kRanks));
  EXPECT_EQ(direct[1].load(), static_cast<int>(kRanks));
}

// n2 dies in the middle of a run of calls: its call is aborted, its Node
// closed and its connections with it, as when the process is killed. The
// others get a typed error after the kill (never a hang: that would be the
// test's own timeout), a timeout being the one they were given.
TEST(DataPath, DeadPeerIsATypedError) {
  constexpr size_t kRanks = 3, kCount = 100003;
  constexpr milliseconds kTimeout{1000};
  TestCluster cluster(kRanks);
  std::stop_source kill;
  std::array<std::atomic<int>, kRanks> calls{};
  std::array<int, kRanks> wrong{};
  struct Outcome {
    bool typed = false;                   // PeerLost or PeerTimeout
    std::optional<milliseconds> timeout;  // a PeerTimeout's
    std::string peer, what;
    Clock::time_point when{};
  };
  std::vector<Outcome> outcomes(kRanks);
  std::atomic<int> failed{0};  // survivors that have their error
  Clock::time_point killed{}, died{};
  std::jthread killer([&] {
    wait_until([&] { return calls[0] >= 2 && calls[1] >= 2 && calls[2] >= 2; }, std::chrono::seconds(20));
    killed = Clock::now();
    kill.request_stop();
  });
  testing::expect_no_errors(cluster.run([&](size_t r) {
    CollectiveOptions o = options(kTimeout);
    if (r == 2) o.stop = kill.get_token();
    auto g = std::make_unique<Group>(cluster.node(r), 1, cluster.ids(), o);
    for (size_t call = 0; !(r == 2 && kill.stop_requested()); ++call) {
      std::vector<float> v = rank_input(r, kCount, call);
      try {
        AllreduceRing(*g, v).run();
      } catch (const Aborted&) {
        if (r == 2) break;
        throw;
      } catch (const TransportError& e) {
        if (r == 2) throw;
        const auto* timeout = dynamic_cast<const PeerTimeout*>(&e);
        const bool typed = dynamic_cast<const PeerLost*>(&e) || timeout;
        outcomes[r] = {typed, timeout ? std::optional(timeout->timeout()) : std::nullopt, e.peer(), e.what(),
                       Clock::now()};
        // Hold this rank's Group (its links) until the other survivor has
        // failed too: destroying it closes them, and n0 would see n1 go.
        ++failed;
        wait_until([&] { return failed.load() == 2; }, 4 * kTimeout);
        return;
      }
      if (v != serial_sum(kRanks, kCount, call)) ++wrong[r];
      ++calls[r];
    }
    cluster.node(r).close();
    g.reset();
    died = Clock::now();
  }));
  killer.join();
  EXPECT_EQ(wrong, (std::array<int, kRanks>{}));
  ASSERT_NE(killed, Clock::time_point{}) << "the calls never got going";
  ASSERT_NE(died, Clock::time_point{});
  for (size_t r = 0; r < 2; ++r) {
    SCOPED_TRACE(outcomes[r].what);
    EXPECT_TRUE(outcomes[r].typed) << "rank " << r;
    // Caused by the death: not before n2 was killed (an error before it
    // would be a fault of the live ranks).
    EXPECT_GE(outcomes[r].when, killed) << "rank " << r;
    // A timeout is the call's own (kTimeout), not a longer wait's.
    if (outcomes[r].timeout) {
      EXPECT_EQ(*outcomes[r].timeout, kTimeout) << "rank " << r;
    }
  }
  // n0 waits on n2 and sees its connection close. n1 waits on n0: it sees n0
  // give up, or its own sends to n2 fail first.
  EXPECT_EQ(outcomes[0].peer, "n2");
  EXPECT_TRUE(outcomes[1].peer == "n2" || outcomes[1].peer == "n0") << outcomes[1].peer;
}

// A Group used or destroyed after its Node was closed: a typed error, as
// over ZeroMQ (PeerGone), not a crash.
TEST(DataPath, NodeClosedUnderAGroupIsATypedError) {
  TestCluster cluster(2);
  auto g = std::make_unique<Group>(cluster.node(0), 1, cluster.ids(), options(milliseconds(300)));
  std::vector<float> v(1000, 1.0f);
  // n1 never joins: n0's connection to it is still waiting when n0 closes.
  EXPECT_THROW(AllreduceRing(*g, v).run(), PeerTimeout);
  cluster.node(0).close();
  EXPECT_THROW(AllreduceRing(*g, v).run(), TransportError);
  g.reset();
}

// The two paths run the same schedule: on inputs whose sum depends on the
// order of the additions, they give the same bits.
TEST(DataPath, ZmqAndTcpPathsAgree) {
  constexpr size_t kRanks = 3, kCount = 70001;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1000.0f);
  std::vector<std::vector<float>> inputs(kRanks, std::vector<float>(kCount));
  for (auto& in : inputs) {
    for (float& x : in) x = normal(rng);
  }
  struct Results {
    std::vector<std::vector<float>> allreduce, reduce_scatter, allgather;
  };
  const auto run = [&](DataPath path) {
    NodeOptions base;
    base.data_path = path;
    TestCluster cluster(kRanks, base);
    EXPECT_EQ(cluster.node(0).data_listener() != nullptr, path == DataPath::kTcp);
    Results res{inputs, inputs, inputs};
    testing::expect_no_errors(cluster.run([&](size_t r) {
      Group g(cluster.node(r), 1, cluster.ids(), options());
      EXPECT_EQ(g.wire() != nullptr, path == DataPath::kTcp);
      AllreduceRing(g, res.allreduce[r]).run();
      ReduceScatterRing(g, res.reduce_scatter[r]).run();
      AllgatherRing(g, res.allgather[r]).run();
    }));
    return res;
  };
  const Results tcp = run(DataPath::kTcp);
  const Results zmq = run(DataPath::kZmq);
  const auto same_bits = [](const float* a, const float* b, size_t n) {
    return std::memcmp(a, b, n * sizeof(float)) == 0;
  };
  for (size_t r = 0; r < kRanks; ++r) {
    SCOPED_TRACE(r);
    EXPECT_TRUE(same_bits(tcp.allreduce[r].data(), zmq.allreduce[r].data(), kCount));
    EXPECT_TRUE(same_bits(tcp.allgather[r].data(), zmq.allgather[r].data(), kCount));
    const BlockRange own = block_range(kCount, kRanks, r);
    EXPECT_TRUE(same_bits(tcp.reduce_scatter[r].data() + own.begin, zmq.reduce_scatter[r].data() + own.begin,
                          own.size()));
    // And they did the work: the same sum on every rank, near the exact one;
    // reduce-scatter's block is allreduce's; allgather put each rank's block.
    EXPECT_TRUE(same_bits(tcp.allreduce[r].data(), tcp.allreduce[0].data(), kCount));
    EXPECT_TRUE(
        same_bits(tcp.reduce_scatter[r].data() + own.begin, tcp.allreduce[r].data() + own.begin, own.size()));
    for (size_t i = 0; i < kCount; i += 97) {
      const double exact = double(inputs[0][i]) + double(inputs[1][i]) + double(inputs[2][i]);
      EXPECT_NEAR(tcp.allreduce[r][i], exact, 0.01) << i;
      size_t from = 0;  // whose block i is in
      while (i >= block_range(kCount, kRanks, from).end) ++from;
      EXPECT_EQ(tcp.allgather[r][i], inputs[from][i]) << i;
    }
  }
}

TEST(DataPath, ConnectionsTakeTheChosenCongestionControl) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(fd);
  tune_data_socket(fd.get(), DataSocketTuning{});
  char name[16] = {};
  socklen_t len = sizeof(name);
  ASSERT_EQ(::getsockopt(fd.get(), IPPROTO_TCP, TCP_CONGESTION, name, &len), 0);
  EXPECT_STREQ(name, kDefaultCongestion);
  EXPECT_EQ(congestion_refusal(kDefaultCongestion), "");
}

TEST(DataPath, ACongestionControlTheKernelRefusesLeavesTheSystemsAndTheCollectivesRun) {
  EXPECT_NE(congestion_refusal("no_such_cc"), "");
  NodeOptions base;
  base.data_socket.congestion = "no_such_cc";
  TestCluster cluster(2, base);
  EXPECT_EQ(cluster.node(0).options().data_socket.congestion, "");  // dropped, with a warning
  constexpr size_t kCount = 5000;
  std::vector<std::vector<float>> data{rank_input(0, kCount), rank_input(1, kCount)};
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), 1, cluster.ids(), options());
    ASSERT_NE(g.wire(), nullptr);
    AllreduceRing(g, data[r]).run();
  }));
  EXPECT_EQ(data[0], serial_sum(2, kCount));
  EXPECT_EQ(data[1], serial_sum(2, kCount));
}

}  // namespace
}  // namespace gossipd::protocol
