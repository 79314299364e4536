// The joiners' shares queue on its own (daemon/cluster/share_queue.h).
#include "daemon/cluster/share_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace gossipd::testing {
namespace {

daemon::ShareTransfer share(const std::string& to, uint32_t index) {
  return daemon::ShareTransfer{to, index, {}, nullptr};
}

TEST(ShareQueue, SharesComeOutInTheOrderQueuedAndNoneAfterStopOnceEmpty) {
  daemon::ShareQueue q([](const daemon::ShareTransfer&) { FAIL() << "not started: nothing is sent"; });
  q.push(share("a", 0));
  q.push(share("b", 1));
  std::stop_source stop;
  stop.request_stop();  // a stop waits for nothing, but what is queued still comes out
  auto first = q.pop(stop.get_token());
  auto second = q.pop(stop.get_token());
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->to, "a");
  EXPECT_EQ(second->index, 1u);
  EXPECT_FALSE(q.pop(stop.get_token()));
}

TEST(ShareQueue, ItsThreadSendsEveryShareQueuedBeforeItStops) {
  std::vector<std::string> sent;  // written by the queue's thread, read after stop() joined it
  daemon::ShareQueue q([&](const daemon::ShareTransfer& t) { sent.push_back(t.to); });
  q.push(share("a", 0));
  q.push(share("b", 0));
  q.start();
  q.push(share("c", 0));
  q.stop();
  EXPECT_EQ(sent, (std::vector<std::string>{"a", "b", "c"}));
}

}  // namespace
}  // namespace gossipd::testing
