// Failure detection and graceful leave in a running gossip cluster.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>

#include "daemon/cluster/membership.h"
#include "tests/support/cluster.h"
#include "tests/support/http_client.h"
#include "tests/support/wait.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::vector<std::string> kGossip{"--algo",         "crossover", "--epochs", "1000", "--quiet",
                                       "--train-limit",  "5000",      "--test-limit", "200", "--batch",
                                       "32",             "--segment-deadline-ms", "400", "--heartbeat-ms",
                                       "100",            "--failure-timeout-ms", "1500"};

bool lists(const proto::Status& status, const std::string& id) {
  return std::find(status.members().begin(), status.members().end(), id) != status.members().end();
}

TEST(DepartedSet, RemembersWhichIncarnationLeftAndForgetsTheOldestPastItsCapacity) {
  daemon::DepartedSet gone(3);
  gone.record("a", 5);
  EXPECT_TRUE(gone.left("a", 5));
  EXPECT_TRUE(gone.left("a", 2));    // an older incarnation: gone too
  EXPECT_FALSE(gone.left("a", 6));   // it rejoined later: welcome
  EXPECT_FALSE(gone.left("b", 0));
  gone.record("b", 1);
  gone.record("c", 1);
  gone.record("a", 9);  // "a" left again: now the newest record
  gone.record("d", 1);  // past the capacity: "b", recorded longest ago, goes
  EXPECT_EQ(gone.size(), 3u);
  EXPECT_FALSE(gone.left("b", 1));
  EXPECT_TRUE(gone.left("a", 9));
  EXPECT_TRUE(gone.left("c", 1));
  EXPECT_TRUE(gone.left("d", 1));
  for (int i = 0; i < 1000; ++i) gone.record("churn-" + std::to_string(i), 1);  // fresh ids under churn
  EXPECT_EQ(gone.size(), 3u);
  EXPECT_TRUE(gone.left("churn-999", 1));
  EXPECT_FALSE(gone.left("churn-996", 1));
}

class FiveWorkers : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = std::make_unique<Cluster>(5, kGossip);
    for (int i = 0; i < 5; ++i) {
      ports_.push_back(cluster_->http_port(i));
      ASSERT_GT(ports_.back(), 0) << cluster_->proc(i).err();
    }
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(wait_until([&] { return fetch_status(ports_[i]).round() > 0; }, 60s))
          << "worker " << i << " never trained";
    }
  }

  // Waits until every worker in `live` no longer lists `gone`; returns how long it took.
  Clock::duration until_dropped(const std::vector<int>& live, const std::string& gone, Clock::duration limit) {
    const auto start = Clock::now();
    EXPECT_TRUE(wait_until(
        [&] {
          for (int i : live) {
            if (lists(fetch_status(ports_[i]), gone)) return false;
          }
          return true;
        },
        std::chrono::duration_cast<std::chrono::milliseconds>(limit)))
        << gone << " still listed";
    return Clock::now() - start;
  }

  std::unique_ptr<Cluster> cluster_;
  std::vector<uint16_t> ports_;
};

TEST_F(FiveWorkers, ASigkilledMemberIsEvictedAndTheRestKeepTraining) {
  cluster_->proc(4).signal(SIGKILL);
  const auto took = until_dropped({0, 1, 2, 3}, "w4", 10s);
  // Failure timeout 1.5 s, heartbeats every 0.1 s: evicted within 2.5 s.
  EXPECT_LE(took, 2500ms);
  EXPECT_EQ(fetch_status(ports_[0]).view_changes(), 1u);
  // Rounds advance after the eviction, on every survivor.
  for (int i = 0; i < 4; ++i) {
    const uint64_t before = fetch_status(ports_[i]).round();
    EXPECT_TRUE(wait_until([&] { return fetch_status(ports_[i]).round() >= before + 20; }, 30s))
        << "worker " << i << " stalled at round " << before;
  }
  const MetricsText metrics = fetch_metrics(ports_[0]);
  EXPECT_EQ(metrics.value("gossipd_members"), 4) << metrics;
  EXPECT_EQ(metrics.value("gossipd_members_evicted_total"), 1) << metrics;
}

TEST_F(FiveWorkers, ASigtermedMemberIsDroppedInUnderASecond) {
  cluster_->proc(3).signal(SIGTERM);
  const auto took = until_dropped({0, 1, 2, 4}, "w3", 5s);
  EXPECT_LT(took, 1s);
  ASSERT_TRUE(cluster_->proc(3).wait(5s));
  EXPECT_EQ(cluster_->proc(3).exit_code(), 0) << cluster_->proc(3).err();
  EXPECT_EQ(fetch_metrics(ports_[0]).value("gossipd_members_evicted_total"), 0)
      << "a graceful leave is not an eviction";
}

TEST_F(FiveWorkers, ARestartedMemberRejoinsUnderItsOwnId) {
  // Killed and restarted before the failure timeout: the contact sees its
  // HELLO, drops the old incarnation and admits the new one.
  cluster_->proc(4).signal(SIGKILL);
  ASSERT_TRUE(cluster_->proc(4).wait(5s));
  std::vector<std::string> args = kGossip;
  const int j = cluster_->join("w4", 0, args);
  const uint16_t port = cluster_->http_port(j);
  ASSERT_GT(port, 0) << cluster_->proc(j).err();
  ASSERT_TRUE(wait_until(
      [&] {
        const proto::Status s = fetch_status(port);
        return s.state() == "training" && s.round() > 0;
      },
      30s))
      << cluster_->proc(j).err();
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(wait_until([&] { return lists(fetch_status(ports_[i]), "w4"); }, 10s)) << "worker " << i;
  }
  // The new incarnation trains with the others: its round keeps advancing.
  const uint64_t before = fetch_status(port).round();
  EXPECT_TRUE(wait_until([&] { return fetch_status(port).round() >= before + 20; }, 30s));
  EXPECT_NE(cluster_->proc(j).out().find("joined through w0"), std::string::npos) << cluster_->proc(j).out();
  const std::string contact = cluster_->proc(0).out();
  std::printf("[ measured ] the contact %s\n",
              contact.find("asks to join again") != std::string::npos ? "replaced the old incarnation"
                                                                       : "had evicted the old incarnation first");
}

}  // namespace
}  // namespace gossipd::testing
