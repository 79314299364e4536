// The ZeroMQ transport's bound on open connections (--max-connections):
// connections open on the first send, the least recently used idle one
// closes to make room, and nothing queued on it is lost. Inbound past the
// bound, the sender of the least recently used is asked to close its side
// (CLOSE_CONNECTION) and does, flushing first.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <vector>

#include "protocol/transport/zmq_transport.h"
#include "protocol/wire/errors.h"
#include "tests/protocol/test_cluster.h"
#include "tests/support/temp_dir.h"

namespace gossipd::protocol {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

ZmqTransportOptions options(const std::string& id, int max_connections) {
  ZmqTransportOptions o;
  o.node_id = id;
  o.max_connections = max_connections;
  return o;
}

std::vector<OutFrame> text(const std::string& s) {
  std::vector<OutFrame> f;
  f.push_back(OutFrame::from_string(s));
  return f;
}

struct Star {
  zmq::context_t ctx;
  std::unique_ptr<ZmqTransport> hub;
  std::vector<std::unique_ptr<ZmqTransport>> peers;

  Star(size_t n, int bound) {
    hub = std::make_unique<ZmqTransport>(ctx, options("hub", bound));
    for (size_t i = 0; i < n; ++i) {
      peers.push_back(std::make_unique<ZmqTransport>(ctx, options("p" + std::to_string(i), 0)));
      hub->connect("p" + std::to_string(i), peers.back()->endpoint());
    }
  }
  // The next message `peer` received, "" after 5 s.
  std::string next(size_t peer) {
    auto got = peers[peer]->receive(std::chrono::seconds(5));
    if (!got || got->frames.empty()) return "";
    EXPECT_EQ(got->peer, "hub");
    return std::string(reinterpret_cast<const char*>(got->frames[0].data()), got->frames[0].size());
  }
};

TEST(ConnectionBound, NothingConnectsBeforeTheFirstSend) {
  Star s(3, 2);
  EXPECT_EQ(s.hub->connection_counts().open, 0u);
  s.hub->send("p1", text("hello"), std::chrono::seconds(5));
  EXPECT_EQ(s.next(1), "hello");
  EXPECT_EQ(s.hub->connection_counts().open, 1u);
  EXPECT_EQ(s.hub->connection_counts().opened, 1u);
}

TEST(ConnectionBound, TheLeastRecentlyUsedClosesAndEveryMessageArrives) {
  constexpr size_t kPeers = 6;
  Star s(kPeers, 2);
  // Three passes over six peers with room for two: every send after the
  // second opens a connection and closes the oldest at once, most likely
  // before its message (queued a moment before) went out, and before the
  // next pass reopens it. Every message still arrives, from "hub".
  for (int pass = 0; pass < 3; ++pass) {
    for (size_t i = 0; i < kPeers; ++i) {
      s.hub->send("p" + std::to_string(i), text("m" + std::to_string(pass)), std::chrono::seconds(5));
      EXPECT_LE(s.hub->connection_counts().open, 2u);
    }
  }
  for (size_t i = 0; i < kPeers; ++i) {
    std::multiset<std::string> got;
    for (int pass = 0; pass < 3; ++pass) got.insert(s.next(i));
    EXPECT_EQ(got, (std::multiset<std::string>{"m0", "m1", "m2"})) << "p" << i;
  }
  const ConnectionCounts c = s.hub->connection_counts();
  EXPECT_EQ(c.opened, 3 * kPeers);
  EXPECT_EQ(c.closed_lru, 3 * kPeers - 2);
  EXPECT_EQ(c.over_bound, 0u);
}

TEST(ConnectionBound, AConnectionNotYetMadeIsNotClosedAndItsMessagesArrive) {
  zmq::context_t ctx;
  // Nobody listens there yet. A socket path of the test's own, not a port
  // found free: under the parallel suite another process took such a port
  // between its probe and the late bind, and the message went to it.
  const gossipd::testing::TempDir dir("connection_bound");
  const std::string late_endpoint = "ipc://" + dir.file("late");
  ZmqTransport hub(ctx, options("hub", 1));
  ZmqTransport early(ctx, options("early", 0));
  hub.connect("late", late_endpoint);
  hub.connect("early", early.endpoint());
  hub.send("late", text("m"), std::chrono::seconds(5));  // queued: nobody listens yet
  hub.send("early", text("e"), std::chrono::seconds(5));
  ASSERT_TRUE(early.receive(std::chrono::seconds(5)));
  ZmqTransportOptions o = options("late", 0);
  o.listen = late_endpoint;
  ZmqTransport late(ctx, o);
  auto got = late.receive(std::chrono::seconds(10));
  ASSERT_TRUE(got) << "the message queued before the connection was made is lost";
  EXPECT_EQ(got->peer, "hub");
}

TEST(ConnectionBound, ZeroMeansNoBound) {
  Star s(5, 0);
  for (size_t i = 0; i < 5; ++i) s.hub->send("p" + std::to_string(i), text("m"), std::chrono::seconds(5));
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(s.next(i), "m");
  EXPECT_EQ(s.hub->connection_counts().open, 5u);
  EXPECT_EQ(s.hub->connection_counts().closed_lru, 0u);
}

TEST(ConnectionBound, AResetOrDisconnectFreesTheSlot) {
  Star s(2, 2);
  s.hub->send("p0", text("a"), std::chrono::seconds(5));
  s.hub->send("p1", text("b"), std::chrono::seconds(5));
  s.hub->reset("p0");
  s.hub->disconnect("p1");
  EXPECT_EQ(s.hub->connection_counts().open, 0u);
  EXPECT_THROW(s.hub->send("p1", text("c"), std::chrono::seconds(5)), PeerGone);
  s.hub->send("p0", text("d"), std::chrono::seconds(5));  // a reset peer connects again
  EXPECT_EQ(s.hub->connection_counts().open, 1u);
}

TEST(ConnectionBound, AMalformedEndpointIsRefusedAtConnect) {
  zmq::context_t ctx;
  ZmqTransport t(ctx, options("a", 2));
  try {
    t.connect("b", "tcp://127.0.0.1:0");
    FAIL() << "port 0 accepted";
  } catch (const ProtocolConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot connect to 'tcp://127.0.0.1:0'"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(t.send("b", text("x"), std::chrono::seconds(1)), PeerGone);
}

// The transports alone: the receiver counts its inbound connections and asks
// the senders of the least recently used, over connections opened for the
// request alone (none of its bound's slots); a sender that releases its
// connection is counted gone once the close reaches the receiver.
TEST(InboundBound, TheReceiverAsksItsLeastRecentlyUsedSendersAndCountsThemGone) {
  zmq::context_t ctx;
  ZmqTransport hub(ctx, options("hub", 2));
  std::vector<std::unique_ptr<ZmqTransport>> senders;
  for (int i = 0; i < 4; ++i) {
    senders.push_back(std::make_unique<ZmqTransport>(ctx, options("s" + std::to_string(i), 0)));
    senders.back()->connect("hub", hub.endpoint());
    hub.connect("s" + std::to_string(i), senders.back()->endpoint());
  }
  for (int i = 0; i < 4; ++i) {
    senders[i]->send("hub", text("m"), 5s);
    auto got = hub.receive(5s);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->peer, "s" + std::to_string(i));
  }
  EXPECT_EQ(hub.connection_counts().inbound, 4u);
  const std::string request = "close, please";
  hub.ask_to_close(request);
  hub.ask_to_close(request);  // too soon: the two asked have not closed yet
  EXPECT_EQ(hub.connection_counts().close_asked, 2u);
  EXPECT_EQ(hub.connection_counts().open, 0u) << "asking took a slot of the bound";
  auto asked = [&](int i) {
    auto got = senders[i]->receive(5s);
    return got && got->peer == "hub" && got->frames.size() == 1 &&
           std::string(reinterpret_cast<const char*>(got->frames[0].data()), got->frames[0].size()) ==
               request;
  };
  ASSERT_TRUE(asked(0));
  ASSERT_TRUE(asked(1));
  senders[0]->release("hub");
  senders[1]->release("hub");
  EXPECT_EQ(senders[0]->connection_counts().closed_on_request, 1u);
  EXPECT_EQ(senders[0]->connection_counts().open, 0u);
  ASSERT_TRUE(gossipd::testing::wait_until(
      [&] {
        (void)hub.receive(10ms);  // reads the monitor's events
        return hub.connection_counts().inbound == 2;
      },
      10s))
      << hub.connection_counts().inbound << " inbound connections";
  // s0 sends again: a new connection, and s2 is now the least recently used.
  senders[0]->send("hub", text("again"), 5s);
  auto got = hub.receive(5s);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->peer, "s0");
  hub.ask_to_close(request);
  EXPECT_EQ(hub.connection_counts().close_asked, 3u);
  EXPECT_TRUE(asked(2));
}

// Whole nodes: five members send to one whose bound is 2; its dispatcher
// asks the least recently used senders to close, they do, and every message
// sent arrived.
TEST(InboundBound, NodesPastTheBoundAreAskedToCloseAndEveryMessageArrives) {
  NodeOptions base;
  base.max_connections = 2;
  base.data_path = DataPath::kZmq;
  testing::TestCluster c(6, base);
  Node& hub = c.node(0);
  for (size_t i = 1; i < c.size(); ++i) {
    c.node(i).transport().send(hub.id(), {envelope_frame(c.node(i).envelope(proto::PING))}, 5s);
  }
  std::set<std::string> from;
  for (size_t i = 1; i < c.size(); ++i) {
    auto m = hub.mailbox().pop(proto::PING, Clock::now() + 10s, {});
    ASSERT_TRUE(m) << "a PING was lost";
    from.insert(m->envelope.sender());
  }
  EXPECT_EQ(from.size(), c.size() - 1);
  auto closed_on_request = [&] {
    uint64_t n = 0;
    for (size_t i = 1; i < c.size(); ++i) n += c.node(i).transport().connection_counts().closed_on_request;
    return n;
  };
  ASSERT_TRUE(gossipd::testing::wait_until(
      [&] { return hub.transport().connection_counts().inbound <= 2 && closed_on_request() >= 3; }, 20s))
      << hub.transport().connection_counts().inbound << " inbound, " << closed_on_request()
      << " closed on request";
  EXPECT_GE(hub.transport().connection_counts().close_asked, 3u);
  EXPECT_EQ(hub.counters().total(), 0u) << "messages rejected";
}

}  // namespace
}  // namespace gossipd::protocol
