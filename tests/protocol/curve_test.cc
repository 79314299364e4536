// CURVE on: only holders of the cluster key can connect and deliver.
#include "protocol/transport/curve.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <zmq.hpp>

#include "protocol/collectives/barrier.h"
#include "protocol/collectives/ring.h"
#include "protocol/wire/errors.h"
#include "tests/protocol/test_cluster.h"
#include "tests/support/temp_dir.h"

namespace gossipd::protocol {
namespace {

using Clock = std::chrono::steady_clock;

// Watches a socket's monitor stream for one of `events`.
class Monitor {
 public:
  Monitor(zmq::context_t& ctx, zmq::socket_t& socket, const std::string& name)
      : pair_(ctx, zmq::socket_type::pair) {
    const std::string addr = "inproc://monitor-" + name;
    if (zmq_socket_monitor(socket.handle(), addr.c_str(), ZMQ_EVENT_ALL) != 0) throw zmq::error_t();
    pair_.set(zmq::sockopt::linger, 0);
    pair_.connect(addr);
  }
  // True when one of `events` is seen before the timeout.
  bool wait_for(int events, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return false;
      zmq::pollitem_t item{pair_.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, left) == 0) continue;
      zmq::message_t event, address;
      if (!pair_.recv(event)) continue;
      if (event.more()) (void)pair_.recv(address);
      uint16_t id;
      std::memcpy(&id, event.data(), sizeof(id));
      seen_ |= id;
      if (id & events) return true;
    }
  }
  int seen() const { return seen_; }

 private:
  zmq::socket_t pair_;
  int seen_ = 0;
};

constexpr int kHandshakeFailed = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                 ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;

class CurveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const KeyPair cluster = generate_keypair();
    write_secret_key_file(dir_ / "cluster.key", cluster);
    write_public_key_file(dir_ / "cluster.pub", cluster.public_key);
    cluster_ = curve_options_from_files(dir_ / "cluster.key", dir_ / "cluster.pub");
    server_ = make_node("server", cluster_);
    server_->validator().add_member("member");
  }
  static std::unique_ptr<Node> make_node(const std::string& id, std::optional<CurveOptions> curve) {
    NodeOptions o;
    o.id = id;
    o.curve = std::move(curve);
    return std::make_unique<Node>(o);
  }

  // A raw DEALER that claims to be "member", with the given CURVE client keys.
  zmq::socket_t raw_client(const std::optional<KeyPair>& keys) {
    zmq::socket_t s(ctx_, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::routing_id, "member");
    if (keys) {
      s.set(zmq::sockopt::curve_serverkey, cluster_.server_public_key);
      s.set(zmq::sockopt::curve_publickey, keys->public_key);
      s.set(zmq::sockopt::curve_secretkey, keys->secret_key);
    }
    return s;
  }

  void send_heartbeat(zmq::socket_t& s, uint64_t round) {
    proto::Envelope e = server_->envelope(proto::HEARTBEAT);
    e.set_sender("member");
    e.set_round(round);
    const std::string bytes = e.SerializeAsString();
    s.send(zmq::buffer(bytes), zmq::send_flags::dontwait);
  }

  gossipd::testing::TempDir tmp_{"gossipd_curve"};
  const std::filesystem::path dir_ = tmp_.path();
  CurveOptions cluster_;
  std::unique_ptr<Node> server_;
  zmq::context_t ctx_;
};

TEST_F(CurveTest, KeyFilesRoundTrip) {
  const KeyPair k = read_secret_key_file(dir_ / "cluster.key");
  EXPECT_EQ(k.public_key.size(), 40u);
  EXPECT_EQ(k.secret_key.size(), 40u);
  EXPECT_EQ(read_public_key_file(dir_ / "cluster.pub"), std::vector<std::string>{k.public_key});
  EXPECT_EQ(std::filesystem::status(dir_ / "cluster.key").permissions() & std::filesystem::perms::others_read,
            std::filesystem::perms::none);
  EXPECT_THROW(read_secret_key_file(dir_ / "cluster.pub"), ProtocolConfigError);
  EXPECT_THROW(read_public_key_file(dir_ / "missing"), ProtocolConfigError);
}

TEST_F(CurveTest, WrongKeyIsRefusedAndDeliversNothing) {
  zmq::socket_t rogue = raw_client(generate_keypair());
  Monitor mon(ctx_, rogue, "wrong-key");
  rogue.connect(server_->endpoint());
  send_heartbeat(rogue, 1);
  EXPECT_TRUE(mon.wait_for(ZMQ_EVENT_HANDSHAKE_FAILED_AUTH, std::chrono::seconds(5)))
      << "events " << mon.seen();
  EXPECT_GE(server_->zap_refused(), 1u);
  EXPECT_FALSE(mon.seen() & ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
}

TEST_F(CurveTest, NoKeyIsRefusedAndDeliversNothing) {
  zmq::socket_t plain = raw_client(std::nullopt);
  Monitor mon(ctx_, plain, "no-key");
  plain.connect(server_->endpoint());
  send_heartbeat(plain, 2);
  EXPECT_TRUE(mon.wait_for(kHandshakeFailed | ZMQ_EVENT_DISCONNECTED, std::chrono::seconds(5)))
      << "events " << mon.seen();
  EXPECT_FALSE(mon.seen() & ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
}

TEST_F(CurveTest, RightKeyDeliversAndRefusedOnesNeverDid) {
  zmq::socket_t rogue = raw_client(generate_keypair());
  Monitor rogue_mon(ctx_, rogue, "rogue");
  rogue.connect(server_->endpoint());
  send_heartbeat(rogue, 1);
  ASSERT_TRUE(rogue_mon.wait_for(ZMQ_EVENT_HANDSHAKE_FAILED_AUTH, std::chrono::seconds(5)));

  zmq::socket_t good = raw_client(read_secret_key_file(dir_ / "cluster.key"));
  Monitor good_mon(ctx_, good, "good");
  good.connect(server_->endpoint());
  send_heartbeat(good, 3);
  EXPECT_TRUE(good_mon.wait_for(ZMQ_EVENT_HANDSHAKE_SUCCEEDED, std::chrono::seconds(5)));
  auto m = server_->mailbox().pop(proto::HEARTBEAT, Clock::now() + std::chrono::seconds(5), {});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->envelope.round(), 3u);  // the rogue's round-1 heartbeat never arrived
}

TEST_F(CurveTest, NodesWithTheClusterKeyRunACollective) {
  // Three nodes with the cluster's keys: an allreduce over CURVE connections
  // gives the exact sum on every rank, and a barrier completes.
  NodeOptions curve;
  curve.curve = cluster_;
  constexpr size_t kRanks = 3, kCount = 100003;  // several pieces per block
  testing::TestCluster cluster(kRanks, curve);
  CollectiveOptions o;
  o.timeout = std::chrono::seconds(20);
  o.chunk_bytes = 64 << 10;
  std::vector<std::vector<float>> out(kRanks);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), 1, cluster.ids(), o);
    out[r].resize(kCount);
    // Integers: every summation order gives the same float.
    for (size_t i = 0; i < kCount; ++i) out[r][i] = static_cast<float>((i + 3 * r) % 97);
    AllreduceRing(g, out[r]).run();
    Barrier(g).run();
  }));
  std::vector<float> want(kCount, 0.0f);
  for (size_t r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < kCount; ++i) want[i] += static_cast<float>((i + 3 * r) % 97);
  }
  for (size_t r = 0; r < kRanks; ++r) EXPECT_EQ(out[r], want) << "rank " << r;
  for (size_t r = 0; r < kRanks; ++r) EXPECT_EQ(cluster.node(r).zap_refused(), 0u) << "rank " << r;
  // The same sockets are CURVE servers: a client without the key gets nowhere.
  zmq::socket_t plain = raw_client(std::nullopt);
  Monitor mon(ctx_, plain, "plain-to-rank0");
  plain.connect(cluster.node(0).endpoint());
  send_heartbeat(plain, 5);
  EXPECT_TRUE(mon.wait_for(kHandshakeFailed | ZMQ_EVENT_DISCONNECTED, std::chrono::seconds(5)))
      << "events " << mon.seen();
  EXPECT_FALSE(mon.seen() & ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
}

// A server without the cluster secret cannot read what members send.
TEST_F(CurveTest, ImpostorServerReadsNothing) {
  CurveOptions impostor_keys = cluster_;
  impostor_keys.own = generate_keypair();  // serves with the wrong secret
  impostor_keys.allowed_client_keys = {cluster_.own.public_key};
  auto impostor = make_node("impostor", impostor_keys);
  impostor->validator().add_member("member");
  zmq::socket_t good = raw_client(read_secret_key_file(dir_ / "cluster.key"));
  Monitor mon(ctx_, good, "to-impostor");
  good.connect(impostor->endpoint());
  send_heartbeat(good, 4);
  EXPECT_TRUE(mon.wait_for(kHandshakeFailed | ZMQ_EVENT_DISCONNECTED, std::chrono::seconds(5)))
      << "events " << mon.seen();
  EXPECT_FALSE(mon.seen() & ZMQ_EVENT_HANDSHAKE_SUCCEEDED);
  EXPECT_FALSE(impostor->mailbox().pop(proto::HEARTBEAT, Clock::now(), {}));
}

}  // namespace
}  // namespace gossipd::protocol
