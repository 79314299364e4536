// Training through a lossy, slow network (injected on every worker's sends):
// 10% of messages lost and 50 ms added to every one. A round waits 100 ms
// for its segments (twice the delay; at 200 ms the runs took 1.5x as long,
// waiting on the lost ones, for the same accuracy: tests/README.md). Gossip rides it out
// (a lost segment is a skipped one) and Crossover-SGD still reaches the
// accuracy target;
// AllReduce cannot lose a piece of the sum: it fails with a clear error,
// never hangs.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "tests/support/cluster.h"
#include "tests/support/http_client.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::vector<std::string> kLossy{"--inject-drop", "0.1", "--inject-delay-ms", "50", "--quiet",
                                      "--threads",     "1"};

class LossyNetwork : public ::testing::TestWithParam<std::string> {};

TEST_P(LossyNetwork, GossipStillReachesEightyFivePercent) {
  std::vector<std::string> args = kLossy;
  args.insert(args.end(),
              {"--epochs", "2", "--segment-deadline-ms", "100", "--consensus-every", "0", "--algo"});
  std::istringstream words(GetParam());
  for (std::string w; words >> w;) args.push_back(w);
  const auto start = Clock::now();
  Cluster c(4, args);
  double sum = 0;
  uint64_t dropped = 0;
  for (int i = 0; i < c.size(); ++i) {
    ASSERT_TRUE(c.proc(i).wait(400s)) << "worker " << i << " did not finish";
    ASSERT_EQ(c.proc(i).exit_code(), 0) << c.proc(i).err();
    const std::string out = c.proc(i).out();
    const auto end = c.end_record(i);
    ASSERT_TRUE(end && end->event() == "done") << out;
    sum += end->status().test_accuracy();
    dropped += end->faults().dropped();
  }
  const double mean = sum / c.size();
  EXPECT_GE(mean, 0.85) << GetParam() << " mean test accuracy " << mean;
  EXPECT_GT(dropped, 100u) << "the faults were not injected";
  std::printf(
      "[ measured ] %s under 10%% loss + 50 ms: mean test accuracy %.4f after 2 epochs, %llu messages "
      "dropped, %.0f s\n",
      GetParam().c_str(), mean, static_cast<unsigned long long>(dropped),
      std::chrono::duration<double>(Clock::now() - start).count());
}

// Push-sum loses the mass of every lost message: before the step was taken
// on z and the weights kept up (push_sum.h), osgp ended at 0.10 here.
INSTANTIATE_TEST_SUITE_P(Protocols, LossyNetwork, ::testing::Values("crossover --overlap", "osgp", "sgp"));

TEST(LossyNetwork, AllreduceFailsWithAClearErrorInsteadOfHanging) {
  std::vector<std::string> args = kLossy;
  args.insert(args.end(),
              {"--algo", "allreduce", "--epochs", "1000", "--train-limit", "3000", "--test-limit", "100",
               "--timeout-ms", "1000", "--failure-timeout-ms", "1500", "--heartbeat-ms", "100"});
  const auto start = Clock::now();
  Cluster c(3, args);
  for (int i = 0; i < c.size(); ++i) {
    ASSERT_TRUE(c.proc(i).wait(60s)) << "worker " << i << " hangs";
    EXPECT_EQ(c.proc(i).exit_code(), 1) << c.proc(i).out();
    const std::string err = c.proc(i).err();
    EXPECT_TRUE(std::regex_search(err, std::regex("silent for [0-9]+ ms|left the cluster"))) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << "one line: " << err;
  }
  std::printf(
      "[ measured ] allreduce under 10%% loss: every worker failed with a one-line error within %.1f s\n",
      std::chrono::duration<double>(Clock::now() - start).count());
}

}  // namespace
}  // namespace gossipd::testing
