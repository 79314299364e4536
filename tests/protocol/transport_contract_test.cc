// The contract protocol/transport/transport.h documents, checked on every
// implementation: the ZeroMQ transport (tcp://127.0.0.1), the same with big
// payloads through shared memory (SharedPayloadTransport, as a Node on
// loopback runs it), and the in-process one that tests put in its place.
// What holds for one must hold for the others.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "protocol/transport/inproc_transport.h"
#include "protocol/transport/shared_payload_transport.h"
#include "protocol/transport/zmq_transport.h"
#include "protocol/wire/errors.h"
#include "tests/support/wait.h"

namespace gossipd::protocol {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using gossipd::testing::wait_until;

enum class Impl { kZeroMq, kSharedPayloads, kInProcess };

const char* impl_name(Impl impl) {
  return impl == Impl::kZeroMq ? "ZeroMq" : impl == Impl::kSharedPayloads ? "SharedPayloads" : "InProcess";
}

void PrintTo(Impl impl, std::ostream* os) { *os << impl_name(impl); }

std::string text(const Frame& f) { return std::string(reinterpret_cast<const char*>(f.data()), f.size()); }

// "m<i>". snprintf, not operator+: GCC 12 raises a -Wrestrict false positive
// (PR 105329) for the concatenation inlined here.
std::string numbered(int i) {
  char s[32];
  std::snprintf(s, sizeof(s), "m%d", i);
  return s;
}

std::vector<OutFrame> frames(const std::vector<std::string>& parts) {
  std::vector<OutFrame> f;
  for (const auto& p : parts) f.push_back(OutFrame::from_string(p));
  return f;
}

class TransportContract : public ::testing::TestWithParam<Impl> {
 protected:
  std::unique_ptr<Transport> make(const std::string& id) {
    if (GetParam() == Impl::kInProcess) return std::make_unique<InProcTransport>(hub_, id);
    ZmqTransportOptions o;
    o.node_id = id;
    o.listen = "tcp://127.0.0.1:0";
    auto zmq = std::make_unique<ZmqTransport>(ctx_, o);
    if (GetParam() == Impl::kZeroMq) return zmq;
    return std::make_unique<SharedPayloadTransport>(std::move(zmq));
  }

  // Sends one message `from` -> `to` and returns the text of its frames as
  // `to` receives them (empty when nothing arrives within 5 s).
  static std::vector<std::string> pass(Transport& from, Transport& to, const std::string& to_id,
                                       const std::vector<std::string>& parts) {
    from.send(to_id, frames(parts), 5s);
    auto got = to.receive(5s);
    if (!got) return {};
    EXPECT_EQ(got->peer, from.node_id());
    std::vector<std::string> out;
    for (const auto& f : got->frames) out.push_back(text(f));
    return out;
  }

  // Declared before the transports a test makes: they go first.
  zmq::context_t ctx_;
  InProcHub hub_;
};

TEST_P(TransportContract, FramesArriveIntactUnderTheSendersId) {
  auto a = make("a"), b = make("b");
  EXPECT_EQ(a->node_id(), "a");
  EXPECT_FALSE(b->endpoint().empty());
  EXPECT_NE(a->endpoint(), b->endpoint());
  a->connect("b", b->endpoint());
  std::string big(100000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31 % 251);
  EXPECT_EQ(pass(*a, *b, "b", {"envelope", big, ""}), (std::vector<std::string>{"envelope", big, ""}));
  EXPECT_FALSE(b->receive(0ms)) << "one message sent, one received";
}

TEST_P(TransportContract, MessagesFromOneSenderKeepTheirOrder) {
  auto a = make("a"), b = make("b");
  a->connect("b", b->endpoint());
  for (int i = 0; i < 200; ++i) a->send("b", frames({numbered(i)}), 5s);
  for (int i = 0; i < 200; ++i) {
    auto got = b->receive(5s);
    ASSERT_TRUE(got) << "message " << i << " never came";
    EXPECT_EQ(text(got->frames.at(0)), numbered(i));
  }
}

TEST_P(TransportContract, SendToAPeerNeverConnectedThrowsPeerGone) {
  auto a = make("a");
  try {
    a->send("nobody", frames({"x"}), 1s);
    ADD_FAILURE() << "send to an unknown peer returned";
  } catch (const PeerGone& e) {
    EXPECT_EQ(e.node(), "a");
    EXPECT_EQ(e.peer(), "nobody");
  }
}

TEST_P(TransportContract, ReceiveGivesNothingAfterItsTimeout) {
  auto a = make("a");
  const auto t0 = Clock::now();
  // It returned, empty (a receive that never returned would be the test's
  // own timeout), and not before its timeout.
  EXPECT_FALSE(a->receive(200ms));
  EXPECT_GE(Clock::now() - t0, 190ms);
}

TEST_P(TransportContract, DisconnectForgetsThePeer) {
  auto a = make("a"), b = make("b");
  a->connect("b", b->endpoint());
  ASSERT_EQ(pass(*a, *b, "b", {"before"}), std::vector<std::string>{"before"});
  a->disconnect("b");
  EXPECT_THROW(a->send("b", frames({"after"}), 1s), PeerGone);
  a->disconnect("b");  // again, and a peer never connected: nothing happens
  a->disconnect("nobody");
  a->connect("b", b->endpoint());  // and it can come back
  EXPECT_EQ(pass(*a, *b, "b", {"back"}), std::vector<std::string>{"back"});
}

TEST_P(TransportContract, ConnectingAgainIsIdempotentAndANewEndpointReplacesTheOld) {
  auto a = make("a"), b = make("b"), c = make("c");
  a->connect("b", b->endpoint());
  a->connect("b", b->endpoint());
  EXPECT_EQ(pass(*a, *b, "b", {"once"}), std::vector<std::string>{"once"});
  EXPECT_FALSE(b->receive(100ms)) << "connecting twice delivered twice";
  a->connect("b", c->endpoint());  // "b" moved (a restarted member at a new address)
  EXPECT_EQ(pass(*a, *c, "b", {"moved"}), std::vector<std::string>{"moved"});
  EXPECT_FALSE(b->receive(100ms)) << "the old endpoint still got it";
}

TEST_P(TransportContract, ResetKeepsThePeerReachable) {
  auto a = make("a"), b = make("b");
  a->connect("b", b->endpoint());
  a->reset("b");
  EXPECT_EQ(pass(*a, *b, "b", {"after reset"}), std::vector<std::string>{"after reset"});
  a->reset("nobody");  // a peer never connected: nothing happens
}

TEST_P(TransportContract, ABorrowedBufferIsReleasedOnceSent) {
  auto a = make("a"), b = make("b");
  a->connect("b", b->endpoint());
  auto buffer = std::make_shared<std::vector<float>>(1 << 16, 2.5f);
  std::weak_ptr<std::vector<float>> watch = buffer;
  std::vector<OutFrame> f;
  f.push_back(OutFrame::from_string("env"));
  f.push_back(OutFrame::borrowed(buffer->data(), buffer->size() * sizeof(float), buffer));
  buffer.reset();
  a->send("b", std::move(f), 5s);
  auto got = b->receive(5s);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->frames.at(1).size(), (size_t{1} << 16) * sizeof(float));
  float first;
  std::memcpy(&first, got->frames[1].data(), sizeof(first));
  EXPECT_EQ(first, 2.5f);
  EXPECT_TRUE(wait_until([&] { return watch.expired(); }, 5s)) << "the transport kept the buffer";
}

INSTANTIATE_TEST_SUITE_P(Implementations, TransportContract,
                         ::testing::Values(Impl::kZeroMq, Impl::kSharedPayloads, Impl::kInProcess),
                         [](const auto& p) { return impl_name(p.param); });

}  // namespace
}  // namespace gossipd::protocol
