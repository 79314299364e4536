// A per-worker flag's text typed once (daemon/config/per_worker.h): each
// worker it names with its parsed value, and one-line refusals naming the flag.
#include "daemon/config/per_worker.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "daemon/config/cli.h"

namespace gossipd::testing {
namespace {

using daemon::PerWorker;
using daemon::UsageError;

double twice(const std::string& value, const std::string& item) {
  if (value == "bad") throw UsageError("--flag: " + item + " is bad");
  return 2 * std::stod(value);
}

TEST(PerWorker, ResolvesEachNamedWorkerWithItsParsedValueAndKeepsTheText) {
  PerWorker<double> p{"w3=1.5,w0=2", {}};
  daemon::resolve(p, "--flag", 4, twice);
  EXPECT_EQ(p.values, (std::map<size_t, double>{{0, 4.0}, {3, 3.0}}));
  EXPECT_EQ(p.text, "w3=1.5,w0=2");
  EXPECT_FALSE(p.empty());
}

TEST(PerWorker, AnEmptyFlagNamesNoWorker) {
  PerWorker<double> p{"", {{1, 1.0}}};
  daemon::resolve(p, "--flag", 4, twice);
  EXPECT_TRUE(p.values.empty());
  EXPECT_TRUE(p.empty());
}

TEST(PerWorker, RefusalsNameTheFlagTheItemAndTheWorkers) {
  const auto refusal = [](const std::string& text) {
    PerWorker<double> p{text, {}};
    try {
      daemon::resolve(p, "--flag", 4, twice);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal("w4=1").find("--flag: there is no worker w4 among --workers 4"), std::string::npos);
  EXPECT_NE(refusal("x1=1").find("--flag: 'x1=1' is not WORKER=VALUE"), std::string::npos);
  EXPECT_NE(refusal("w1").find("is not WORKER=VALUE"), std::string::npos);
  EXPECT_EQ(refusal("w2=bad"), "--flag: w2=bad is bad");
}

}  // namespace
}  // namespace gossipd::testing
