// ChangeSignal: what the daemon's loops wait on instead of sleeping and
// looking again (a view, labels, a peer's note).
#include "protocol/transport/change_signal.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace gossipd::protocol {
namespace {

using namespace std::chrono_literals;
using Clock = ChangeSignal::Clock;

TEST(ChangeSignal, AWaiterWakesOnTheChangeThatMakesItsConditionHold) {
  ChangeSignal signal;
  std::atomic<int> value{0};
  std::atomic<int> looks{0};
  std::jthread changer([&] {
    for (int i = 1; i <= 3; ++i) {
      // Each change is made only once the waiter has looked at the last one:
      // every change is seen, none is waited out.
      while (looks.load() < i) std::this_thread::yield();
      value = i;
      signal.notify();
    }
  });
  const bool held = signal.wait_until(
      [&] {
        ++looks;
        return value.load() == 3;
      },
      Clock::now() + 60s);
  EXPECT_TRUE(held);
  EXPECT_EQ(value.load(), 3);
  EXPECT_GE(signal.generation(), 3u);
}

TEST(ChangeSignal, AConditionThatAlreadyHoldsReturnsWithoutAChange) {
  ChangeSignal signal;
  EXPECT_TRUE(signal.wait_until([] { return true; }, Clock::now() + 60s));
  EXPECT_EQ(signal.generation(), 0u);
}

TEST(ChangeSignal, TheDeadlineEndsTheWaitWhenNothingChanges) {
  ChangeSignal signal;
  int looks = 0;
  EXPECT_FALSE(signal.wait_until(
      [&] {
        ++looks;
        return false;
      },
      Clock::now() + 20ms));
  EXPECT_EQ(looks, 2);  // once before the wait, once at its deadline: no polling between
}

TEST(ChangeSignal, AStopRequestEndsTheWait) {
  ChangeSignal signal;
  std::stop_source stop;
  std::atomic<bool> looked{false};
  std::jthread stopper([&] {
    while (!looked.load()) std::this_thread::yield();  // the waiter has looked once
    stop.request_stop();
  });
  EXPECT_FALSE(signal.wait_until(
      [&] {
        looked = true;
        return false;
      },
      Clock::now() + 24h, stop.get_token()));
  EXPECT_TRUE(stop.stop_requested());
}

}  // namespace
}  // namespace gossipd::protocol
