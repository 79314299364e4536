// AllReduce-SGD between real gossipd processes over the direct data path
// (tcp://127.0.0.1 endpoints) while a plain TCP client attacks one worker's
// data port: junk, a Hello cut in half, Hellos that are not a member's or
// carry a nonce never announced, then a flood of connections that say
// nothing. Each refusal is counted in /metrics under its reason and the
// workers train on, together.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "protocol/wire/data_wire.h"
#include "protocol/wire/message.h"
#include "tests/daemon/sync_run.h"
#include "tests/support/raw_tcp_client.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

std::vector<std::byte> hello(const std::string& sender, uint64_t nonce) {
  return protocol::wire::encode_hello(
      protocol::wire::Hello{protocol::kProtocolVersion, nonce, "test", sender});
}

// Sends `bytes` on a fresh connection; true when the worker closes it
// without the ack, within `timeout`.
bool refused(uint16_t data_port, std::span<const std::byte> bytes, std::chrono::milliseconds timeout = 10s) {
  RawTcpClient c(data_port);
  return c.connected() && (bytes.empty() || c.send(bytes)) && c.answer(timeout) == RawTcpClient::kClosed;
}

TEST(HostileDataPort, JunkHalfHellosStrangersAndAFloodAreRefusedAndCountedWhileTrainingGoesOn) {
  Cluster c(2,
            {"--algo", "allreduce", "--epochs", "1000", "--quiet", "--threads", "1", "--train-limit", "3000",
             "--test-limit", "200", "--timeout-ms", "10000"},
            nullptr, Cluster::Listen::kTcp);
  const uint16_t http = c.http_port(0);
  ASSERT_GT(http, 0) << c.proc(0).err();
  proto::Status st;
  ASSERT_TRUE(wait_until([&] { return (st = fetch_status(http)).round() > 0; }, 60s)) << c.proc(0).err();
  const uint16_t port = static_cast<uint16_t>(st.data_port());
  ASSERT_GT(port, 0) << "no direct data path on " << st.listen();

  const std::vector<std::byte> junk(64, std::byte{0xab});
  EXPECT_TRUE(refused(port, junk));
  const std::vector<std::byte> whole = hello("w1", 1);
  EXPECT_TRUE(refused(port, std::span(whole).first(whole.size() / 2)));  // the rest never comes
  EXPECT_TRUE(refused(port, hello("mallory", 1)));                       // not a member
  EXPECT_TRUE(refused(port, hello("w1", 0x5eed)));                       // a nonce never announced
  EXPECT_GE(rejected(http, "bad_envelope"), 1);
  EXPECT_GE(rejected(http, "truncated"), 1);
  EXPECT_GE(rejected(http, "unknown_sender"), 1);
  EXPECT_GE(rejected(http, "unexpected"), 1);
  // Each silent connection is refused once: evicted by a newer one past the
  // 64 that may owe their Hello (queue_full), or closed before it (truncated).
  const auto silent = [&] { return rejected(http, "queue_full") + rejected(http, "truncated"); };
  const double before_flood = silent();
  {
    std::vector<std::unique_ptr<RawTcpClient>> flood;
    for (int i = 0; i < 200; ++i) flood.push_back(std::make_unique<RawTcpClient>(port));
    for (auto& f : flood) EXPECT_TRUE(f->connected());
  }  // all closed without a word
  double got = 0;
  EXPECT_TRUE(wait_until([&] { return (got = silent() - before_flood) >= 200; }, 30s)) << "refused " << got;
  EXPECT_EQ(got, 200);

  // Training goes on over the same port, on both workers.
  const uint64_t after_attack = fetch_status(http).round();
  const uint16_t http1 = c.http_port(1);
  ASSERT_TRUE(wait_until([&] { return fetch_status(http).round() >= after_attack + 50; }, 60s))
      << c.proc(0).err();
  for (uint16_t h : {http, http1}) {
    const proto::Status s = fetch_status(h);
    EXPECT_EQ(s.state(), "training") << s.error();
    EXPECT_GE(s.round(), after_attack + 40);
  }
}

}  // namespace
}  // namespace gossipd::testing
