// AllReduce-SGD with a member whose gradients are NaN (--inject-byzantine
// non_finite), across real gossipd processes: every member sees the same
// sum, skips every step it spoils and says so, and no replica takes a NaN.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/support/cluster.h"

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

}  // namespace
}  // namespace gossipd::testing
