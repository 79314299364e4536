// Which inbound connections a member asks their senders to close
// (InboundConnections): past the bound, the least recently used, each once
// until its time to ask again has passed.
#include "protocol/transport/inbound_connections.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gossipd::protocol {
namespace {

using namespace std::chrono_literals;
using Clock = InboundConnections::Clock;

TEST(InboundConnections, NobodyIsAskedAtOrUnderTheBound) {
  InboundConnections in(2);
  const auto t = Clock::now();
  in.received(10, "a", t);
  in.received(11, "b", t + 1ms);
  EXPECT_TRUE(in.to_close(t + 2ms).empty());
  EXPECT_EQ(in.size(), 2u);
}

TEST(InboundConnections, TheLeastRecentlyUsedAreAskedAsManyAsArePastTheBound) {
  InboundConnections in(2);
  const auto t = Clock::now();
  in.received(10, "a", t + 3ms);
  in.received(11, "b", t + 1ms);
  in.received(12, "c", t + 4ms);
  in.received(13, "d", t + 2ms);
  EXPECT_EQ(in.to_close(t + 5ms), (std::vector<std::string>{"b", "d"}));
}

TEST(InboundConnections, AnAskedConnectionIsNotAskedAgainNorReplacedUntilItsTimeHasPassed) {
  InboundConnections in(1, 1000ms);
  const auto t = Clock::now();
  in.received(10, "a", t);
  in.received(11, "b", t + 1ms);
  EXPECT_EQ(in.to_close(t + 2ms), (std::vector<std::string>{"a"}));
  // Still open (flushing): neither a again nor b in its place.
  EXPECT_TRUE(in.to_close(t + 500ms).empty());
  // Not gone after the time to ask again: its sender was busy, or the request lost.
  EXPECT_EQ(in.to_close(t + 1100ms), (std::vector<std::string>{"a"}));
  in.disconnected(10);
  EXPECT_EQ(in.size(), 1u);
  EXPECT_TRUE(in.to_close(t + 1200ms).empty());
}

TEST(InboundConnections, AConnectionThatCarriedNothingIsCountedButNobodyIsAskedForIt) {
  InboundConnections in(1);
  const auto t = Clock::now();
  in.accepted(10, t);
  in.accepted(11, t);
  EXPECT_EQ(in.size(), 2u);
  EXPECT_TRUE(in.to_close(t + 1ms).empty());
  in.received(11, "b", t + 2ms);
  EXPECT_EQ(in.to_close(t + 3ms), (std::vector<std::string>{"b"}));
}

TEST(InboundConnections, AMemberWithTwoConnectionsIsAskedOnce) {
  InboundConnections in(1);
  const auto t = Clock::now();
  in.received(10, "a", t);
  in.received(11, "a", t + 1ms);  // a reopened while the first still flushes
  in.received(12, "b", t + 2ms);
  EXPECT_EQ(in.to_close(t + 3ms), (std::vector<std::string>{"a"}));
}

TEST(InboundConnections, ADescriptorReusedAfterItsDisconnectIsANewConnection) {
  InboundConnections in(1);
  const auto t = Clock::now();
  in.received(10, "a", t);
  in.disconnected(10);
  in.accepted(10, t + 1ms);
  in.received(10, "b", t + 2ms);
  in.received(11, "c", t + 3ms);
  EXPECT_EQ(in.to_close(t + 4ms), (std::vector<std::string>{"b"}));
}

TEST(InboundConnections, AConnectionThatClosesByItselfIsNeitherAskedNorAReasonToAskAnother) {
  InboundConnections in(2);
  const auto t = Clock::now();
  in.received(10, "a", t);
  in.received(11, "b", t + 1ms);
  in.received(12, "c", t + 2ms, /*once=*/true);  // c's request to close, on its own connection
  EXPECT_EQ(in.size(), 3u);
  EXPECT_TRUE(in.to_close(t + 3ms).empty());
  in.received(13, "d", t + 4ms);
  EXPECT_EQ(in.to_close(t + 5ms), (std::vector<std::string>{"a"}));
}

TEST(InboundConnections, ZeroMeansNoBound) {
  InboundConnections in(0);
  const auto t = Clock::now();
  for (int fd = 10; fd < 20; ++fd) in.received(fd, "m" + std::to_string(fd), t);
  EXPECT_TRUE(in.to_close(t).empty());
}

}  // namespace
}  // namespace gossipd::protocol
