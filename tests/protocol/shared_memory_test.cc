// TensorStream through shared memory between members on one host
// (TensorStream::share_memory, protocol/shm/shm_ring.h): what arrives, what
// falls back to the sockets, what a ring that cannot be the writer's, a
// silent member or a stop do.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <set>
#include <stop_token>

#include "protocol/collectives/tensor_stream.h"
#include "protocol/shm/shm_ring.h"
#include "protocol/wire/errors.h"
#include "tests/protocol/collective_inputs.h"
#include "tests/protocol/test_cluster.h"
#include "tests/support/wait.h"

namespace gossipd::protocol {
namespace {

using testing::rank_input;
using testing::TestCluster;

constexpr uint32_t kShmTag = 11;

std::set<std::string> our_segments() {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm"))
    if (e.path().filename().string().rfind("gossipd-", 0) == 0) names.insert(e.path().filename().string());
  return names;
}

// Whether every segment name there now was there before: waited for, as
// tests running beside this one (ctest -j) make and unlink names of their own.
bool no_name_left(const std::set<std::string>& before) {
  return gossipd::testing::wait_until(
      [&] {
        for (const std::string& n : our_segments())
          if (!before.contains(n)) return false;
        return true;
      },
      std::chrono::seconds(2));
}

// Three members: every pair shares memory (and leaves no name behind);
// tensors sent in order are received in reverse, in place and copied, and
// one over a quarter of the ring takes the sockets, all as sent.
TEST(SharedMemory, PairsOnLoopbackShareAndTensorsArriveInAnyOrder) {
  constexpr size_t kRing = 64 << 10, kTensors = 6, kBig = kRing / 4;  // floats: 4x a quarter of the ring
  const std::set<std::string> before = our_segments();
  TestCluster cluster(3);
  std::vector<size_t> shared(3);
  std::vector<std::vector<float>> got(kTensors);
  std::vector<float> big;
  const uint64_t sent_before = cluster.node(0).payload_bytes_sent();
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kShmTag, cluster.ids());
    TensorStream s(g);
    shared[r] = s.share_memory(kRing);
    EXPECT_EQ(s.share_memory(kRing), shared[r]) << "a second call exchanges nothing";
    if (r == 0) {
      std::vector<TensorStream::SendHandle> hs;
      for (size_t k = 0; k < kTensors; ++k) {
        const std::vector<float> t = rank_input(k, 100 + k);
        hs.push_back(k % 2 ? s.send(1, k, t) : s.send_filled(1, k, t.size(), [&](float* to) {
          std::memcpy(to, t.data(), t.size() * sizeof(float));
        }));
      }
      const std::vector<float> b = rank_input(9, kBig);
      hs.push_back(s.send(1, 99, b));
      for (auto& h : hs) s.wait(h);
    } else if (r == 1) {
      big.resize(kBig);
      s.recv(0, 99, big);
      for (size_t k = kTensors; k-- > 0;) {
        if (k % 2) {
          got[k].resize(100 + k);
          s.recv(0, k, got[k]);
        } else {
          s.recv_used(0, k, 100 + k, [&](const float* in) { got[k].assign(in, in + 100 + k); });
        }
      }
    }
  }));
  EXPECT_EQ(shared, (std::vector<size_t>{2, 2, 2}));
  EXPECT_TRUE(no_name_left(before)) << "a segment's name was left in /dev/shm";
  for (size_t k = 0; k < kTensors; ++k) EXPECT_EQ(got[k], rank_input(k, 100 + k)) << "tensor " << k;
  EXPECT_EQ(big, rank_input(9, kBig));
  size_t floats = kBig;
  for (size_t k = 0; k < kTensors; ++k) floats += 100 + k;
  EXPECT_EQ(cluster.node(0).payload_bytes_sent() - sent_before, floats * sizeof(float))
      << "payload bytes count the tensors, not the handshake";
}

// A ring that holds a few tensors: the writer waits for the reader to free
// room, and a thousand tensors of every size go round it intact.
TEST(SharedMemory, AFullRingWaitsForTheReaderAndWrapsIntact) {
  constexpr size_t kRing = 16 << 10, kTensors = 1000;
  TestCluster cluster(2);
  size_t wrong = 0;
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kShmTag, cluster.ids());
    TensorStream s(g);
    ASSERT_EQ(s.share_memory(kRing), 1u);
    for (size_t k = 0; k < kTensors; ++k) {
      const size_t n = 1 + (k * 37) % 1000;
      if (r == 0) {
        s.wait(s.send(1, k, rank_input(k, n)));
      } else {
        std::vector<float> t(n);
        s.recv(0, k, t);
        wrong += t != rank_input(k, n);
      }
    }
  }));
  EXPECT_EQ(wrong, 0u);
}

// Injected faults must apply, the ZeroMQ path has no direct path, and
// shared memory turned off (--shm-kb 0) is off for the streams too: no
// sharing there, the tensors go as before.
TEST(SharedMemory, NotWithInjectedFaultsOverZeroMqOrWithSharedMemoryOff) {
  NodeOptions faulty;
  faulty.faults.delay = std::chrono::milliseconds(1);
  NodeOptions zmq;
  zmq.data_path = DataPath::kZmq;
  NodeOptions off;
  off.shared_memory_bytes = 0;
  for (const NodeOptions& o : {faulty, zmq, off}) {
    TestCluster cluster(2, o);
    std::vector<float> got(10);
    testing::expect_no_errors(cluster.run([&](size_t r) {
      Group g(cluster.node(r), kShmTag, cluster.ids());
      TensorStream s(g);
      EXPECT_EQ(s.share_memory(), 0u);
      if (r == 0) s.wait(s.send(1, 1, rank_input(1, 10)));
      if (r == 1) s.recv(0, 1, got);
    }));
    EXPECT_EQ(got, rank_input(1, 10));
  }
}

// Rank 1 never comes: rank 0's share_memory fails within the timeout, naming it.
TEST(SharedMemory, AMemberThatNeverAnswersIsPeerTimeoutNamingIt) {
  TestCluster cluster(2);
  CollectiveOptions o;
  o.timeout = std::chrono::milliseconds(300);
  const auto errors = cluster.run(
      [&](size_t r) {
        Group g(cluster.node(r), kShmTag, cluster.ids(), o);
        TensorStream(g).share_memory();
      },
      1);
  ASSERT_TRUE(errors[0]);
  try {
    std::rethrow_exception(errors[0]);
  } catch (const PeerTimeout& e) {
    EXPECT_NE(std::string(e.what()).find("'n1'"), std::string::npos) << e.what();
  }
}

// A receive waiting on the ring ends on a stop, as the socket path's does.
TEST(SharedMemory, AStopEndsAWaitingReceive) {
  TestCluster cluster(2);
  std::stop_source stop;
  CollectiveOptions o;
  o.stop = stop.get_token();
  const auto errors = cluster.run([&](size_t r) {
    Group g(cluster.node(r), kShmTag, cluster.ids(), o);
    TensorStream s(g);
    s.share_memory();
    if (r == 0) {
      std::vector<float> never(5);
      s.recv(1, 1, never);
    } else {
      stop.request_stop();
    }
  });
  ASSERT_TRUE(errors[0]);
  EXPECT_THROW(std::rethrow_exception(errors[0]), Aborted);
}

// The reader checks what another process wrote before it reads a payload.
TEST(ShmRing, AHeaderThatCannotBeTheWritersIsRefused) {
  constexpr size_t kCap = 4096;
  alignas(64) std::byte mem[8192] = {};
  ASSERT_LE(ShmRing::mapping_bytes(kCap), sizeof(mem));
  ShmRing w(mem, kCap, true), rd(mem, kCap, false);
  float* f = w.reserve(3);
  ASSERT_NE(f, nullptr);
  f[0] = 1, f[1] = 2, f[2] = 3;
  w.commit(42);
  auto got = rd.front();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->seq, 42u);
  EXPECT_EQ(std::vector<float>(got->data.begin(), got->data.end()), (std::vector<float>{1, 2, 3}));
  rd.pop();
  EXPECT_FALSE(rd.front());
  EXPECT_EQ(w.reserve(ShmRing::max_floats(kCap) + 1), nullptr) << "over a quarter of the ring";
  ASSERT_NE(w.reserve(2), nullptr);
  w.commit(7);
  // The header now says more floats than the ring could hold.
  const size_t off =
      ShmRing::mapping_bytes(kCap) - kCap + 128;  // after the first frame: 64 + 12 bytes, aligned
  const uint64_t huge = uint64_t{1} << 40;
  std::memcpy(mem + off + sizeof(uint64_t), &huge, sizeof(huge));
  EXPECT_THROW(rd.front(), std::runtime_error);
}

}  // namespace
}  // namespace gossipd::protocol
