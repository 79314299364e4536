// Process::threads(): what a hung child's failure message shows.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>

#include "tests/support/process.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

TEST(ProcessThreads, NamesWhereALiveChildWaitsAndSaysWhenItHasExited) {
  Process sleeper({"/bin/sleep", "60"});
  const std::string where = sleeper.threads();
  // gdb's stacks name clock_nanosleep; /proc names the thread "sleep".
  EXPECT_NE(where.find("sleep"), std::string::npos) << where;
  sleeper.signal(SIGKILL);
  ASSERT_TRUE(sleeper.wait(10s));
  EXPECT_EQ(sleeper.threads(), "(it has exited)");
}

}  // namespace
}  // namespace gossipd::testing
