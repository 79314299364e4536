// The ZeroMQ transport's own behaviour (endpoints, kernel buffers,
// zero-copy release), fault injection, and Nodes in one process. What every
// transport promises is in transport_contract_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include "protocol/transport/fault_injection.h"
#include "protocol/transport/lanes.h"
#include "protocol/transport/zmq_transport.h"
#include "protocol/wire/errors.h"
#include "tests/protocol/test_cluster.h"
#include "tests/support/temp_dir.h"

namespace gossipd::protocol {
namespace {

std::vector<OutFrame> two_frames(const std::string& a, const std::string& b) {
  std::vector<OutFrame> f;
  f.push_back(OutFrame::from_string(a));
  f.push_back(OutFrame::from_string(b));
  return f;
}

ZmqTransportOptions options(const std::string& id, const std::string& listen = "tcp://127.0.0.1:0") {
  ZmqTransportOptions o;
  o.node_id = id;
  o.listen = listen;
  return o;
}

std::string frame_text(const Frame& f) {
  return std::string(reinterpret_cast<const char*>(f.data()), f.size());
}

void exchange(Transport& a, Transport& b) {
  a.connect("b", b.endpoint());
  a.send("b", two_frames("envelope", std::string(100000, 'x')), std::chrono::seconds(5));
  auto got = b.receive(std::chrono::seconds(5));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->peer, "a");  // the routing id is the sender's node id
  ASSERT_EQ(got->frames.size(), 2u);
  EXPECT_EQ(frame_text(got->frames[0]), "envelope");
  EXPECT_EQ(got->frames[1].size(), 100000u);
  EXPECT_FALSE(b.receive(std::chrono::milliseconds(0)));
}

TEST(ZmqTransport, TcpPortZeroPublishesTheRealEndpoint) {
  zmq::context_t ctx;
  ZmqTransport a(ctx, options("a", "tcp://127.0.0.1:0"));
  ZmqTransport b(ctx, options("b", "tcp://127.0.0.1:0"));
  EXPECT_EQ(b.endpoint().rfind("tcp://127.0.0.1:", 0), 0u);
  EXPECT_EQ(b.endpoint().find(":0"), std::string::npos) << b.endpoint();
  exchange(a, b);
}

// The kernel's send buffer of `transport`'s connection to `to` (ss -tm):
// what SO_SNDBUF was set to, doubled by Linux for its bookkeeping.
long connection_send_buffer(const std::string& to) {
  const std::string port = to.substr(to.rfind(':') + 1);
  const std::string cmd = "ss -tmnH state established dst 127.0.0.1:" + port + " 2>&1";
  std::string text;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof(buf), p)) text.append(buf, n);
    pclose(p);
  }
  const auto at = text.find(",tb");
  if (at == std::string::npos) {
    ADD_FAILURE() << cmd << ": " << text;
    return -1;
  }
  return std::stol(text.substr(at + 3));
}

TEST(ZmqTransport, SendBufferIsTheConnectionsKernelBuffer) {
  zmq::context_t ctx;
  ZmqTransportOptions small = options("a");
  small.send_buffer_bytes = 64 << 10;
  ZmqTransport a(ctx, small);
  ZmqTransport b(ctx, options("b"));
  exchange(a, b);
  EXPECT_EQ(connection_send_buffer(b.endpoint()), 2 * (64 << 10));
  ZmqTransport c(ctx, options("c"));  // the default: larger
  ZmqTransport d(ctx, options("d"));
  c.connect("d", d.endpoint());
  c.send("d", two_frames("x", "y"), std::chrono::seconds(5));
  ASSERT_TRUE(d.receive(std::chrono::seconds(5)));
  EXPECT_GT(connection_send_buffer(d.endpoint()), 2 * (64 << 10));
}

TEST(FaultInjection, HoldsEveryMessageForTheDelayAndKeepsOrder) {
  zmq::context_t ctx;
  FaultOptions delay1s;
  delay1s.delay = std::chrono::milliseconds(1000);
  FaultDice dice(delay1s);
  FaultInjectingTransport a(std::make_unique<ZmqTransport>(ctx, options("a")), dice);
  ZmqTransport b(ctx, options("b"));
  EXPECT_THROW(a.send("b", two_frames("x", "y"), std::chrono::seconds(1)), PeerGone);
  a.connect("b", b.endpoint());
  exchange(a, b);  // delivers through the delay
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) a.send("b", two_frames("m" + std::to_string(i), "p"), std::chrono::seconds(1));
  // send() does not wait for the delay: all five returned before the first
  // was delivered (a send that waited would have let m0 through by now).
  EXPECT_FALSE(b.receive(std::chrono::milliseconds(0))) << "send() waited for the delay";
  for (int i = 0; i < 5; ++i) {
    auto got = b.receive(std::chrono::seconds(5));
    ASSERT_TRUE(got);
    EXPECT_EQ(frame_text(got->frames[0]), "m" + std::to_string(i));
    if (i == 0) {
      EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
    }
  }
  // Held messages for a reset peer are dropped, their buffers released.
  auto owner = std::make_shared<int>(7);
  std::vector<OutFrame> frames{OutFrame::from_string("held"),
                               OutFrame::borrowed(owner.get(), sizeof(int), owner)};
  a.send("b", std::move(frames), std::chrono::seconds(1));
  EXPECT_EQ(owner.use_count(), 2);
  a.reset("b");
  EXPECT_EQ(owner.use_count(), 1);
  EXPECT_FALSE(b.receive(std::chrono::milliseconds(200)));
}

// A WAN link (gossipd run --wan): its delay and jitter on each message to
// that peer, never before the message sent ahead of it; a lost packet costs
// a round trip more; a peer with no link gets nothing added.
TEST(FaultInjection, AWanLinkHoldsItsPeersMessagesForItsDelayAndJitterInOrder) {
  using std::chrono::milliseconds;
  FaultOptions o;
  o.links["far"] = {milliseconds(40), milliseconds(10), 0.0};
  o.links["lossy"] = {milliseconds(30), milliseconds(0), 0.01};
  FaultDice dice(o);
  auto last = std::chrono::steady_clock::time_point::min();
  for (int i = 0; i < 200; ++i) {
    const auto before = std::chrono::steady_clock::now();
    const FaultDice::Roll r = dice.roll("far", 100);
    EXPECT_FALSE(r.drop);
    EXPECT_GE(r.due, last) << "message " << i << " would overtake the one before it";
    EXPECT_GE(r.due - before, milliseconds(30));
    if (last < before + milliseconds(30)) {
      EXPECT_LE(r.due, std::chrono::steady_clock::now() + milliseconds(50)) << "over delay + jitter";
    }
    last = r.due;
  }
  const auto before = std::chrono::steady_clock::now();
  EXPECT_LE(dice.roll("near", 100).due, before + milliseconds(5)) << "no link, nothing added";
  EXPECT_EQ(dice.counts().retransmitted, 0u);
  // 1% of packets lost: a 1 MB message (725 packets) nearly always loses
  // one, a 100-byte one (1 packet) seldom does.
  for (int i = 0; i < 100; ++i) dice.roll("lossy", 1 << 20);
  const uint64_t big = dice.counts().retransmitted;
  EXPECT_GE(big, 95u);
  for (int i = 0; i < 1000; ++i) dice.roll("lossy", 100);
  const uint64_t small = dice.counts().retransmitted - big;
  EXPECT_GE(small, 1u);
  EXPECT_LE(small, 30u);
  const auto now = std::chrono::steady_clock::now();
  const FaultDice::Roll r = dice.roll("lossy", 1 << 20);
  EXPECT_GE(r.due - now, milliseconds(90)) << "a lost packet's message waits the delay and a round trip more";
}

// A lane (lanes.h) is its peer's link, not its peer's stream: the link's
// delay and jitter, but no waiting behind what the peer's main connection
// holds. Ids are never taken for lanes.
TEST(FaultInjection, ALaneHasItsPeersLinkButAStreamOfItsOwn) {
  using std::chrono::milliseconds;
  const std::string lane = lane_name(Lane::kControl, "far");
  EXPECT_EQ(lane_peer(lane), "far");
  EXPECT_TRUE(is_lane(lane));
  EXPECT_NE(lane_name(Lane::kReunion, "far"), lane);
  EXPECT_FALSE(is_lane("control:far"));
  EXPECT_EQ(lane_peer("control:far"), "control:far");
  // 1% of packets lost: a 1 MB message nearly always waits a round trip
  // more (150 ms), and the messages behind it on its stream with it.
  FaultOptions o;
  o.links["far"] = {milliseconds(50), milliseconds(0), 0.01};
  FaultDice dice(o);
  const auto start = std::chrono::steady_clock::now();
  auto far_last = start;
  for (int i = 0; i < 10; ++i) far_last = std::max(far_last, dice.roll("far", 1 << 20).due);
  ASSERT_GE(far_last - start, milliseconds(150));
  EXPECT_GE(dice.roll("far", 100).due, far_last) << "the main stream keeps its order";
  const FaultDice::Roll r = dice.roll(lane, 100);  // one packet: lost 1 time in 100 (not with this seed)
  EXPECT_GE(r.due - start, milliseconds(50)) << "a lane message skipped its link's delay";
  EXPECT_LT(r.due, far_last) << "a lane message waited behind its peer's main stream";
}

TEST(ZmqTransport, IpcEndpoint) {
  gossipd::testing::TempDir dir("gossipd_ipc");
  const std::string path = "ipc://" + dir.file("b.sock");
  zmq::context_t ctx;
  ZmqTransport a(ctx, options("a", "tcp://127.0.0.1:0"));
  ZmqTransport b(ctx, options("b", path));
  EXPECT_EQ(b.endpoint(), path);
  exchange(a, b);
}

TEST(ZmqTransport, ZeroCopyOwnerIsReleasedAfterSend) {
  zmq::context_t ctx;
  ZmqTransport a(ctx, options("a"));
  ZmqTransport b(ctx, options("b"));
  a.connect("b", b.endpoint());
  auto buffer = std::make_shared<std::vector<float>>(1 << 16, 1.5f);
  std::weak_ptr<std::vector<float>> watch = buffer;
  std::vector<OutFrame> frames;
  frames.push_back(OutFrame::from_string("env"));
  frames.push_back(OutFrame::borrowed(buffer->data(), buffer->size() * 4, buffer));
  buffer.reset();
  a.send("b", std::move(frames), std::chrono::seconds(5));
  auto got = b.receive(std::chrono::seconds(5));
  ASSERT_TRUE(got);
  ASSERT_EQ(got->frames.at(1).size(), (1u << 16) * 4);
  float first;
  std::memcpy(&first, got->frames[1].data(), 4);
  EXPECT_EQ(first, 1.5f);
  EXPECT_TRUE(testing::wait_until([&] { return watch.expired(); }, std::chrono::seconds(5)));
}

// Frames queued for a peer that never answers are freed (their owners
// released) both when the peer is reset and when it is disconnected.
TEST(ZmqTransport, ResetAndDisconnectReleaseQueuedFramesForADeadPeer) {
  zmq::context_t ctx;
  ZmqTransport a(ctx, options("a"));
  for (const bool reset : {true, false}) {
    a.connect("ghost", "tcp://127.0.0.1:1");  // nobody listens: frames stay queued
    auto buffer = std::make_shared<std::vector<float>>(1 << 16);
    std::weak_ptr<std::vector<float>> watch = buffer;
    std::vector<OutFrame> frames;
    frames.push_back(OutFrame::from_string("env"));
    frames.push_back(OutFrame::borrowed(buffer->data(), buffer->size() * 4, buffer));
    buffer.reset();
    a.send("ghost", std::move(frames), std::chrono::seconds(1));
    EXPECT_FALSE(watch.expired());
    if (reset) {
      a.reset("ghost");
    } else {
      a.disconnect("ghost");
    }
    EXPECT_TRUE(testing::wait_until([&] { return watch.expired(); }, std::chrono::seconds(5)))
        << (reset ? "reset" : "disconnect") << " kept the frames";
  }
}

// A sender waiting for room in a peer's queue holds that peer's socket; a
// send with timeout 0 to the same peer (a heartbeat) gives up at once
// instead of waiting for it.
TEST(ZmqTransport, ASendWaitsForAnotherSenderNoLongerThanItsOwnTimeout) {
  zmq::context_t ctx;
  ZmqTransportOptions o = options("a");
  o.send_hwm = 1;
  ZmqTransport a(ctx, o);
  a.connect("ghost", "tcp://127.0.0.1:1");  // nobody listens: the queue fills and stays full
  int queued = 0;
  for (; queued < 100; ++queued) {
    try {
      a.send("ghost", two_frames("env", "x"), std::chrono::milliseconds(0));
    } catch (const PeerTimeout&) {
      break;
    }
  }
  ASSERT_LT(queued, 100) << "the queue never filled";
  std::atomic<bool> waiting{false}, slow_done{false};
  std::thread slow([&] {
    waiting = true;
    EXPECT_THROW(a.send("ghost", two_frames("env", "segment"), std::chrono::seconds(5)), PeerTimeout);
    slow_done = true;
  });
  ASSERT_TRUE(testing::wait_until([&] { return waiting.load(); }, std::chrono::seconds(5)));
  // While the slow sender waits its 5 s holding the socket, heartbeats with
  // a timeout of 0 come back one after another: 20 of them before it gives
  // up (each waits for it a moment at most, never its 5 s).
  int beats = 0;
  while (beats < 20 && !slow_done) {
    EXPECT_THROW(a.send("ghost", two_frames("env", "beat"), std::chrono::milliseconds(0)), PeerTimeout);
    if (!slow_done) ++beats;
  }
  EXPECT_EQ(beats, 20) << "heartbeats waited for the slow sender";
  slow.join();
}

TEST(Node, SeveralNodesInOneProcessExchangeControlMessages) {
  testing::TestCluster cluster(3);
  for (size_t i = 0; i < 3; ++i) {
    Node& from = cluster.node(i);
    Node& to = cluster.node((i + 1) % 3);
    std::vector<OutFrame> frames;
    frames.push_back(envelope_frame(from.envelope(proto::HEARTBEAT)));
    from.transport().send(to.id(), std::move(frames), std::chrono::seconds(5));
  }
  for (size_t i = 0; i < 3; ++i) {
    auto m = cluster.node(i).mailbox().pop(proto::HEARTBEAT,
                                           std::chrono::steady_clock::now() + std::chrono::seconds(5), {});
    ASSERT_TRUE(m);
    EXPECT_EQ(m->envelope.sender(), cluster.node((i + 2) % 3).id());
    EXPECT_EQ(cluster.node(i).counters().total(), 0u);
  }
}

// send_control goes on the peer's control lane, a connection of its own,
// where the connection bound has room for two a peer (and is not set below
// its default); else on the peer's connection. Either way it arrives as from the sender.
TEST(Node, ControlMessagesTakeALaneWhereTheBoundHasRoomForIt) {
  for (const int bound : {64, 16, 2}) {
    SCOPED_TRACE("--max-connections " + std::to_string(bound));
    testing::TestCluster cluster(3, [&](size_t, NodeOptions& o) { o.max_connections = bound; });
    Node& from = cluster.node(0);
    Node& to = cluster.node(1);
    from.transport().send(to.id(), {envelope_frame(from.envelope(proto::HEARTBEAT))},
                          std::chrono::seconds(5));
    from.send_control(to.id(), {envelope_frame(from.envelope(proto::PING))}, std::chrono::seconds(5));
    for (const auto type : {proto::HEARTBEAT, proto::PING}) {
      auto m = to.mailbox().pop(type, std::chrono::steady_clock::now() + std::chrono::seconds(5), {});
      ASSERT_TRUE(m);
      EXPECT_EQ(m->envelope.sender(), from.id());
    }
    EXPECT_EQ(from.transport().connection_counts().opened, bound == 64 ? 2u : 1u);
  }
}

}  // namespace
}  // namespace gossipd::protocol
