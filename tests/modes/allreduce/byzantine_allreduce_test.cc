// AllReduce-SGD with a Byzantine member, across real gossipd processes.
// Without a defence, a member whose gradients are NaN (--inject-byzantine
// non_finite): every member sees the same sum, skips every step it spoils
// and says so, and no replica takes a NaN. With --robust clip (BTARD's
// CenteredClip at each block's owner), a scaled or NaN attacker is named by
// every honest member, the honest learn, and the replicas stay identical.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tests/support/cluster.h"
#include "tests/support/records.h"
#include "tests/support/temp_dir.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

TEST(ByzantineAllreduce, ANonFiniteGradientIsSkippedByEveryMemberAndNoReplicaTakesIt) {
  Cluster c(3,
            {"--algo", "allreduce", "--epochs", "1", "--quiet", "--threads", "1", "--train-limit", "1920",
             "--test-limit", "500", "--batch", "32"},
            [](int i) {
              return i == 2 ? std::vector<std::string>{"--inject-byzantine", "non_finite"}
                            : std::vector<std::string>{};
            });
  std::vector<std::string> hashes;
  for (int i = 0; i < c.size(); ++i) {
    ASSERT_TRUE(c.proc(i).wait(120s)) << "worker " << i << " did not finish";
    ASSERT_EQ(c.proc(i).exit_code(), 0) << c.proc(i).err();
    const auto end = c.end_record(i);
    ASSERT_TRUE(end && end->event() == "done") << c.proc(i).out();
    EXPECT_EQ(end->round(), 1920u / 3 / 32) << "every step counted, none applied";
    EXPECT_TRUE(std::isfinite(end->status().test_loss())) << "worker " << i << " took a NaN";
    const std::string log = c.proc(i).out() + c.proc(i).err();
    EXPECT_NE(log.find("the members' summed gradient holds NaN or an infinity; every member skips the step"),
              std::string::npos)
        << log;
    hashes.push_back(end->param_hash());
  }
  for (int i = 1; i < c.size(); ++i) EXPECT_EQ(hashes[i], hashes[0]) << "worker " << i;
}

// Local SGD (--local-steps): a member whose replica diverged (a learning
// rate of 1e30 overflows it) puts NaN into every parameters' average;
// every member sees the same average, skips it and keeps its own replica,
// so the honest ones still learn and no NaN reaches them.
TEST(ByzantineAllreduce, LocalSgdSkipsAParametersAverageHoldingNanAndNoHonestReplicaTakesIt) {
  Cluster c(3,
            {"--algo", "allreduce", "--local-steps", "4", "--epochs", "1", "--quiet", "--threads", "1",
             "--train-limit", "1920", "--test-limit", "500", "--batch", "32"},
            [](int i) {
              return i == 2 ? std::vector<std::string>{"--lr", "1e30"} : std::vector<std::string>{};
            });
  for (int i = 0; i < c.size(); ++i) {
    ASSERT_TRUE(c.proc(i).wait(120s)) << "worker " << i << " did not finish";
    ASSERT_EQ(c.proc(i).exit_code(), 0) << c.proc(i).err();
    const auto end = c.end_record(i);
    ASSERT_TRUE(end && end->event() == "done") << c.proc(i).out();
    const std::string log = c.proc(i).out() + c.proc(i).err();
    EXPECT_NE(
        log.find("the members' parameters' average holds NaN or an infinity; every member skips its average"),
        std::string::npos)
        << log;
    if (i == 2) {
      EXPECT_FALSE(std::isfinite(end->status().test_loss())) << "the diverged member's replica";
    } else {
      EXPECT_TRUE(std::isfinite(end->status().test_loss())) << "worker " << i << " took a NaN";
      EXPECT_GT(end->status().test_accuracy(), 0.5) << "worker " << i << " learned on its own steps";
    }
  }
}

// Without an attacker, --robust clip sends each member's momentum, clips
// none of it and hands the optimizer M_t - mu*M_{t-1}: plain AllReduce-SGD
// with momentum again, to float rounding.
TEST(RobustAllreduce, WithoutAnAttackerItIsPlainAllreduceSgdToFloatRounding) {
  TempDir dir("gossipd_robust_allreduce");
  auto params = [&](const std::string& robust) {
    const std::string out = dir.file("params-" + robust + ".bin");
    Cluster c(3,
              {"--algo", "allreduce", "--robust", robust, "--epochs", "1", "--quiet", "--threads", "1",
               "--train-limit", "1920", "--test-limit", "200", "--batch", "32", "--momentum", "0.9"},
              [&](int i) {
                return i == 0 ? std::vector<std::string>{"--params-out", out} : std::vector<std::string>{};
              });
    for (int i = 0; i < c.size(); ++i) {
      EXPECT_TRUE(c.proc(i).wait(120s)) << "worker " << i << " did not finish";
      EXPECT_EQ(c.proc(i).exit_code(), 0) << c.proc(i).err();
    }
    const std::string bytes = file_text(out);
    std::vector<float> p(bytes.size() / sizeof(float));
    std::memcpy(p.data(), bytes.data(), p.size() * sizeof(float));
    return p;
  };
  const auto plain = params("none");
  const auto robust = params("clip");
  ASSERT_EQ(plain.size(), robust.size());
  ASSERT_FALSE(plain.empty());
  double largest = 0, diff = 0;
  for (size_t k = 0; k < plain.size(); ++k) {
    largest = std::max(largest, double(std::abs(plain[k])));
    diff = std::max(diff, double(std::abs(plain[k] - robust[k])));
  }
  EXPECT_LT(diff, 1e-4 * largest) << "largest parameter " << largest;
  EXPECT_GT(diff, 0) << "the robust run took the plain sum's path";
}

class RobustAllreduceRun : public ::testing::TestWithParam<std::string> {};

TEST_P(RobustAllreduceRun, EveryHonestMemberNamesTheAttackerTheyLearnAndTheReplicasStayIdentical) {
  constexpr int kBad = 3;
  const std::string attack = GetParam();
  Cluster c(4,
            {"--algo", "allreduce", "--robust", "clip", "--epochs", "1", "--quiet", "--threads", "1",
             "--train-limit", "6000", "--test-limit", "1000", "--batch", "32"},
            [&](int i) {
              return i == kBad ? std::vector<std::string>{"--inject-byzantine", attack}
                               : std::vector<std::string>{};
            });
  std::vector<std::string> hashes;
  for (int i = 0; i < c.size(); ++i) {
    ASSERT_TRUE(c.proc(i).wait(120s)) << "worker " << i << " did not finish";
    ASSERT_EQ(c.proc(i).exit_code(), 0) << c.proc(i).err();
    const auto end = c.end_record(i);
    ASSERT_TRUE(end && end->event() == "done") << c.proc(i).out();
    hashes.push_back(end->param_hash());
    // A sum with the ×1000 member in it diverges in a few steps and a NaN
    // one skips every step (above); aggregated, they learn.
    if (i != kBad) {
      EXPECT_EQ(why_not_named_alone(c, i, kBad, 0.6), "");
    }
  }
  for (int i = 1; i < c.size(); ++i) EXPECT_EQ(hashes[i], hashes[0]) << "worker " << i;
}

// --evict-byzantine: the named attacker leaves every honest member's view
// (the step in flight stops as the view changes, and the ring re-forms
// over the three), the honest train on with identical replicas; cut off,
// the attacker asks to join again and is refused (10 epochs: the honest
// are still training when it asks).
TEST(ByzantineAllreduce, EvictByzantineTakesTheNamedAttackerOutOfTheRingAndTheHonestStayIdentical) {
  constexpr int kBad = 3;
  Cluster c(4, {"--algo",       "allreduce", "--robust",  "clip", "--evict-byzantine",    "--epochs",
                "10",           "--quiet",   "--threads", "1",    "--train-limit",        "6000",
                "--test-limit", "1000",      "--batch",   "32",   "--failure-timeout-ms", "1000",
                "--timeout-ms", "3000"},
            [&](int i) {
              return i == kBad ? std::vector<std::string>{"--inject-byzantine", "scaled"}
                               : std::vector<std::string>{};
            });
  for (int i = 0; i < c.size(); ++i) ASSERT_TRUE(c.proc(i).wait(180s)) << "worker " << i << " did not finish";
  ASSERT_EQ(why_not_evicted(c, kBad), "");
  std::vector<std::string> hashes;
  for (int i = 0; i < kBad; ++i) {
    const auto end = c.end_record(i);
    EXPECT_GE(end->status().test_accuracy(), 0.6) << "worker " << i;
    hashes.push_back(end->param_hash());
  }
  for (size_t i = 1; i < hashes.size(); ++i) EXPECT_EQ(hashes[i], hashes[0]) << "worker " << i;
}

INSTANTIATE_TEST_SUITE_P(Attacks, RobustAllreduceRun, ::testing::Values("scaled", "non_finite"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace gossipd::testing
