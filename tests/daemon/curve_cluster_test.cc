// A CURVE cluster of gossipd workers turns away everyone without its key: a
// worker with no key, with a key pair of its own, and with the complete key
// set of another cluster each fail to join, nothing they send gets in, and
// the cluster trains on.
#include <gtest/gtest.h>

#include "protocol/transport/curve.h"
#include "tests/support/cluster.h"
#include "tests/support/http_client.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

TEST(CurveCluster, EveryoneWithoutTheClusterKeyIsTurnedAwayAndTrainingGoesOn) {
  TempDir dir("gossipd_curve");
  const auto a = protocol::generate_keypair();
  protocol::write_secret_key_file(dir.file("a.secret"), a);
  protocol::write_public_key_file(dir.file("a.public"), a.public_key);
  const auto b = protocol::generate_keypair();  // another cluster's complete set
  protocol::write_secret_key_file(dir.file("b.secret"), b);
  protocol::write_public_key_file(dir.file("b.public"), b.public_key);
  const auto own = protocol::generate_keypair();  // a key pair of its own, with cluster A's public key
  protocol::write_secret_key_file(dir.file("own.secret"), own);

  const std::vector<std::string> common{"--algo",  "crossover",    "--epochs", "1000",
                                        "--quiet", "--threads",    "1",        "--train-limit",
                                        "3000",    "--test-limit", "200"};
  std::vector<std::string> members = common;
  members.insert(members.end(),
                 {"--curve-secret-key", dir.file("a.secret"), "--curve-cluster-key", dir.file("a.public")});
  Cluster c(2, members);
  const uint16_t port = c.http_port(0);
  ASSERT_GT(port, 0) << c.proc(0).err();
  ASSERT_TRUE(wait_until([&] { return fetch_status(port).round() > 0; }, 60s)) << c.proc(0).err();

  struct Intruder {
    std::string id;
    std::string name;
    std::vector<std::string> keys;
  };
  const std::vector<Intruder> intruders{
      {"x0", "no key", {}},
      {"x1",
       "its own key pair",
       {"--curve-secret-key", dir.file("own.secret"), "--curve-cluster-key", dir.file("a.public")}},
      {"x2",
       "another cluster's keys",
       {"--curve-secret-key", dir.file("b.secret"), "--curve-cluster-key", dir.file("b.public")}},
  };
  for (const auto& in : intruders) {
    std::vector<std::string> args = common;
    args.insert(args.end(), {"--startup-timeout-ms", "2000"});
    args.insert(args.end(), in.keys.begin(), in.keys.end());
    const int j = c.join(in.id, 0, args);
    ASSERT_TRUE(c.proc(j).wait(60s)) << in.name;
    EXPECT_EQ(c.proc(j).exit_code(), 1) << in.name << ": " << c.proc(j).out();
    EXPECT_NE(c.proc(j).err().find("no member answered"), std::string::npos)
        << in.name << ": " << c.proc(j).err();
  }
  // Nothing got as far as validation (it would be counted there), the
  // handshakes were refused, and both members still train, as two.
  const proto::Status status = fetch_status(port);
  EXPECT_EQ(status.messages_rejected(), 0u) << status.DebugString();
  const MetricsText metrics = fetch_metrics(port);
  const double refused = metrics.value("gossipd_curve_clients_refused_total").value_or(0);
  EXPECT_GE(refused, 1) << metrics;
  EXPECT_EQ(std::vector<std::string>(status.members().begin(), status.members().end()),
            (std::vector<std::string>{"w0", "w1"}));
  const uint64_t before = status.round();
  EXPECT_TRUE(wait_until([&] { return fetch_status(port).round() >= before + 20; }, 30s));
  std::printf("[ measured ] 3 intruders turned away; ZAP refusals %.0f; the cluster went on training\n",
              refused);
}

}  // namespace
}  // namespace gossipd::testing
