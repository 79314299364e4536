// Lifeguard's local health score on its own (daemon/cluster/local_health.h).
#include "daemon/cluster/local_health.h"

#include <gtest/gtest.h>

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

TEST(LocalHealth, EachSignOfSlownessStretchesThePeriodUpToTheMaximum) {
  daemon::LocalHealth health(2);
  EXPECT_EQ(health.scale(200ms), 200ms);
  health.adjust(+1);
  EXPECT_EQ(health.scale(200ms), 400ms);
  health.adjust(+5);  // one step, however large the delta
  health.adjust(+1);  // past the maximum: stays there
  EXPECT_EQ(health.score(), 2u);
  EXPECT_EQ(health.scale(100ms), 300ms);
}

TEST(LocalHealth, AnsweredProbesBringItBackToHealthyAndNoFurther) {
  daemon::LocalHealth health(8);
  health.adjust(+1);
  health.adjust(+1);
  health.adjust(-1);
  EXPECT_EQ(health.score(), 1u);
  health.adjust(-1);
  health.adjust(-1);  // below 0: stays healthy
  EXPECT_EQ(health.score(), 0u);
  EXPECT_EQ(health.scale(150ms), 150ms);
}

TEST(LocalHealth, AMaximumOfZeroKeepsItOff) {
  daemon::LocalHealth health(0);
  health.adjust(+1);
  EXPECT_EQ(health.score(), 0u);
  EXPECT_EQ(health.scale(200ms), 200ms);
}

}  // namespace
}  // namespace gossipd::testing
