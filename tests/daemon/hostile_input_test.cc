// A running gossipd under malformed input from an outside ZeroMQ client:
// every bad message is dropped and counted in /metrics, and the daemon keeps
// answering /status.
#include <gtest/gtest.h>

#include <zmq.hpp>

#include <filesystem>
#include <regex>

#include "proto/gossip.pb.h"
#include "protocol/message.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

// Reads gossipd_messages_rejected_total{reason="..."} from /metrics (-1 if absent).
double rejected(uint16_t port, const std::string& reason) {
  const std::string m = http_get(port, "/metrics");
  std::smatch match;
  const std::regex re("gossipd_messages_rejected_total\\{reason=\"" + reason + "\"\\} ([0-9.e+]+)");
  return std::regex_search(m, match, re) ? std::stod(match[1]) : -1;
}

proto::Envelope envelope(const std::string& sender, proto::MessageType type) {
  proto::Envelope e;
  e.set_version(protocol::kProtocolVersion);
  e.set_cluster_id("test");
  e.set_sender(sender);
  e.set_type(type);
  return e;
}

void send(zmq::socket_t& s, const std::vector<std::string>& frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    s.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
}

TEST(HostileInput, EveryBadMessageIsCountedAndStatusStillAnswers) {
  char tmpl[] = "/tmp/gossipd_hostile_XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string ep = "ipc://" + dir + "/w0.sock";
  // w1 is listed but never started: w0 waits in its start-up barrier, alive.
  Process daemon({bin("gossipd"), "run", "--id", "w0", "--listen", ep, "--peers",
                  "w1=ipc://" + dir + "/w1.sock", "--http", "127.0.0.1:0", "--cluster-id", "test",
                  "--max-message-bytes", "65536", "--train-limit", "500", "--test-limit", "100"});
  std::smatch m;
  std::string out;
  ASSERT_TRUE(wait_until([&] {
    out = daemon.out();
    return std::regex_search(out, m, std::regex("http on port ([0-9]+)"));
  }, 30s)) << daemon.err();
  const uint16_t port = static_cast<uint16_t>(std::stoi(m[1]));

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
      {"truncated", &member, {chunk(envelope("w1", proto::COLLECTIVE_CHUNK), 10).SerializeAsString(), floats3}},
      {"size_mismatch", &member, {chunk(envelope("w1", proto::COLLECTIVE_CHUNK), 1).SerializeAsString(), floats3}},
      {"frame_count", &member, {chunk(envelope("w1", proto::COLLECTIVE_CHUNK), 3).SerializeAsString()}},
      {"oversize", &member,
       {chunk(envelope("w1", proto::COLLECTIVE_CHUNK), 24000).SerializeAsString(), std::string(48000, 'a'),
        std::string(48000, 'b')}},
  };
  for (auto& c : cases) {
    const double before = rejected(port, c.reason);
    ASSERT_GE(before, 0) << c.reason << " missing from /metrics";
    send(*c.via, c.frames);
    EXPECT_TRUE(wait_until([&] { return rejected(port, c.reason) >= before + 1; }, 10s)) << c.reason << " not counted";
  }
  // A flood: 2,000 garbage messages, all counted, daemon alive and answering.
  const double flood_before = rejected(port, "bad_envelope");
  for (int i = 0; i < 2000; ++i) send(member, {"junk" + std::to_string(i)});
  EXPECT_TRUE(wait_until([&] { return rejected(port, "bad_envelope") >= flood_before + 2000; }, 20s));
  const std::string status = http_get(port, "/status");
  EXPECT_NE(status.find("\"id\":\"w0\""), std::string::npos) << status;
  EXPECT_NE(status.find("\"messages_rejected\":\""), std::string::npos) << status;
  EXPECT_FALSE(daemon.exited()) << daemon.err();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gossipd::testing
