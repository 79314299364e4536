// A running gossipd under malformed input from an outside ZeroMQ client:
// every bad message is dropped and counted in /metrics, and the daemon keeps
// answering /status.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <zmq.hpp>

#include "proto/gossip.pb.h"
#include "protocol/wire/message.h"
#include "tests/support/cluster.h"
#include "tests/support/envelope.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

proto::Envelope envelope(const std::string& sender, proto::MessageType type) {
  return make_envelope("test", sender, type);
}

void send(zmq::socket_t& s, const std::vector<std::string>& frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    s.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
}

TEST(HostileInput, EveryBadMessageIsCountedAndStatusStillAnswers) {
  TempDir dir("gossipd_hostile");
  const std::string ep = "ipc://" + dir.file("w0.sock");
  // w1 is listed but never started: w0 waits in its start-up barrier, alive.
  Process daemon({bin("gossipd"),
                  "run",
                  "--id",
                  "w0",
                  "--listen",
                  ep,
                  "--peers",
                  "w1=ipc://" + dir.file("w1.sock"),
                  "--http",
                  "127.0.0.1:0",
                  "--cluster-id",
                  "test",
                  "--max-message-bytes",
                  "65536",
                  "--segments",
                  "64",
                  "--train-limit",
                  "500",
                  "--test-limit",
                  "100",
                  "--control-out",
                  dir.file("w0.control")});
  const uint16_t port = http_port(daemon, dir.file("w0.control"));
  ASSERT_GT(port, 0) << daemon.err();

  zmq::context_t ctx;
  auto client = [&](const std::string& id) {
    zmq::socket_t s(ctx, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::routing_id, id);
    s.connect(ep);
    return s;
  };
  zmq::socket_t member = client("w1");
  zmq::socket_t stranger = client("mallory");

  auto chunk = [](proto::Envelope e, uint64_t count) {
    e.set_count(count);
    e.set_dtype(proto::DTYPE_FLOAT32);
    e.set_collective_tag(1);
    return e;
  };
  proto::Envelope wrong_version = envelope("w1", proto::HEARTBEAT);
  wrong_version.set_version(99);
  proto::Envelope wrong_cluster = envelope("w1", proto::HEARTBEAT);
  wrong_cluster.set_cluster_id("another");
  const std::string floats3(12, '\0');

  struct Case {
    std::string reason;
    zmq::socket_t* via;
    std::vector<std::string> frames;
  };
  std::vector<Case> cases{
      {"bad_envelope", &member, {"\xff\xfe garbage that is no protobuf"}},
      {"version", &member, {wrong_version.SerializeAsString()}},
      {"cluster", &member, {wrong_cluster.SerializeAsString()}},
      {"unknown_sender", &stranger, {envelope("mallory", proto::HEARTBEAT).SerializeAsString()}},
      {"truncated",
       &member,
       {chunk(envelope("w1", proto::COLLECTIVE_CHUNK), 10).SerializeAsString(), floats3}},
      {"size_mismatch",
       &member,
       {chunk(envelope("w1", proto::COLLECTIVE_CHUNK), 1).SerializeAsString(), floats3}},
      {"frame_count", &member, {chunk(envelope("w1", proto::COLLECTIVE_CHUNK), 3).SerializeAsString()}},
      {"oversize",
       &member,
       {chunk(envelope("w1", proto::COLLECTIVE_CHUNK), 24000).SerializeAsString(), std::string(48000, 'a'),
        std::string(48000, 'b')}},
  };
  for (auto& c : cases) {
    const double before = rejected(port, c.reason);
    ASSERT_GE(before, 0) << c.reason << " missing from /metrics";
    send(*c.via, c.frames);
    EXPECT_TRUE(wait_until([&] { return rejected(port, c.reason) >= before + 1; }, 10s))
        << c.reason << " not counted";
  }
  // A flood: 2,000 garbage messages, all counted, daemon alive and answering.
  const double flood_before = rejected(port, "bad_envelope");
  for (int i = 0; i < 2000; ++i) send(member, {"junk" + std::to_string(i)});
  EXPECT_TRUE(wait_until([&] { return rejected(port, "bad_envelope") >= flood_before + 2000; }, 20s));
  const proto::Status status = fetch_status(port);
  EXPECT_EQ(status.id(), "w0") << status.DebugString();
  EXPECT_GE(status.messages_rejected(), 2000u + cases.size()) << status.DebugString();
  EXPECT_FALSE(daemon.exited()) << daemon.err();
}

// A joiner takes only the answer to its own HELLO (the nonce it carries,
// echoed) for its contact: member lists from a stranger while it waits, one
// without the nonce and one with another, are not answers. The member it
// asked never answers, so it ends with "no member answered" (before, the
// stranger's list made the stranger its contact).
TEST(HostileInput, AJoinerTakesOnlyTheAnswerToItsHelloForItsContact) {
  TempDir dir("gossipd_hostile");
  zmq::context_t ctx;
  zmq::socket_t silent(ctx, zmq::socket_type::router);
  silent.set(zmq::sockopt::linger, 0);
  silent.set(zmq::sockopt::rcvtimeo, 20000);
  const std::string silent_ep = "ipc://" + dir.file("silent.sock");
  silent.bind(silent_ep);
  const std::string joiner_ep = "ipc://" + dir.file("j.sock");
  Process joiner({bin("gossipd"), "run", "--id", "j", "--listen", joiner_ep, "--join", silent_ep,
                  "--cluster-id", "test", "--startup-timeout-ms", "4000", "--train-limit", "500",
                  "--test-limit", "100"});
  // Its first HELLO, with its nonce.
  zmq::message_t routing, body;
  ASSERT_TRUE(silent.recv(routing)) << joiner.err();
  ASSERT_TRUE(silent.recv(body)) << joiner.err();
  proto::Envelope hello;
  ASSERT_TRUE(hello.ParseFromArray(body.data(), static_cast<int>(body.size())));
  ASSERT_EQ(hello.type(), proto::HELLO);
  ASSERT_NE(hello.hello().nonce(), 0u) << "a first HELLO carries a nonce";
  zmq::socket_t stranger(ctx, zmq::socket_type::dealer);
  stranger.set(zmq::sockopt::linger, 0);
  stranger.set(zmq::sockopt::routing_id, "mallory");
  stranger.connect(joiner_ep);
  for (uint64_t nonce : {uint64_t{0}, hello.hello().nonce() + 1}) {
    proto::Envelope list = envelope("mallory", proto::MEMBER_LIST);
    proto::Member* m = list.mutable_member_list()->add_members();
    m->set_id("mallory");
    m->set_endpoint("ipc://" + dir.file("mallory.sock"));
    list.mutable_member_list()->set_answers_nonce(nonce);
    send(stranger, {list.SerializeAsString()});
  }
  ASSERT_TRUE(joiner.wait(30s)) << joiner.err();
  EXPECT_NE(joiner.exit_code(), 0);
  EXPECT_NE(joiner.err().find("no member answered"), std::string::npos) << joiner.err();
  EXPECT_EQ(joiner.err().find("mallory"), std::string::npos) << joiner.err();
}

// 10,000 messages of garbage at a worker that trains: random frame counts and
// bytes, well-formed envelopes with lying sizes, under a stranger's id and
// under a member's, from another cluster. Every one is counted, training and
// /status go on.
TEST(HostileInput, AFloodOfGarbageWhileTrainingIsCountedAndTrainingGoesOn) {
  Cluster c(2, {"--algo", "crossover", "--epochs", "1000", "--quiet", "--threads", "1", "--train-limit",
                "3000", "--test-limit", "200"});
  const uint16_t port = c.http_port(0);
  ASSERT_GT(port, 0) << c.proc(0).err();
  ASSERT_TRUE(wait_until([&] { return fetch_status(port).round() > 0; }, 60s));

  zmq::context_t ctx;
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::routing_id, "mallory");
  s.connect(c.endpoint("w0"));
  auto lying = [](const std::string& sender, uint64_t count) {
    proto::Envelope e = envelope(sender, proto::SEGMENT);
    e.set_cluster_id("test");
    e.set_count(count);
    e.set_dtype(proto::DTYPE_FLOAT32);
    return e.SerializeAsString();
  };
  auto counted = [&] {
    // Real traffic can add stale or unexpected messages: they are not ours.
    const MetricsText m = fetch_metrics(port);
    double ours = 0;
    for (const auto& sample : m.samples()) {
      const auto reason = sample.labels.find("reason");
      if (sample.name == "gossipd_messages_rejected_total" && reason != sample.labels.end() &&
          reason->second != "stale" && reason->second != "unexpected") {
        ours += sample.value;
      }
    }
    return static_cast<uint64_t>(ours);
  };
  const uint64_t before = counted();
  const uint64_t round_before = fetch_status(port).round();
  std::mt19937 rng(42);
  constexpr int kFlood = 10000;
  std::map<int, int> kinds;
  for (int i = 0; i < kFlood; ++i) {
    std::vector<std::string> frames;
    const int kind = static_cast<int>(rng() % 5);
    ++kinds[kind];
    switch (kind) {
      case 0: {  // random frame count and bytes
        const int n = 1 + static_cast<int>(rng() % 5);
        for (int f = 0; f < n; ++f) {
          std::string b(rng() % 300, '\0');
          for (auto& ch : b) ch = static_cast<char>(rng());
          frames.push_back(b);
        }
        break;
      }
      case 1:  // a stranger's envelope with a payload of another size than it says
        frames = {lying("mallory", 1000), std::string(12, 'x')};
        break;
      case 2:  // a member's id on a stranger's connection
        frames = {lying("w1", 3), std::string(12, 'x')};
        break;
      case 3: {  // another cluster
        proto::Envelope e = envelope("w1", proto::HEARTBEAT);
        e.set_cluster_id("another");
        frames = {e.SerializeAsString()};
        break;
      }
      default:  // more frames than any message has, and empty ones
        frames = {lying("mallory", 0), "", "", "", "", "", ""};
    }
    send(s, frames);
  }
  uint64_t got = 0;
  EXPECT_TRUE(wait_until([&] { return (got = counted() - before) >= kFlood; }, 60s)) << "counted " << got;
  EXPECT_EQ(got, static_cast<uint64_t>(kFlood));
  // Training went on through it, on both workers.
  EXPECT_TRUE(wait_until([&] { return fetch_status(port).round() >= round_before + 20; }, 30s))
      << fetch_status(port).DebugString();
  const uint16_t other = c.http_port(1);
  const uint64_t r1 = fetch_status(other).round();
  EXPECT_TRUE(wait_until([&] { return fetch_status(other).round() >= r1 + 20; }, 30s));
  EXPECT_FALSE(c.proc(0).exited()) << c.proc(0).err();
  std::printf(
      "[ measured ] %d garbage messages (kinds %d/%d/%d/%d/%d) all counted as rejected; training went on\n",
      kFlood, kinds[0], kinds[1], kinds[2], kinds[3], kinds[4]);
}

// Control bodies are checked before they are applied: a HELLO or member list
// naming an endpoint nobody could connect to, an empty or oversized id, or
// more members than --max-members must not reach the transport (ZeroMQ
// throws on a malformed endpoint: before the check, the first such HELLO
// killed the daemon), and the daemon keeps training.
TEST(HostileInput, MalformedHellosAndMemberListsAreRejectedAndTrainingGoesOn) {
  Cluster c(2, {"--algo", "crossover", "--epochs", "1000", "--quiet", "--threads", "1", "--train-limit",
                "3000", "--test-limit", "200", "--max-members", "16"});
  const uint16_t port = c.http_port(0);
  ASSERT_GT(port, 0) << c.proc(0).err();
  ASSERT_TRUE(wait_until([&] { return fetch_status(port).round() > 0; }, 60s));

  zmq::context_t ctx;
  auto client = [&](const std::string& id) {
    zmq::socket_t s(ctx, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::routing_id, id);
    s.connect(c.endpoint("w0"));
    return s;
  };
  // snprintf, not operator+: GCC 12 raises a -Wrestrict false positive (PR 105329).
  auto numbered = [](const char* prefix, int i) {
    char s[64];
    std::snprintf(s, sizeof(s), "%s%d", prefix, i);
    return std::string(s);
  };
  std::string long_host(300, 'h');
  long_host.insert(0, "tcp://").append(":7");
  const std::vector<std::string> bad_endpoints = {"",
                                                  "garbage",
                                                  "tcp://",
                                                  "tcp://127.0.0.1",
                                                  "tcp://127.0.0.1:",
                                                  "tcp://127.0.0.1:99999",
                                                  "tcp://:7",
                                                  "tcp://127.0.0.1:7x",
                                                  "tcp://127.0.0.1:0",
                                                  "ipc://",
                                                  "pgm://eth0;239.192.1.1:5555",
                                                  "inproc://x",
                                                  std::string(5000, 'a'),
                                                  long_host,
                                                  std::string("tcp://127.0.0.1:7\0", 18)};

  // 1. HELLOs from a stranger (anyone may ask to join).
  zmq::socket_t stranger = client("mallory");
  int sent = 0;
  for (const auto& ep : bad_endpoints) {
    proto::Envelope e = envelope("mallory", proto::HELLO);
    e.mutable_hello()->set_endpoint(ep);
    send(stranger, {e.SerializeAsString()});
    ++sent;
  }
  EXPECT_TRUE(wait_until([&] { return rejected(port, "bad_body") >= sent; }, 30s))
      << "bad_body rejections: " << rejected(port, "bad_body") << " of " << sent;
  const uint64_t round_before = fetch_status(port).round();
  EXPECT_TRUE(wait_until([&] { return fetch_status(port).round() >= round_before + 20; }, 30s))
      << fetch_status(port).DebugString();
  EXPECT_EQ(fetch_status(port).members_size(), 2) << fetch_status(port).DebugString();

  // 2. Member lists under the member w1's routing id (the validator takes it
  // for w1; ZeroMQ hands w1's own connection over to this socket, so w1 may
  // be evicted: what matters is that no listed member is taken in).
  zmq::socket_t member = client("w1");
  for (size_t i = 0; i < bad_endpoints.size(); ++i) {
    proto::Envelope l = envelope("w1", i % 2 ? proto::MEMBER_LIST : proto::HEARTBEAT);
    proto::Member* m = l.mutable_member_list()->add_members();
    m->set_id(numbered("m", static_cast<int>(i)));
    m->set_endpoint(bad_endpoints[i]);
    send(member, {l.SerializeAsString()});
    ++sent;
  }
  for (const std::string& id : {std::string(), std::string(256, 'i'), std::string(1, '\0')}) {
    proto::Envelope l = envelope("w1", proto::HEARTBEAT);
    proto::Member* m = l.mutable_member_list()->add_members();
    m->set_id(id);
    m->set_endpoint("tcp://127.0.0.1:9");
    send(member, {l.SerializeAsString()});
    ++sent;
  }
  {
    proto::Envelope l = envelope("w1", proto::MEMBER_LIST);
    for (int i = 0; i < 17; ++i) {  // one more than --max-members
      proto::Member* m = l.mutable_member_list()->add_members();
      m->set_id(numbered("many", i));
      m->set_endpoint(numbered("ipc:///nonexistent/many", i));
    }
    send(member, {l.SerializeAsString()});
    ++sent;
  }
  EXPECT_TRUE(wait_until([&] { return rejected(port, "bad_body") >= sent; }, 30s))
      << "bad_body rejections: " << rejected(port, "bad_body") << " of " << sent;
  EXPECT_EQ(rejected(port, "bad_body"), sent);
  const proto::Status status = fetch_status(port);
  for (const auto& id : status.members()) {
    EXPECT_TRUE(id == "w0" || id == "w1") << "took in '" << id << "': " << status.DebugString();
  }
  EXPECT_FALSE(c.proc(0).exited()) << c.proc(0).err();
  std::printf(
      "[ measured ] %d malformed HELLOs and member lists, all counted as bad_body; training went on\n", sent);
}

}  // namespace
}  // namespace gossipd::testing
