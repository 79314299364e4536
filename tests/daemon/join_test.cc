// Joining a running cluster: a fifth worker joins four that are training,
// downloads the state, and enters the view at an announced round without
// stalling anyone; a joiner the cluster cannot take is refused in one line.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/support/cluster.h"
#include "tests/support/http_client.h"
#include "tests/support/records.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// epoch -> test accuracy, from a --metrics-out file (one record per epoch).
// SIGTERM to processes 0..last of `c` but the one already killed, each
// waited for.
void stop_all_but(Cluster& c, int last, int killed) {
  for (int i = 0; i <= last; ++i) {
    if (i != killed) c.proc(i).signal(SIGTERM);
  }
  for (int i = 0; i <= last; ++i) {
    if (i != killed) {
      EXPECT_TRUE(c.proc(i).wait(15s)) << "w" << i;
    }
  }
}

std::map<int, double> accuracies(const std::string& path) {
  std::map<int, double> out;
  for (const auto& rec : read_records(path)) out[static_cast<int>(rec.epoch())] = rec.test_accuracy();
  return out;
}

class Join : public ::testing::TestWithParam<std::string> {};

TEST_P(Join, AFifthWorkerJoinsWithoutStallingTheOthers) {
  TempDir dir("gossipd_join");
  std::vector<std::string> args{"--epochs", "1000",
                                "--quiet",  "--threads",
                                "1",        "--train-limit",
                                "8000",     "--test-limit",
                                "1000",     "--batch",
                                "32",       "--heartbeat-ms",
                                "100",      "--failure-timeout-ms",
                                "1500",     "--segment-deadline-ms",
                                "1000",     "--algo"};
  std::istringstream words(GetParam());
  for (std::string w; words >> w;) args.push_back(w);
  Cluster c(4, args, [&](int i) {
    return std::vector<std::string>{"--metrics-out", dir.file(Cluster::id(i))};
  });
  std::vector<uint16_t> ports;
  for (int i = 0; i < 4; ++i) {
    ports.push_back(c.http_port(i));
    ASSERT_GT(ports.back(), 0) << c.proc(i).err();
  }
  // Two epochs in, so that accuracy is past its first steep climb.
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(wait_until([&] { return accuracies(dir.file(Cluster::id(i))).count(2) > 0; }, 60s))
        << "worker " << i << " never finished two epochs: " << c.proc(i).err();
  }

  std::vector<std::string> joiner_args = args;
  joiner_args.insert(joiner_args.end(), {"--metrics-out", dir.file("w4")});
  // Each old member's round as the joiner starts.
  std::vector<uint64_t> launch_round(4);
  for (int i = 0; i < 4; ++i) launch_round[i] = fetch_status(ports[i]).round();
  const auto launched = Clock::now();
  const int j = c.join("w4", 1, joiner_args);
  const uint16_t joiner_port = c.http_port(j);
  ASSERT_GT(joiner_port, 0) << c.proc(j).err();

  // Watch every old member's round until all five list five members and
  // the joiner has evaluated once (60 s: a guard against a hang, not a
  // bound). The time to the listing and the longest an old member went
  // without a round are measured and printed below, not asserted: a slow
  // machine makes both longer without anything being wrong.
  std::vector<uint64_t> last_round(4, 0);
  std::vector<Clock::time_point> last_change(4, Clock::now());
  std::vector<Clock::duration> worst_gap(4, Clock::duration::zero());
  std::optional<Clock::duration> all_listed_after;
  std::vector<uint64_t> listed_round(4, 0);  // each old member's round when all five listed five
  bool joiner_evaluated = false;
  const auto deadline = Clock::now() + 60s;
  while (Clock::now() < deadline && !(joiner_evaluated && all_listed_after)) {
    bool all_five = true;
    std::vector<uint64_t> round(4);
    for (int i = 0; i < 4; ++i) {
      const proto::Status s = fetch_status(ports[i]);
      const auto now = Clock::now();
      round[i] = s.round();
      if (round[i] != last_round[i]) {
        last_round[i] = round[i];
        last_change[i] = now;
      }
      worst_gap[i] = std::max(worst_gap[i], now - last_change[i]);
      all_five = all_five && s.members_size() == 5;
    }
    all_five = all_five && fetch_status(joiner_port).members_size() == 5;
    if (all_five && !all_listed_after) {
      all_listed_after = Clock::now() - launched;
      listed_round = round;
    }
    joiner_evaluated = !accuracies(dir.file("w4")).empty();
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(all_listed_after) << "not every worker lists five members: " << c.proc(j).err();
  ASSERT_TRUE(joiner_evaluated) << c.proc(j).err();
  // Nobody stalled for the joiner, in events rather than a clock: the
  // joiner entered at a round its contact announced ahead, past the
  // snapshot it downloaded; every old member made rounds of its own through
  // the join, and listed the joiner only once it had reached that round
  // (the view changes at the announced round, which the old members reach
  // at their own pace, not once the joiner is there).
  const proto::JoinRecord entry = fetch_status(joiner_port).joined();
  const uint64_t since = entry.since_round();
  EXPECT_GT(since, entry.state_step()) << entry.DebugString();
  for (int i = 0; i < 4; ++i) {
    EXPECT_GT(listed_round[i], launch_round[i]) << "worker " << i << " made no round during the join";
    EXPECT_GE(listed_round[i] + 1, since) << "worker " << i << " listed the joiner before its entry round";
  }

  // The model the joiner downloaded, evaluated before it entered, against each old member's last evaluation
  // at or before the round of the snapshot. A model taken between two SGD steps mid-epoch is noisier than one
  // at an epoch's end (measured 0.7940 for AllReduce against 0.8300 at the epoch before), hence 10 points; a
  // model with random weights is at ~0.10.
  std::smatch dl;
  const std::string joiner_out = c.proc(j).out();
  ASSERT_TRUE(std::regex_search(joiner_out, dl,
                                std::regex("downloaded the state at round ([0-9]+): test accuracy "
                                           "([0-9.]+)")))
      << joiner_out;
  const uint64_t snapshot_round = std::stoull(dl[1]);
  const double downloaded = std::stod(dl[2]);
  double lowest_before = 1;
  for (int i = 0; i < 4; ++i) {
    double last = 0;
    for (const auto& rec : read_records(dir.file(Cluster::id(i)))) {
      if (rec.round() <= snapshot_round) last = rec.test_accuracy();
    }
    lowest_before = std::min(lowest_before, last);
  }
  EXPECT_GE(downloaded, lowest_before - 0.10) << "the downloaded model (round " << snapshot_round
                                              << ") vs the old members' last evaluations before it";

  // The joiner's first evaluation against the others' at the same epoch.
  const auto joiner = accuracies(dir.file("w4"));
  const auto epoch = joiner.begin()->first;  // not a structured binding: clang 14 cannot capture one
  const auto acc = joiner.begin()->second;
  double sum = 0, lowest = 1;
  std::string each;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(wait_until([&] { return accuracies(dir.file(Cluster::id(i))).count(epoch) > 0; }, 30s));
    const double a = accuracies(dir.file(Cluster::id(i))).at(epoch);
    sum += a;
    lowest = std::min(lowest, a);
    each.append(i ? " " : "").append(std::to_string(a).substr(0, 6));
  }
  const double others = sum / 4;
  // Old members' own replicas differ by up to ~2 points at one epoch (measured: 0.8130-0.8360 in one run), so
  // the joiner is held to the band of the members it joined, not to their mean: no worse than the weakest of
  // them by more than 2 points. A joiner that started from random weights passes this one too (gossip mixes
  // it in within an epoch: measured 0.8100 vs 0.8220-0.8390): the downloaded-model check above is the one
  // that tells them apart.
  EXPECT_GE(acc, lowest - 0.02) << "joiner's first evaluation (epoch " << epoch << ") vs the old members' ("
                                << each << ")";
  EXPECT_GT(epoch, 2) << "the joiner continues the cluster's epochs, not from zero";
  Clock::duration worst = *std::max_element(worst_gap.begin(), worst_gap.end());
  std::string through;  // each old member's rounds from the launch to the listing
  for (int i = 0; i < 4; ++i)
    through.append(i ? " " : "").append(std::to_string(listed_round[i] - launch_round[i]));
  std::printf(
      "[ measured ] %s: all five listed %lld ms after launch; longest round gap of an old member %lld ms; "
      "snapshot at round %llu, entered at %llu; old members' rounds from launch to listing %s; "
      "downloaded model %.4f (old members before it >= %.4f); "
      "joiner's first evaluation (epoch %d) %.4f vs the others' %.4f (%s)\n",
      GetParam().c_str(),
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(*all_listed_after).count()),
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(worst).count()),
      static_cast<unsigned long long>(entry.state_step()), static_cast<unsigned long long>(since),
      through.c_str(), downloaded, lowest_before, epoch, acc, others, each.c_str());
  EXPECT_NE(c.proc(j).out().find("joined through w1"), std::string::npos) << c.proc(j).out();
  // The state came in shares from several members at once (up to
  // --join-donors 4; SGP's as many as its segments allow), w1's first,
  // each from its own donor but those a donor done with its own took over
  // (not SGP's: its shares split mass).
  const proto::JoinRecord joined = fetch_status(joiner_port).joined();
  ASSERT_GE(joined.donors_size(), 2) << joined.DebugString();
  if (joined.shares_taken_over() == 0) {
    EXPECT_EQ(joined.donors(0), "w1") << joined.DebugString();
  }
  if (GetParam() == "sgp") {
    EXPECT_EQ(joined.shares_taken_over(), 0u) << joined.DebugString();
  }
  EXPECT_EQ(std::set<std::string>(joined.donors().begin(), joined.donors().end()).size(),
            static_cast<size_t>(joined.donors_size()) - joined.shares_taken_over())
      << joined.DebugString();
  EXPECT_EQ(joined.shares_reasked(), 0u);
  EXPECT_EQ(joined.contact(), "w1");
  for (int i = 0; i <= j; ++i) c.proc(i).signal(SIGTERM);
  for (int i = 0; i <= j; ++i) {
    ASSERT_TRUE(c.proc(i).wait(10s));
    EXPECT_EQ(c.proc(i).exit_code(), 0) << c.proc(i).err();
  }
}

INSTANTIATE_TEST_SUITE_P(Protocols, Join, ::testing::Values("crossover", "sgp", "allreduce"));

// Crossover-SGD's shares split no mass: the share asked of a killed member
// is taken over by a donor done with its own, at once, rather than asked
// again after 10 s of silence; the join succeeds.
TEST(JoinDonors, AKilledDonorsShareIsTakenOverByADonorDoneWithItsOwn) {
  // A failure timeout longer than the join: the killed member is still in
  // the contact's table. A model of 200 K parameters: four shares (none
  // under 32 Ki floats), one asked of each member, the killed one too.
  const std::vector<std::string> args{"--algo",   "crossover",
                                      "--epochs", "1000",
                                      "--quiet",  "--train-limit",
                                      "8000",     "--test-limit",
                                      "500",      "--batch",
                                      "32",       "--threads",
                                      "1",        "--hidden",
                                      "256",      "--failure-timeout-ms",
                                      "30000",    "--segment-deadline-ms",
                                      "500"};
  Cluster c(4, args);
  for (int i = 0; i < 4; ++i) ASSERT_GT(c.http_port(i), 0) << c.proc(i).err();
  ASSERT_TRUE(wait_until([&] { return fetch_status(c.http_port(0)).round() > 20; }, 60s));
  c.proc(3).signal(SIGKILL);
  ASSERT_TRUE(c.proc(3).wait(10s));
  const int j = c.join("w9", 0, args);
  const uint16_t port = c.http_port(j);
  ASSERT_GT(port, 0) << c.proc(j).err();
  ASSERT_TRUE(wait_until([&] { return fetch_status(port).has_joined(); }, 60s)) << c.proc(j).err();
  const proto::JoinRecord joined = fetch_status(port).joined();
  ASSERT_EQ(joined.donors_size(), 4) << joined.DebugString();
  EXPECT_EQ(joined.shares_reasked(), 0u)
      << "taken over, not asked again after the stall: " << joined.DebugString();
  EXPECT_GE(joined.shares_taken_over(), 1u) << joined.DebugString();
  for (const auto& d : joined.donors()) EXPECT_NE(d, "w3") << "the killed member sent nothing";
  std::printf("[ measured ] download %.0f ms with %u shares taken over, the killed member's among them\n",
              joined.download_ms(), joined.shares_taken_over());
  stop_all_but(c, j, 3);
}

// A donor that dies after the joiner asked it for a share: the share is
// asked of another member after 10 s of silence, and the join goes on from
// the shares already downloaded (not from the start).
TEST(JoinDonors, AShareWhoseDonorWasKilledIsAskedOfAnotherAndTheJoinSucceeds) {
  TempDir dir("gossipd_join");
  // A failure timeout longer than the join: the killed member is still in
  // the contact's table when the joiner asks it. SGP in eight segments: four
  // shares on segment boundaries (--join-donors 4, the default), one from
  // each member, so the killed one is asked for one.
  std::vector<std::string> args{"--algo",   "sgp",
                                "--epochs", "1000",
                                "--quiet",  "--train-limit",
                                "8000",     "--test-limit",
                                "500",      "--batch",
                                "32",       "--threads",
                                "1",        "--failure-timeout-ms",
                                "30000",    "--segment-deadline-ms",
                                "500",      "--segments",
                                "8"};
  Cluster c(4, args);
  for (int i = 0; i < 4; ++i) ASSERT_GT(c.http_port(i), 0) << c.proc(i).err();
  ASSERT_TRUE(wait_until([&] { return fetch_status(c.http_port(0)).round() > 20; }, 60s));
  c.proc(3).signal(SIGKILL);
  ASSERT_TRUE(c.proc(3).wait(10s));
  const auto launched = Clock::now();
  std::vector<std::string> joiner = args;
  joiner.insert(joiner.end(), {"--metrics-out", dir.file("w9")});
  const int j = c.join("w9", 0, joiner);
  const uint16_t port = c.http_port(j);
  ASSERT_GT(port, 0) << c.proc(j).err();
  ASSERT_TRUE(wait_until([&] { return fetch_status(port).has_joined(); }, 60s)) << c.proc(j).err();
  const proto::JoinRecord joined = fetch_status(port).joined();
  ASSERT_EQ(joined.donors_size(), 4) << joined.DebugString();
  EXPECT_EQ(joined.shares_reasked(), 1u) << joined.DebugString();
  for (const auto& d : joined.donors()) EXPECT_NE(d, "w3") << "the killed member sent nothing";
  // It trains with the cluster: its first evaluation comes.
  EXPECT_TRUE(wait_until([&] { return !accuracies(dir.file("w9")).empty(); }, 60s)) << c.proc(j).err();
  std::printf("[ measured ] joined %lld ms after launch, download %.0f ms with one share asked again\n",
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - launched).count()),
              joined.download_ms());
  stop_all_but(c, j, 3);
}

// A joiner the cluster cannot take: refused in one line (exit 2), the
// cluster keeps training without it.
struct Refusal {
  const char* name;
  std::vector<std::string> cluster_flags;  // besides the common ones
  std::vector<std::string> joiner_flags;
  std::vector<std::string> says;  // in the joiner's error
  friend void PrintTo(const Refusal& r, std::ostream* os) { *os << r.name; }
};

class JoinRefusal : public ::testing::TestWithParam<Refusal> {};

TEST_P(JoinRefusal, TheJoinerIsRefusedInOneLineAndTheClusterTrainsOn) {
  std::vector<std::string> args{"--algo",        "crossover", "--epochs",     "1000", "--quiet",
                                "--train-limit", "3000",      "--test-limit", "200"};
  args.insert(args.end(), GetParam().cluster_flags.begin(), GetParam().cluster_flags.end());
  Cluster c(2, args);
  ASSERT_GT(c.http_port(0), 0);
  ASSERT_TRUE(wait_until([&] { return fetch_status(c.http_port(0)).round() > 0; }, 60s));
  std::vector<std::string> other = args;
  other.insert(other.end(), GetParam().joiner_flags.begin(), GetParam().joiner_flags.end());
  const int j = c.join("w9", 0, other);
  ASSERT_TRUE(c.proc(j).wait(30s));
  EXPECT_EQ(c.proc(j).exit_code(), 2);
  const std::string err = c.proc(j).err();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << "one line: " << err;
  EXPECT_NE(err.find("refused"), std::string::npos) << err;
  for (const auto& says : GetParam().says) EXPECT_NE(err.find(says), std::string::npos) << err;
  // The cluster did not take it and kept training.
  const proto::Status status = fetch_status(c.http_port(0));
  EXPECT_EQ(status.members_size(), 2) << status.DebugString();
  const uint64_t before = status.round();
  EXPECT_TRUE(wait_until([&] { return fetch_status(c.http_port(0)).round() > before; }, 30s));
}

INSTANTIATE_TEST_SUITE_P(
    Reasons, JoinRefusal,
    ::testing::Values(
        Refusal{"AnotherModel", {}, {"--hidden", "32"}, {"--model and --hidden"}},
        Refusal{"AFullCluster", {"--max-members", "2"}, {}, {"the cluster is full", "--max-members 2"}}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(JoinRefused, NoMemberAtTheEndpointIsAClearError) {
  TempDir dir("gossipd_join");
  const auto r = run({bin("gossipd"), "run", "--id", "lonely", "--algo", "crossover", "--listen",
                      "ipc://" + dir.file("me.sock"), "--join", "ipc://" + dir.file("nobody.sock"),
                      "--startup-timeout-ms", "1500", "--train-limit", "1000", "--test-limit", "100"},
                     30s);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("no member answered"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gossipd::testing
