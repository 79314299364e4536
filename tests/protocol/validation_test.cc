// Malformed input from a raw ZeroMQ client: every kind is dropped, counted
// under its reason, and the node keeps serving valid messages.
#include <gtest/gtest.h>

#include <set>
#include <zmq.hpp>

#include "protocol/collectives/ring.h"
#include "protocol/wire/endpoint.h"
#include "tests/protocol/test_cluster.h"
#include "tests/support/envelope.h"

namespace gossipd::protocol {
namespace {

using Clock = std::chrono::steady_clock;
using testing::wait_until;

constexpr size_t kMaxMessageBytes = 128 << 10;  // above kMaxProbePadding

class ValidationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NodeOptions o;
    o.id = "server";
    o.validation.cluster_id = "c1";
    o.validation.max_message_bytes = kMaxMessageBytes;
    server_ = std::make_unique<Node>(o);
    server_->validator().add_member("good");
    server_->validator().add_member("other");
    server_->validator().set_segment_lengths({100, 50});
    client_ = connect_client("good");
  }

  zmq::socket_t connect_client(const std::string& routing_id) {
    zmq::socket_t s(context_, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::routing_id, routing_id);
    s.connect(server_->endpoint());
    return s;
  }

  proto::Envelope envelope(proto::MessageType type, const std::string& sender = "good") {
    return gossipd::testing::make_envelope("c1", sender, type);
  }

  proto::Envelope tensor(proto::MessageType type, size_t count) {
    proto::Envelope e = envelope(type);
    e.set_count(count);
    e.set_dtype(proto::DTYPE_FLOAT32);
    return e;
  }

  static void send(zmq::socket_t& s, const std::vector<std::string>& frames) {
    for (size_t i = 0; i < frames.size(); ++i) {
      s.send(zmq::buffer(frames[i]),
             i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }

  // Sends `frames` and waits until exactly one more message is counted under
  // `reason` (and under no other reason).
  void expect_rejected(const std::vector<std::string>& frames, RejectReason reason,
                       zmq::socket_t* via = nullptr) {
    const uint64_t before = server_->counters().get(reason);
    const uint64_t total_before = server_->counters().total();
    send(via ? *via : client_, frames);
    ASSERT_TRUE(
        wait_until([&] { return server_->counters().get(reason) == before + 1; }, std::chrono::seconds(5)))
        << "not counted as " << reject_reason_name(reason);
    EXPECT_EQ(server_->counters().total(), total_before + 1);
  }

  // A valid heartbeat gets through and nothing rejected was queued before it.
  void expect_still_serving() {
    send(client_, {envelope(proto::HEARTBEAT).SerializeAsString()});
    auto m = server_->mailbox().pop(proto::HEARTBEAT, Clock::now() + std::chrono::seconds(5), {});
    ASSERT_TRUE(m);
    EXPECT_EQ(m->envelope.sender(), "good");
    EXPECT_EQ(m->envelope.round(), 0u);  // bad heartbeats below carry round 666
    EXPECT_FALSE(server_->mailbox().pop(proto::SEGMENT, Clock::now(), {}));
  }

  static std::string floats(size_t n) { return std::string(n * sizeof(float), '\0'); }

  zmq::context_t context_;
  std::unique_ptr<Node> server_;
  zmq::socket_t client_;
};

TEST_F(ValidationTest, WrongVersion) {
  auto e = envelope(proto::HEARTBEAT);
  e.set_version(kProtocolVersion + 1);
  e.set_round(666);
  expect_rejected({e.SerializeAsString()}, RejectReason::kVersion);
  expect_still_serving();
}

// Membership's probes (SWIM): more piggybacked updates than any member
// sends, a member id ZeroMQ cannot route to, an ALIVE whose endpoint
// nobody can connect to, a PING_REQ for an unroutable target, more padding
// than --group auto's measuring PINGs carry, an accusation naming no
// accuser or an unroutable one, accusers on an update of another kind:
// each dropped and counted before membership sees it.
TEST_F(ValidationTest, MalformedProbesAreRejectedAsBadBodies) {
  auto probe = [this](proto::MessageType type) {
    auto e = envelope(type);
    e.set_round(666);
    return e;
  };
  auto flood = probe(proto::PING);
  for (size_t i = 0; i <= kMaxProbeUpdates; ++i) {
    auto* u = flood.mutable_probe()->add_updates();
    u->set_kind(proto::MemberUpdate::SUSPECT);
    u->mutable_member()->set_id("m" + std::to_string(i));
  }
  expect_rejected({flood.SerializeAsString()}, RejectReason::kBadBody);
  auto unroutable = probe(proto::ACK);
  unroutable.mutable_probe()->add_updates()->mutable_member()->set_id(std::string(256, 'x'));
  expect_rejected({unroutable.SerializeAsString()}, RejectReason::kBadBody);
  auto nowhere = probe(proto::PING);
  auto* alive = nowhere.mutable_probe()->add_updates();
  alive->set_kind(proto::MemberUpdate::ALIVE);
  alive->mutable_member()->set_id("m9");
  alive->mutable_member()->set_endpoint("carrier-pigeon://m9");
  expect_rejected({nowhere.SerializeAsString()}, RejectReason::kBadBody);
  auto req = probe(proto::PING_REQ);
  req.mutable_probe()->set_target(std::string(1, '\0') + "m1");
  expect_rejected({req.SerializeAsString()}, RejectReason::kBadBody);
  auto padded = probe(proto::PING);  // --group auto pads its PINGs; no more than kMaxProbePadding
  padded.mutable_probe()->set_padding(std::string(kMaxProbePadding + 1, '\0'));
  expect_rejected({padded.SerializeAsString()}, RejectReason::kBadBody);
  auto accusing = [&](proto::MemberUpdate::Kind kind, const std::vector<std::string>& accusers) {
    auto e = probe(proto::PING);
    auto* u = e.mutable_probe()->add_updates();
    u->set_kind(kind);
    u->mutable_member()->set_id("m3");
    for (const auto& a : accusers) u->add_accusers(a);
    return e.SerializeAsString();
  };
  expect_rejected({accusing(proto::MemberUpdate::ACCUSED, {})}, RejectReason::kBadBody);
  expect_rejected({accusing(proto::MemberUpdate::ACCUSED, {"m1", std::string(256, 'x')})},
                  RejectReason::kBadBody);
  expect_rejected({accusing(proto::MemberUpdate::DEAD, {"m1"})}, RejectReason::kBadBody);
  expect_still_serving();
}

TEST_F(ValidationTest, WrongCluster) {
  auto e = envelope(proto::HEARTBEAT);
  e.set_cluster_id("c2");
  e.set_round(666);
  expect_rejected({e.SerializeAsString()}, RejectReason::kCluster);
  expect_still_serving();
}

TEST_F(ValidationTest, UnknownSender) {
  auto mallory = connect_client("mallory");
  auto e = envelope(proto::HEARTBEAT, "mallory");
  e.set_round(666);
  expect_rejected({e.SerializeAsString()}, RejectReason::kUnknownSender, &mallory);
  expect_still_serving();
}

TEST_F(ValidationTest, OpenTypesAreAcceptedFromStrangersAndNothingElseIs) {
  server_->validator().set_open_types({proto::HELLO});
  auto joiner = connect_client("joiner");
  proto::Envelope hello = envelope(proto::HELLO, "joiner");
  hello.mutable_hello()->set_endpoint("tcp://127.0.0.1:7100");
  send(joiner, {hello.SerializeAsString()});
  auto m = server_->mailbox().pop(proto::HELLO, Clock::now() + std::chrono::seconds(5), {});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->envelope.sender(), "joiner");
  // The same stranger's heartbeat is still refused, and a HELLO naming
  // someone else than its connection is an impersonation.
  auto hb = envelope(proto::HEARTBEAT, "joiner");
  hb.set_round(666);
  expect_rejected({hb.SerializeAsString()}, RejectReason::kUnknownSender, &joiner);
  expect_rejected({envelope(proto::HELLO, "good").SerializeAsString()}, RejectReason::kSenderMismatch,
                  &joiner);
  // A HELLO without an endpoint to answer to cannot be served.
  expect_rejected({envelope(proto::HELLO, "joiner").SerializeAsString()}, RejectReason::kBadBody, &joiner);
  expect_still_serving();
}

TEST_F(ValidationTest, SenderImpersonatingAnotherMember) {
  auto e = envelope(proto::HEARTBEAT, "other");  // sent over "good"'s connection
  e.set_round(666);
  expect_rejected({e.SerializeAsString()}, RejectReason::kSenderMismatch);
  expect_still_serving();
}

// CLOSE_CONNECTION goes to the transport, never to the mailbox: from a
// stranger, in another member's name or with a payload it is counted and
// closes nothing; from a member it closes the server's connection to that
// member alone, which opens again on the next send.
TEST_F(ValidationTest, ACloseConnectionClosesOnlyItsSendersConnectionAndBadOnesNothing) {
  zmq::socket_t good_listener(context_, zmq::socket_type::router);
  good_listener.bind("tcp://127.0.0.1:0");
  server_->add_peer("good", good_listener.get(zmq::sockopt::last_endpoint));
  auto ping = [&] {
    server_->transport().send("good", {envelope_frame(server_->envelope(proto::PING))},
                              std::chrono::seconds(5));
  };
  ping();
  auto counts = [&] { return server_->transport().connection_counts(); };
  ASSERT_EQ(counts().open, 1u);
  auto mallory = connect_client("mallory");
  expect_rejected({envelope(proto::CLOSE_CONNECTION, "mallory").SerializeAsString()},
                  RejectReason::kUnknownSender, &mallory);
  expect_rejected({envelope(proto::CLOSE_CONNECTION, "other").SerializeAsString()},
                  RejectReason::kSenderMismatch);
  expect_rejected({envelope(proto::CLOSE_CONNECTION).SerializeAsString(), "x"}, RejectReason::kFrameCount);
  EXPECT_EQ(counts().open, 1u);
  EXPECT_EQ(counts().closed_on_request, 0u);
  send(client_, {envelope(proto::CLOSE_CONNECTION).SerializeAsString()});
  ASSERT_TRUE(wait_until([&] { return counts().closed_on_request == 1; }, std::chrono::seconds(5)));
  EXPECT_EQ(counts().open, 0u);
  EXPECT_FALSE(server_->mailbox().pop(proto::CLOSE_CONNECTION, Clock::now(), {}));
  ping();
  EXPECT_EQ(counts().open, 1u);
  expect_still_serving();
}

TEST_F(ValidationTest, UnknownType) {
  auto e = envelope(proto::HEARTBEAT);
  e.set_type(static_cast<proto::MessageType>(99));
  expect_rejected({e.SerializeAsString()}, RejectReason::kUnknownType);
  expect_still_serving();
}

TEST_F(ValidationTest, PayloadLongerThanDeclared) {
  expect_rejected({tensor(proto::SEGMENT, 10).SerializeAsString(), floats(11)}, RejectReason::kSizeMismatch);
  expect_still_serving();
}

TEST_F(ValidationTest, DeclaredSizeDisagreesWithSegmentTable) {
  auto e = tensor(proto::SEGMENT, 60);
  e.set_segment_id(1);  // 50 elements long
  expect_rejected({e.SerializeAsString(), floats(60)}, RejectReason::kSegment);
  e.set_segment_id(2);  // no such segment
  e.set_count(10);
  expect_rejected({e.SerializeAsString(), floats(10)}, RejectReason::kSegment);
  expect_still_serving();
}

TEST_F(ValidationTest, TruncatedPayloadFrame) {
  std::string payload = floats(1000);
  payload.resize(payload.size() - 3);
  expect_rejected({tensor(proto::SEGMENT, 100).SerializeAsString(), floats(99)}, RejectReason::kTruncated);
  expect_rejected({tensor(proto::COLLECTIVE_CHUNK, 1000).SerializeAsString(), payload},
                  RejectReason::kTruncated);
  expect_still_serving();
}

// Compressed payloads (--compress): sized by their codec, an int8 block
// outside what a block may hold refused as a dtype.
TEST_F(ValidationTest, CompressedPayloadsAreSizedByTheirCodec) {
  auto half = tensor(proto::SEGMENT, 10);
  half.set_dtype(proto::DTYPE_FLOAT16);
  expect_rejected({half.SerializeAsString(), std::string(21, '\0')}, RejectReason::kSizeMismatch);
  expect_rejected({half.SerializeAsString(), std::string(19, '\0')}, RejectReason::kTruncated);
  auto int8 = tensor(proto::SEGMENT, 40);
  int8.set_dtype(proto::DTYPE_INT8_BLOCKS);
  int8.set_codec_block(16);  // 3 blocks: 3 scales and 40 values
  expect_rejected({int8.SerializeAsString(), std::string(40 + 8, '\0')}, RejectReason::kTruncated);
  int8.set_codec_block(3);
  expect_rejected({int8.SerializeAsString(), std::string(40 + 4 * 14, '\0')}, RejectReason::kDType);
  int8.set_codec_block(0);
  expect_rejected({int8.SerializeAsString(), std::string(40, '\0')}, RejectReason::kDType);
  int8.set_codec_block(16);
  int8.set_collective_tag(7);
  int8.set_collective_seq(1);
  send(client_, {int8.SerializeAsString(), std::string(40 + 12, '\0')});  // the right size gets through
  auto m = server_->mailbox().pop_chunk(ChunkKey{7, 1, "good"}, Clock::now() + std::chrono::seconds(5), {});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->envelope.codec_block(), 16u);
  expect_still_serving();
}

TEST_F(ValidationTest, TruncatedEnvelopeFrame) {
  auto e = tensor(proto::SEGMENT, 10);
  e.set_push_sum_weight(0.5);
  std::string bytes = e.SerializeAsString();
  bytes.resize(bytes.size() - 4);  // cut inside the last field
  expect_rejected({bytes, floats(10)}, RejectReason::kBadEnvelope);
  expect_still_serving();
}

TEST_F(ValidationTest, SingleGarbageFrame) {
  expect_rejected({std::string("\xff\xff\xff\xff\xff\xff\xff\xff garbage", 16)}, RejectReason::kBadEnvelope);
  expect_still_serving();
}

TEST_F(ValidationTest, WrongFrameCount) {
  // A tensor message needs exactly one payload frame...
  expect_rejected({tensor(proto::SEGMENT, 10).SerializeAsString()}, RejectReason::kFrameCount);
  expect_rejected({tensor(proto::SEGMENT, 5).SerializeAsString(), floats(5), floats(5)},
                  RejectReason::kFrameCount);
  // ...and a control message none.
  auto e = envelope(proto::HEARTBEAT);
  e.set_round(666);
  expect_rejected({e.SerializeAsString(), "x"}, RejectReason::kFrameCount);
  expect_still_serving();
}

TEST_F(ValidationTest, Oversize) {
  // Each frame is within the cap libzmq enforces; together they are not.
  expect_rejected(
      {tensor(proto::SEGMENT, kMaxMessageBytes / 4).SerializeAsString(), floats(kMaxMessageBytes / 4)},
      RejectReason::kOversize);
  expect_still_serving();
}

TEST_F(ValidationTest, AValidSegmentIsDelivered) {
  auto e = tensor(proto::SEGMENT, 50);
  e.set_segment_id(1);
  e.set_collective_tag(7);
  e.set_collective_seq(3);  // gossip segments are keyed by (protocol tag, round, sender)
  send(client_, {e.SerializeAsString(), floats(50)});
  auto m = server_->mailbox().pop_chunk(ChunkKey{7, 3, "good"}, Clock::now() + std::chrono::seconds(5), {});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->payload.at(0).size(), 50 * sizeof(float));
  EXPECT_EQ(server_->counters().total(), 0u);
}

// A chunk whose size does not fit the collective's schedule is dropped and
// counted, and the collective still completes with the right sum: nothing is
// half-applied. Uses the in-process transport to inject the bad chunk first.
TEST(CollectiveValidation, MisSizedChunkIsDroppedNotApplied) {
  InProcHub hub;
  std::vector<std::unique_ptr<Node>> nodes;
  for (const char* id : {"a", "b"}) {
    NodeOptions o;
    o.id = id;
    nodes.push_back(std::make_unique<Node>(o, hub));
  }
  nodes[0]->add_peer("b", nodes[1]->endpoint());
  nodes[1]->add_peer("a", nodes[0]->endpoint());
  proto::Envelope bad = nodes[0]->envelope(proto::COLLECTIVE_CHUNK);
  bad.set_collective_tag(3);
  bad.set_count(3);
  bad.set_dtype(proto::DTYPE_FLOAT32);
  std::vector<std::byte> payload(12, std::byte{0x7f});
  RawMessage raw{"a", {}};
  const std::string env_bytes = bad.SerializeAsString();
  const auto* p = reinterpret_cast<const std::byte*>(env_bytes.data());
  raw.frames.emplace_back(std::vector<std::byte>(p, p + env_bytes.size()));
  raw.frames.emplace_back(payload);
  ASSERT_TRUE(hub.deliver(nodes[1]->endpoint(), std::move(raw)));

  std::vector<std::vector<float>> v{std::vector<float>(10, 1.0f), std::vector<float>(10, 2.0f)};
  std::vector<std::exception_ptr> errors(2);
  {
    std::vector<std::jthread> ranks;
    for (size_t r = 0; r < 2; ++r) {
      ranks.emplace_back([&, r] {
        try {
          Group g(*nodes[r], 3, {"a", "b"});
          AllreduceRing(g, v[r]).run();
        } catch (...) {
          errors[r] = std::current_exception();
        }
      });
    }
  }
  testing::expect_no_errors(errors);
  EXPECT_EQ(v[0], std::vector<float>(10, 3.0f));
  EXPECT_EQ(v[1], std::vector<float>(10, 3.0f));
  EXPECT_EQ(nodes[1]->counters().get(RejectReason::kSizeMismatch), 1u);
}

TEST(Endpoint, ConnectableAndBindableForms) {
  using protocol::EndpointUse;
  for (const char* ok : {"tcp://127.0.0.1:7100", "tcp://host-1.example.org:1", "tcp://[::1]:65535",
                         "ipc:///tmp/w.sock", "inproc-hub://n0"}) {
    EXPECT_EQ(protocol::endpoint_problem(ok, EndpointUse::kConnect), "") << ok;
    EXPECT_EQ(protocol::endpoint_problem(ok, EndpointUse::kBind), "") << ok;
  }
  for (const char* bind_only : {"tcp://*:7100", "tcp://127.0.0.1:0", "tcp://0.0.0.0:*"}) {
    EXPECT_EQ(protocol::endpoint_problem(bind_only, EndpointUse::kBind), "") << bind_only;
    EXPECT_NE(protocol::endpoint_problem(bind_only, EndpointUse::kConnect), "") << bind_only;
  }
  const std::string nul("tcp://127.0.0.1:7\0", 18);
  const std::string long_path = "ipc:///" + std::string(107, 'p');
  for (const std::string& bad :
       {std::string(), std::string("garbage"), std::string("tcp://"), std::string("tcp://h"),
        std::string("tcp://h:"), std::string("tcp://:7"), std::string("tcp://h:65536"),
        std::string("tcp://h:7x"), std::string("tcp://h h:7"), std::string("tcp://[::1:7"),
        std::string("tcp://[zz]:7"), std::string("ipc://"), std::string("inproc://x"),
        std::string("pgm://eth0;239.192.1.1:5555"), nul, long_path}) {
    EXPECT_NE(protocol::endpoint_problem(bad, EndpointUse::kConnect), "") << bad;
    EXPECT_NE(protocol::endpoint_problem(bad, EndpointUse::kBind), "") << bad;
  }
}

TEST(RejectCounters, EveryReasonHasADistinctName) {
  RejectCounters c;
  std::set<std::string_view> names;
  for (const auto& [name, count] : c.snapshot()) {
    EXPECT_EQ(count, 0u);
    names.insert(name);
  }
  EXPECT_EQ(names.size(), kRejectReasonCount);
}

}  // namespace
}  // namespace gossipd::protocol
