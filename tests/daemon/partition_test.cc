// A partition of 8 network-namespace hosts into 4 + 4 (each half's routes
// to the other blackholed): each half evicts the other and trains on; when
// the routes come back the halves find each other (REUNION), one part goes
// on and the other's members join it again, each downloading its state:
// one view, and no part trains on as if it were the cluster.
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <set>
#include <thread>

#include "daemon/ctl/compare_hosts.h"
#include "daemon/observe/http_client.h"
#include "tests/support/process.h"
#include "tests/support/records.h"
#include "tests/support/wait.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
constexpr int kHosts = 8;
constexpr int kFailureTimeoutMs = 3000;  // the default: a heal's load on 2 cores needs time to refute in

proto::Status status_at(const std::string& host) {
  const std::string body = daemon::http_get(host, 8100, "/status");
  return body.empty() ? proto::Status{} : parse_json<proto::Status>(body);
}

// Blackholes (or, with `heal`, restores) the routes between the halves.
void cut(const daemon::NetnsHosts& hosts, bool heal) {
  for (int i = 0; i < kHosts; ++i) {
    for (int j = 0; j < kHosts; ++j) {
      if ((i < kHosts / 2) == (j < kHosts / 2)) continue;
      const auto r = run({hosts.ip(), "-n", hosts.netns(i), "route", heal ? "del" : "add", "blackhole",
                          hosts.address(j) + "/32"},
                         10s);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
  }
}

TEST(Partition, FourAndFourHostsCutFor10sHealIntoOneView) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  daemon::NetnsHosts hosts(kHosts, "");
  std::string peers;
  for (int i = 0; i < kHosts; ++i) {
    peers += (i ? "," : "") + std::string("w") + std::to_string(i) + "=tcp://" + hosts.address(i) + ":7100";
  }
  std::vector<std::unique_ptr<Process>> procs;
  for (int i = 0; i < kHosts; ++i) {
    procs.push_back(std::make_unique<Process>(std::vector<std::string>{hosts.ip(),
                                                                       "netns",
                                                                       "exec",
                                                                       hosts.netns(i),
                                                                       bin("gossipd"),
                                                                       "run",
                                                                       "--id",
                                                                       "w" + std::to_string(i),
                                                                       "--listen",
                                                                       "tcp://" + hosts.address(i) + ":7100",
                                                                       "--peers",
                                                                       peers,
                                                                       "--http",
                                                                       hosts.address(i) + ":8100",
                                                                       "--algo",
                                                                       "crossover",
                                                                       "--epochs",
                                                                       "1000",
                                                                       "--train-limit",
                                                                       "8000",
                                                                       "--test-limit",
                                                                       "200",
                                                                       "--batch",
                                                                       "32",
                                                                       "--threads",
                                                                       "1",
                                                                       "--quiet",
                                                                       "--heartbeat-ms",
                                                                       "100",
                                                                       "--failure-timeout-ms",
                                                                       std::to_string(kFailureTimeoutMs),
                                                                       "--segment-deadline-ms",
                                                                       "500"}));
  }
  for (int i = 0; i < kHosts; ++i) {
    ASSERT_TRUE(wait_until([&] { return status_at(hosts.address(i)).round() > 5; }, 60s))
        << "w" << i << " never trained: " << procs[i]->err();
  }

  cut(hosts, false);
  const auto cut_at = Clock::now();
  for (int i = 0; i < kHosts; ++i) {
    ASSERT_TRUE(wait_until([&] { return status_at(hosts.address(i)).members_size() == kHosts / 2; }, 30s))
        << "w" << i << " never evicted the other half";
  }
  // Both halves train on while cut off from each other, for the partition's 10 s.
  const uint64_t w4_round = status_at(hosts.address(4)).round();
  std::this_thread::sleep_until(cut_at +
                                10s);  // the partition's length: the scenario, not a wait for an event
  EXPECT_GT(status_at(hosts.address(4)).round(), w4_round) << "the other half trains on meanwhile";

  cut(hosts, true);
  const auto healed_at = Clock::now();
  // w0..w3 hold the lower id (4 and 4 members): w4..w7 yield, each joins
  // the part that goes on again with its state, and the halves are one
  // view within the failure timeout + 5 s.
  const bool one_view = wait_until(
      [&] {
        std::set<uint32_t> views;
        for (int i = 0; i < kHosts; ++i) {
          const proto::Status s = status_at(hosts.address(i));
          if (s.members_size() != kHosts || s.state() != "training") return false;
          views.insert(s.view_id());
        }
        return views.size() == 1;
      },
      std::chrono::milliseconds(kFailureTimeoutMs) + 5s);
  const auto healed_after = Clock::now() - healed_at;
  std::string views;  // what each member says, for a failure's message
  for (int i = 0; !one_view && i < kHosts; ++i) {
    const proto::Status st = status_at(hosts.address(i));
    views.append("\nw").append(std::to_string(i)).append(": ").append(std::to_string(st.members_size()));
    views.append(" members, ").append(st.state()).append(", view ").append(std::to_string(st.view_id()));
  }
  ASSERT_TRUE(one_view) << views << "\nw4: " << procs[4]->out();
  for (int i = 0; i < kHosts; ++i) {
    const proto::Status s = status_at(hosts.address(i));
    const bool yielded = i >= kHosts / 2;
    // A member of the part that goes on that rejoined was evicted by its
    // own part: its output says why it left (and when).
    EXPECT_EQ(s.rejoins(), yielded ? 1u : 0u) << "w" << i << ": " << procs[i]->out() << procs[i]->err();
    if (!yielded) continue;
    EXPECT_FALSE(s.joined().donors().empty()) << "w" << i << " downloaded no state";
    const std::string out = procs[i]->out();
    EXPECT_NE(out.find("met the cluster's other part after a partition"), std::string::npos) << out;
    EXPECT_NE(out.find("joins its cluster again through tcp://10.213."), std::string::npos) << out;
  }
  const uint64_t w4_after = status_at(hosts.address(4)).round();
  EXPECT_TRUE(wait_until([&] { return status_at(hosts.address(4)).round() > w4_after + 5; }, 30s))
      << "the joined halves train on";
  std::printf(
      "[ measured ] one view %lld ms after the routes came back\n",
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(healed_after).count()));
  for (int i = 0; i < kHosts; ++i) procs[i]->signal(SIGTERM);
  for (int i = 0; i < kHosts; ++i) EXPECT_TRUE(procs[i]->wait(15s)) << "w" << i;
}

}  // namespace
}  // namespace gossipd::testing
