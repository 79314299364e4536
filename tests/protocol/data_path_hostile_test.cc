// The direct data path's listener under attack: a raw TCP client (plain
// sockets, 127.0.0.1) sends junk, half a Hello, Hellos from strangers and
// with nonces never announced, and a flood of connections to a node's data
// port while a 3-node cluster runs ring allreduces through that very port's
// connections. Every hostile connection is refused once, for its reason,
// counted as a reject; the allreduces stay exact; the listener still accepts
// the cluster's own connections afterwards. The counts are exact on every
// machine: the cluster's hello timeout never passes during the test (the
// half Hello that waits for one goes to a lone node of its own).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "protocol/collectives/ring.h"
#include "protocol/wire/data_wire.h"
#include "tests/protocol/collective_inputs.h"
#include "tests/protocol/test_cluster.h"
#include "tests/support/raw_tcp_client.h"

namespace gossipd::protocol {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using testing::TestCluster;
using testing::wait_until;

constexpr milliseconds kHelloTimeout{500};       // the lone node's
constexpr milliseconds kNoHelloTimeout{600000};  // the cluster's: none times out during the flood
constexpr milliseconds kWait{5000};              // for what should take milliseconds

using RawClient = gossipd::testing::RawTcpClient;
const int kAck = std::to_integer<int>(wire::kAck);

std::vector<std::byte> hello(const Node& node, const std::string& sender, uint64_t nonce) {
  const auto& v = node.options().validation;
  return wire::encode_hello(wire::Hello{v.version, nonce, v.cluster_id, sender});
}

// The node's refusals and rejects by reason, before and after a step.
struct Tally {
  uint64_t refused = 0;
  std::array<uint64_t, kRejectReasonCount> reasons{};
  static Tally of(Node& node) {
    Tally t;
    t.refused = node.data_listener()->refused();
    for (size_t i = 0; i < kRejectReasonCount; ++i)
      t.reasons[i] = node.counters().get(static_cast<RejectReason>(i));
    return t;
  }
  uint64_t operator[](RejectReason r) const { return reasons[static_cast<size_t>(r)]; }
  uint64_t total() const {
    uint64_t s = 0;
    for (uint64_t r : reasons) s += r;
    return s;
  }
};

// Sends `bytes` on a fresh connection; expects it refused (closed, not
// acked) for `reason`, once.
void expect_refused(Node& node, std::span<const std::byte> bytes, RejectReason reason) {
  SCOPED_TRACE(std::string(reject_reason_name(reason)));
  const Tally before = Tally::of(node);
  RawClient c(node.data_listener()->port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.send(bytes));
  EXPECT_EQ(c.answer(kWait), RawClient::kClosed);
  ASSERT_TRUE(wait_until([&] { return node.data_listener()->refused() == before.refused + 1; }, kWait));
  const Tally after = Tally::of(node);
  EXPECT_EQ(after[reason], before[reason] + 1);
  EXPECT_EQ(after.total(), before.total() + 1);
}

TEST(DataPath, HostileClients) {
  constexpr size_t kRanks = 3, kCount = 30011;
  NodeOptions base;
  base.data_hello_timeout = kNoHelloTimeout;
  TestCluster cluster(kRanks, base);
  Node& target = cluster.node(0);
  ASSERT_NE(target.data_listener(), nullptr);
  const uint16_t port = target.data_listener()->port();

  CollectiveOptions o;
  o.timeout = std::chrono::seconds(10);
  o.chunk_bytes = 16 << 10;  // several pieces per block
  std::atomic<bool> hostile_done{false};
  std::array<std::atomic<int>, kRanks> calls{};
  std::array<int, kRanks> wrong{};
  std::vector<std::exception_ptr> errors;
  std::jthread ranks([&] {
    errors = cluster.run([&](size_t r) {
      Group g(cluster.node(r), 1, cluster.ids(), o);
      // The last element is a vote to stop: the ranks agree on it through
      // the allreduce itself, so all make the same calls.
      for (size_t call = 0;; ++call) {
        std::vector<float> v(kCount + 1);
        for (size_t i = 0; i < kCount; ++i) v[i] = testing::input(r, i, call);
        v[kCount] = hostile_done.load() && call >= 3 ? 1.0f : 0.0f;
        AllreduceRing(g, v).run();
        for (size_t i = 0; i < kCount; ++i) {
          if (v[i] != testing::input(0, i, call) + testing::input(1, i, call) + testing::input(2, i, call))
            ++wrong[r];
        }
        ++calls[r];
        if (v[kCount] > 0) break;
      }
      // New connections through the listener that was attacked: a fresh group.
      Group fresh(cluster.node(r), 2, cluster.ids(), o);
      std::vector<float> v(kCount, static_cast<float>(r + 1));
      AllreduceRing(fresh, v).run();
      if (v != std::vector<float>(kCount, 6.0f)) ++wrong[r];
    });
  });
  // However this test ends, the ranks stop calling (else the join hangs).
  struct Stop {
    std::atomic<bool>& flag;
    ~Stop() { flag = true; }
  } stop_on_exit{hostile_done};
  // The cluster's own connections are made before the attack starts.
  ASSERT_TRUE(wait_until([&] { return calls[0] > 0 && calls[1] > 0 && calls[2] > 0; }, kWait));
  const Tally start = Tally::of(target);
  const int calls_at_start = calls[0];

  std::vector<std::byte> junk(64, std::byte{0xab});
  expect_refused(target, junk, RejectReason::kBadEnvelope);
  {
    auto h = hello(target, "n1", 42);
    h[4] = std::byte{0x7f};  // version
    expect_refused(target, h, RejectReason::kVersion);
  }
  expect_refused(target,
                 wire::encode_hello({target.options().validation.version, 42, "another-cluster", "n1"}),
                 RejectReason::kCluster);
  expect_refused(target, hello(target, "mallory", 42), RejectReason::kUnknownSender);
  expect_refused(target, hello(target, "n1", 0x5eed), RejectReason::kUnexpected);  // never announced
  {
    // A nonce announced to n2 is no good from n1; from n2 it is acked (the
    // raw client speaks the protocol: the refusals above are for their reasons).
    const uint64_t nonce = target.data_listener()->expect("n2");
    expect_refused(target, hello(target, "n1", nonce), RejectReason::kUnexpected);
    RawClient c(port);
    ASSERT_TRUE(c.send(hello(target, "n2", nonce)));
    EXPECT_EQ(c.answer(kWait), kAck);
    EXPECT_TRUE(wait_until([&] { return bool(target.data_listener()->take(nonce)); }, kWait));
  }
  {
    // Half a Hello, then silence: closed once the hello timeout passed (a
    // lone node's, kHelloTimeout).
    NodeOptions lone_options;
    lone_options.id = "lone";
    lone_options.data_hello_timeout = kHelloTimeout;
    lone_options.initial_members = {"n1"};
    Node lone(lone_options);
    const Tally before = Tally::of(lone);
    const auto t0 = Clock::now();
    RawClient c(lone.data_listener()->port());
    const auto h = hello(lone, "n1", 42);
    ASSERT_TRUE(c.send(std::span(h).first(wire::kHelloFixedBytes / 2)));
    EXPECT_EQ(c.answer(kHelloTimeout + kWait), RawClient::kClosed);
    EXPECT_GE(Clock::now() - t0, kHelloTimeout);
    ASSERT_TRUE(wait_until([&] { return lone.data_listener()->refused() == before.refused + 1; }, kWait));
    EXPECT_EQ(Tally::of(lone)[RejectReason::kTruncated], before[RejectReason::kTruncated] + 1);
    EXPECT_EQ(Tally::of(lone).total(), before.total() + 1);
  }
  {
    // A flood that holds its connections open and says nothing: past
    // kMaxPending each new one evicts the oldest (kQueueFull), the rest are
    // refused when they close (kTruncated). Each one is refused exactly once,
    // and a member's Hello in the middle of it is acked at once.
    constexpr size_t kFlood = 200;
    const Tally before = Tally::of(target);
    std::vector<std::unique_ptr<RawClient>> flood;
    for (size_t i = 0; i < kFlood; ++i) {
      flood.push_back(std::make_unique<RawClient>(port));
      ASSERT_TRUE(flood.back()->connected()) << i;
      // Past the pending ones, each new one is refused at once: waiting for
      // that keeps the kernel's accept queue (128) from overflowing, where
      // a dropped SYN would cost a second.
      if (i >= DataListener::kMaxPending) {
        const uint64_t refused = before.refused + (i + 1 - DataListener::kMaxPending);
        ASSERT_TRUE(
            wait_until([&] { return target.data_listener()->refused() >= refused; }, kWait, milliseconds(1)));
      }
    }
    EXPECT_TRUE(wait_until(
        [&] {
          return target.data_listener()->refused() >= before.refused + kFlood - DataListener::kMaxPending;
        },
        kWait));
    {
      const uint64_t nonce = target.data_listener()->expect("n2");
      RawClient legit(port);
      ASSERT_TRUE(legit.send(hello(target, "n2", nonce)));
      EXPECT_EQ(legit.answer(kWait), kAck);
      EXPECT_TRUE(wait_until([&] { return bool(target.data_listener()->take(nonce)); }, kWait));
    }
    for (auto& c : flood) c->close();
    ASSERT_TRUE(
        wait_until([&] { return target.data_listener()->refused() == before.refused + kFlood; }, kWait));
    const Tally after = Tally::of(target);
    const uint64_t full = after[RejectReason::kQueueFull] - before[RejectReason::kQueueFull];
    const uint64_t truncated = after[RejectReason::kTruncated] - before[RejectReason::kTruncated];
    EXPECT_EQ(full + truncated, kFlood);
    EXPECT_EQ(after.total(), before.total() + kFlood);
    EXPECT_EQ(full, kFlood - DataListener::kMaxPending + 1);  // + the one the member's Hello evicted
  }
  // The attack ran while the cluster was calling.
  EXPECT_GT(calls[0].load(), calls_at_start);
  hostile_done = true;
  ranks.join();
  testing::expect_no_errors(errors);
  EXPECT_EQ(wrong, (std::array<int, kRanks>{}));
  EXPECT_GE(calls[0].load(), 4);
  // Every reject on the target was one of the refusals: the cluster's own
  // traffic was never turned away.
  const Tally end = Tally::of(target);
  EXPECT_EQ(end.total() - start.total(), end.refused - start.refused);
  EXPECT_EQ(end.refused - start.refused, 6 + 200u);  // six expect_refused, the flood
}

}  // namespace
}  // namespace gossipd::protocol
