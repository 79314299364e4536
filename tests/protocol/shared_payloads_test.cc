// Payloads between members on one host through shared memory
// (protocol/shm/payload_ring.h, protocol/transport/shared_payload_transport.h): slots
// taken in any order give their space back, a slot whose descriptor never
// came is reclaimed and its late reader refused, descriptors that do not
// match their ring are refused; between transports on loopback big frames
// go through the ring intact and small ones stay on the socket, a restarted
// reader gets a new ring, a full ring or a full /dev/shm keeps payloads on
// the socket; a Node turns it off with injected faults or shared memory off.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "protocol/shm/payload_ring.h"
#include "protocol/transport/shared_payload_transport.h"
#include "protocol/transport/zmq_transport.h"
#include "tests/protocol/test_cluster.h"
#include "tests/support/captured_log.h"
#include "tests/support/file_size_limit.h"

namespace gossipd::protocol {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr size_t kRing = kMinPayloadRingBytes;  // 64 KiB: a 4 KiB payload takes a 4160-byte slot

std::vector<std::byte> pattern(size_t n, int seed) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::byte>((i * 31 + static_cast<size_t>(seed) * 7) % 251);
  return v;
}

size_t names_in_dev_shm(const std::string& name) {
  return std::filesystem::exists("/dev/shm" + name) ? 1 : 0;
}

TEST(PayloadRing, SlotsTakenInAnyOrderGiveTheirSpaceBack) {
  PayloadRingWriter writer(kRing, 60s);
  PayloadRingReader reader;
  std::vector<PayloadDescriptor> put;
  while (const auto d = writer.put(pattern(4096, static_cast<int>(put.size())))) put.push_back(*d);
  ASSERT_GE(put.size(), 10u) << "a 64 KiB ring holds a dozen 4 KiB payloads";
  EXPECT_FALSE(writer.put(pattern(4096, 99))) << "full";
  for (size_t k = put.size(); k-- > 0;) {  // newest first: the oldest frees the space last
    std::string why;
    const auto got = reader.take(put[k], &why);
    ASSERT_TRUE(got) << "slot " << k << ": " << why;
    EXPECT_EQ(*got, pattern(4096, static_cast<int>(k)));
  }
  EXPECT_TRUE(writer.mapped_by_reader());
  EXPECT_EQ(names_in_dev_shm(writer.name()), 0u) << "the reader unlinks the name once mapped";
  for (int round = 0; round < 3 * static_cast<int>(put.size()); ++round) {  // around the ring again, twice
    const auto d = writer.put(pattern(4096, 1000 + round));
    ASSERT_TRUE(d) << "put " << round << " found no room";
    std::string why;
    const auto got = reader.take(*d, &why);
    ASSERT_TRUE(got) << why;
    EXPECT_EQ(*got, pattern(4096, 1000 + round));
  }
  EXPECT_EQ(writer.reclaimed(), 0u);
}

TEST(PayloadRing, ASlotNeverReadIsReclaimedAndItsLateReaderRefused) {
  PayloadRingWriter writer(kRing, 50ms);
  PayloadRingReader reader;
  const auto lost = writer.put(pattern(4096, 1));  // its descriptor never reaches the reader
  ASSERT_TRUE(lost);
  const auto t0 = Clock::now();
  std::vector<PayloadDescriptor> put;
  while (const auto d = writer.put(pattern(4096, 2), t0)) put.push_back(*d);
  for (const auto& d : put) ASSERT_TRUE(reader.take(d, nullptr));
  EXPECT_FALSE(writer.put(pattern(4096, 3), t0)) << "the lost slot holds the tail before its time";
  const auto later = writer.put(pattern(4096, 3), t0 + 60ms);
  ASSERT_TRUE(later) << "reclaimed after reclaim_after";
  EXPECT_EQ(writer.reclaimed(), 1u);
  std::string why;
  EXPECT_FALSE(reader.take(*lost, &why)) << "a reclaimed slot was read";
  EXPECT_FALSE(why.empty());
}

TEST(PayloadRing, DescriptorsThatDoNotMatchTheirRingAreRefused) {
  PayloadRingWriter writer(kRing, 60s);
  PayloadRingReader reader;
  const auto d = writer.put(pattern(12000, 5));
  ASSERT_TRUE(d);
  const auto decoded = decode_descriptor(encode_descriptor(*d));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->ring, d->ring);
  EXPECT_EQ(decoded->offset, d->offset);
  EXPECT_EQ(decoded->seq, d->seq);
  std::vector<std::byte> junk = encode_descriptor(*d);
  junk.pop_back();
  EXPECT_FALSE(decode_descriptor(junk)) << "a truncated descriptor";
  EXPECT_FALSE(decode_descriptor(pattern(64, 0))) << "bytes that are no descriptor";
  const auto refused = [&](PayloadDescriptor bad) {
    std::string why;
    return !reader.take(bad, &why) && !why.empty();
  };
  PayloadDescriptor bad = *d;
  bad.ring = "/etc-passwd";
  EXPECT_TRUE(refused(bad)) << "a name not of ours";
  bad = *d;
  bad.offset = kRing - 64;
  EXPECT_TRUE(refused(bad)) << "a slot past the end";
  bad = *d;
  bad.offset += 8;
  EXPECT_TRUE(refused(bad)) << "a slot off its alignment";
  bad = *d;
  bad.length -= 1;
  EXPECT_TRUE(refused(bad)) << "another length";
  bad = *d;
  bad.seq += 1;
  EXPECT_TRUE(refused(bad)) << "another put's seq";
  bad = *d;
  bad.ring_bytes *= 2;
  EXPECT_TRUE(refused(bad)) << "a ring of another size";
  std::string why;
  const auto got = reader.take(*d, &why);  // none of those disturbed the real one
  ASSERT_TRUE(got) << why;
  EXPECT_EQ(*got, pattern(12000, 5));
  EXPECT_TRUE(refused(*d)) << "taken twice";
}

std::unique_ptr<SharedPayloadTransport> shared(zmq::context_t& ctx, const std::string& id) {
  ZmqTransportOptions o;
  o.node_id = id;
  o.listen = "tcp://127.0.0.1:0";
  return std::make_unique<SharedPayloadTransport>(std::make_unique<ZmqTransport>(ctx, o));
}

TEST(SharedPayloads, BigFramesGoThroughTheRingIntactAndSmallOnesStayOnTheSocket) {
  zmq::context_t ctx;
  auto a = shared(ctx, "a"), b = shared(ctx, "b");
  a->connect("b", b->endpoint());
  constexpr int kMessages = 300;
  constexpr size_t kBig = 200000, kSmall = 1000;
  for (int i = 0; i < kMessages; ++i) {
    const auto big = pattern(kBig, i), small = pattern(kSmall, -i);
    std::vector<OutFrame> f;
    f.push_back(OutFrame::from_string("envelope"));
    f.push_back(OutFrame::copy_of(big.data(), big.size()));
    f.push_back(OutFrame::copy_of(small.data(), small.size()));
    a->send("b", std::move(f), 5s);
    const auto got = b->receive(5s);  // read as sent: the ring never fills
    ASSERT_TRUE(got) << "message " << i;
    ASSERT_EQ(got->frames.size(), 3u);
    EXPECT_EQ(std::vector<std::byte>(got->frames[1].data(), got->frames[1].data() + kBig), big);
    EXPECT_EQ(std::vector<std::byte>(got->frames[2].data(), got->frames[2].data() + kSmall), small);
  }
  // The first message announces the ring (its payload inline); b maps it
  // on receipt, and every later big frame goes through it.
  EXPECT_EQ(a->shared_bytes_sent(), (kMessages - 1) * kBig);
  EXPECT_EQ(b->descriptors_refused(), 0u);
}

std::vector<OutFrame> big_message(size_t bytes, int seed) {
  const auto big = pattern(bytes, seed);
  std::vector<OutFrame> f;
  f.push_back(OutFrame::from_string("envelope"));
  f.push_back(OutFrame::copy_of(big.data(), big.size()));
  return f;
}

// b restarts at its endpoint: its new process cannot map the ring the old
// one had (the name is gone). It refuses that one payload and tells a,
// which announces a new ring; from then on payloads go through it again.
TEST(SharedPayloads, AReaderThatRestartedGetsANewRingAfterOneRefusedPayload) {
  zmq::context_t ctx;
  auto a = shared(ctx, "a");
  auto b = shared(ctx, "b");
  const std::string endpoint = b->endpoint();
  a->connect("b", endpoint);
  constexpr size_t kBig = 100000;
  for (int i = 0; i < 3; ++i) {
    a->send("b", big_message(kBig, i), 5s);
    ASSERT_TRUE(b->receive(5s));
  }
  ASSERT_EQ(a->shared_bytes_sent(), 2 * kBig);
  b.reset();
  ZmqTransportOptions o;
  o.node_id = "b";
  o.listen = endpoint;
  std::unique_ptr<SharedPayloadTransport> b2;
  ASSERT_TRUE(gossipd::testing::wait_until(
      [&] {
        try {  // ZeroMQ lets the old socket's port go on its own thread
          b2 = std::make_unique<SharedPayloadTransport>(std::make_unique<ZmqTransport>(ctx, o));
          return true;
        } catch (const std::exception&) {
          return false;
        }
      },
      10s))
      << "the port of the old b never came free";
  b2->connect("a", a->endpoint());  // it answers a, as a member does
  // What a sends before its side of the old connection has seen it close
  // is lost with it (once under the sanitizers): a sends until one arrives.
  std::optional<RawMessage> got;
  ASSERT_TRUE(gossipd::testing::wait_until(
      [&] {
        a->send("b", big_message(kBig, 10), 5s);
        got = b2->receive(2s);
        return got.has_value();
      },
      30s))
      << "nothing reached the restarted b";
  EXPECT_EQ(got->frames.at(1).size(), 0u) << "a payload in a ring b2 cannot map";
  EXPECT_GE(b2->descriptors_refused(), 1u);
  ASSERT_TRUE(gossipd::testing::wait_until(
      [&] {
        a->receive(10ms);  // takes the notice
        a->send("b", big_message(kBig, 11), 5s);
        got = b2->receive(5s);
        return got && got->frames.at(1).size() == kBig && a->shared_bytes_sent() > 3 * kBig;
      },
      10s))
      << "payloads never went through a new ring";
  EXPECT_EQ(std::vector<std::byte>(got->frames[1].data(), got->frames[1].data() + kBig), pattern(kBig, 11));
}

TEST(SharedPayloads, AFullRingSendsInlineAndNothingIsLost) {
  zmq::context_t ctx;
  auto a = shared(ctx, "a"), b = shared(ctx, "b");
  a->connect("b", b->endpoint());
  constexpr int kMessages = 40;  // 40 x 800 KB: the 2 MiB ring holds two unread
  constexpr size_t kBig = 800000;
  a->send("b", big_message(kBig, -1), 5s);  // announces the ring
  ASSERT_TRUE(b->receive(5s));
  for (int i = 0; i < kMessages; ++i) a->send("b", big_message(kBig, i), 5s);
  for (int i = 0; i < kMessages; ++i) {
    const auto got = b->receive(5s);
    ASSERT_TRUE(got) << "message " << i;
    EXPECT_EQ(std::vector<std::byte>(got->frames.at(1).data(), got->frames[1].data() + kBig),
              pattern(kBig, i));
  }
  EXPECT_GT(a->shared_bytes_sent(), 0u);
  EXPECT_LT(a->shared_bytes_sent(), kMessages * kBig) << "the ring never filled";
}

// A file-size limit makes posix_fallocate refuse the ring as a full
// /dev/shm would: every payload goes on the socket, intact, and the writer
// says so once however many peers it tries.
TEST(SharedPayloads, WithoutRoomInDevShmPayloadsStayOnTheSocketWithOneWarning) {
  const gossipd::testing::TinyFileSizeLimit limit;
  ASSERT_TRUE(limit.ok());
  gossipd::testing::CapturedLog log;
  size_t intact = 0;
  uint64_t shared_bytes = 0;
  {
    zmq::context_t ctx;
    auto a = shared(ctx, "a"), b = shared(ctx, "b"), c = shared(ctx, "c");
    a->connect("b", b->endpoint());
    a->connect("c", c->endpoint());
    for (int i = 0; i < 5; ++i) {
      for (auto* to : {b.get(), c.get()}) {
        a->send(to->node_id(), big_message(100000, i), 5s);
        const auto got = to->receive(5s);
        if (got && got->frames.size() == 2 &&
            std::vector<std::byte>(got->frames[1].data(), got->frames[1].data() + got->frames[1].size()) ==
                pattern(100000, i))
          ++intact;
      }
    }
    shared_bytes = a->shared_bytes_sent();
  }
  EXPECT_EQ(intact, 10u);
  EXPECT_EQ(shared_bytes, 0u);
  EXPECT_EQ(log.count("payloads to members on this host keep the sockets"), 1u);
}

// Over Node: on by default between members on loopback, off with injected
// faults (they must apply to every byte) and with shared memory off.
// Big messages n0 -> n1 until one went through a ring (the first announces
// it; n1's receive thread maps it), or 20 were sent.
uint64_t shared_bytes_after_big_sends(const NodeOptions& base) {
  testing::TestCluster cluster(2, base);
  const std::vector<float> payload(100000, 1.5f);
  Node& node = cluster.node(0);
  for (int i = 0; i < 20 && node.shared_payload_bytes() == 0; ++i) {
    std::vector<OutFrame> f;
    f.push_back(OutFrame::from_string(node.envelope(proto::SEGMENT).SerializeAsString()));
    f.push_back(OutFrame::copy_of(payload.data(), payload.size() * sizeof(float)));
    node.transport().send("n1", std::move(f), 5s);
    std::this_thread::sleep_for(20ms);  // n1's thread takes it meanwhile
  }
  return node.shared_payload_bytes();
}

TEST(SharedPayloads, ANodeUsesThemOnLoopbackButNotWithFaultsOrSharedMemoryOff) {
  EXPECT_GT(shared_bytes_after_big_sends(NodeOptions{}), 0u);
  NodeOptions faults;
  faults.faults.delay = 1ms;
  EXPECT_EQ(shared_bytes_after_big_sends(faults), 0u);
  NodeOptions off;
  off.shared_memory_bytes = 0;
  EXPECT_EQ(shared_bytes_after_big_sends(off), 0u);
}

}  // namespace
}  // namespace gossipd::protocol
