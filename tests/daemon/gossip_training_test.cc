// Decentralized training across real gossipd processes: every protocol
// reaches 0.85 mean test accuracy within 3 epochs of data per worker.
#include <gtest/gtest.h>

#include <regex>

#include "tests/support/cluster.h"
#include "tests/support/http_client.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

class GossipTraining : public ::testing::TestWithParam<std::string> {};

TEST_P(GossipTraining, FourWorkersReachEightyFivePercentInThreeEpochs) {
  Cluster c(4, {"--algo", GetParam(), "--epochs", "3", "--quiet", "--threads", "1"});
  double sum = 0;
  for (int i = 0; i < c.size(); ++i) {
    ASSERT_TRUE(c.proc(i).wait(300s)) << "worker " << i << " did not finish";
    ASSERT_EQ(c.proc(i).exit_code(), 0) << c.proc(i).err();
    std::smatch m;
    const std::string out = c.proc(i).out();
    ASSERT_TRUE(std::regex_search(out, m, std::regex("done: round ([0-9]+) test_accuracy ([0-9.]+)"))) << out;
    EXPECT_EQ(std::stoi(m[1]), 3 * (60000 / 4 / 64));  // every member made the same rounds
    sum += std::stod(m[2]);
  }
  EXPECT_GE(sum / c.size(), 0.85) << GetParam() << " mean test accuracy " << sum / c.size();
}

INSTANTIATE_TEST_SUITE_P(Protocols, GossipTraining, ::testing::Values("crossover", "sgp", "osgp", "allreduce"));

TEST(GossipStatus, CrossoverReportsSegmentsAndBytes) {
  Cluster c(3, {"--algo", "crossover", "--epochs", "1000", "--quiet", "--train-limit", "3000", "--test-limit", "500",
                "--batch", "32"});
  const uint16_t port = c.http_port(0);
  ASSERT_GT(port, 0);
  std::string status;
  ASSERT_TRUE(wait_until(
      [&] {
        status = http_get(port, "/status");
        return status.find("\"bytes_received\":\"0\"") == std::string::npos &&
               status.find("\"bytes_received\":") != std::string::npos;
      },
      60s))
      << status;
  EXPECT_NE(status.find("\"algo\":\"crossover\""), std::string::npos);
  EXPECT_NE(status.find("\"segments_skipped\":"), std::string::npos);
  const std::string metrics = http_get(port, "/metrics");
  EXPECT_NE(metrics.find("gossipd_segments_skipped_total "), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("gossipd_gossip_bytes_sent_total "), std::string::npos);
}

TEST(GossipFlags, BadSegmentsSpecIsOneLine) {
  RunResult r = run({bin("gossipd"), "run", "--id", "w0", "--algo", "crossover", "--segments", "lots",
                     "--train-limit", "100", "--test-limit", "10"},
                    30s);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--segments 'lots'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gossipd::testing
