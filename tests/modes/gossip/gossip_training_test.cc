// Decentralized training across real gossipd processes: every protocol
// reaches 0.85 mean test accuracy within 3 epochs of data per worker.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/support/cluster.h"
#include "tests/support/http_client.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

// Every worker's record of its end, once each has finished its run and
// exited 0; empty (the failure reported) where one did not.
std::vector<proto::ControlRecord> finished(Cluster& c, std::chrono::seconds limit) {
  std::vector<proto::ControlRecord> ends;
  for (int i = 0; i < c.size(); ++i) {
    const bool exited = c.proc(i).wait(limit);
    const auto end = c.end_record(i);
    if (!exited || c.proc(i).exit_code() != 0 || !end || end->event() != "done") {
      ADD_FAILURE() << "worker " << i << (exited ? " failed: " : " did not finish: ") << c.proc(i).err()
                    << c.proc(i).out();
      return {};
    }
    ends.push_back(*end);
  }
  return ends;
}

class GossipTraining : public ::testing::TestWithParam<std::string> {};

// The parameter is the --algo value, optionally followed by extra flags.
TEST_P(GossipTraining, FourWorkersReachEightyFivePercentInThreeEpochs) {
  std::vector<std::string> args{"--epochs", "3", "--quiet", "--threads", "1", "--algo"};
  std::istringstream words(GetParam());
  for (std::string w; words >> w;) args.push_back(w);
  Cluster c(4, args);
  const auto ends = finished(c, 300s);
  ASSERT_EQ(ends.size(), 4u);
  double sum = 0;
  for (const auto& end : ends) {
    EXPECT_EQ(end.round(), 3u * (60000 / 4 / 64));  // every member made the same rounds
    sum += end.status().test_accuracy();
  }
  EXPECT_GE(sum / c.size(), 0.85) << GetParam() << " mean test accuracy " << sum / c.size();
}

INSTANTIATE_TEST_SUITE_P(Protocols, GossipTraining,
                         ::testing::Values("crossover", "crossover --overlap", "crossover --pace", "sgp",
                                           "osgp", "allreduce"));

// Hierarchical Crossover across processes: 6 workers in 2 groups (--group),
// with the inter-group exchange spread over the members or through a root.
class Hierarchical : public ::testing::TestWithParam<std::string> {};

TEST_P(Hierarchical, SixWorkersInTwoGroupsHoldIdenticalReplicasPerGroup) {
  Cluster c(6,
            {"--algo", "crossover", "--hierarchical", "--group-owner", GetParam(), "--epochs", "1", "--quiet",
             "--threads", "1", "--train-limit", "6000", "--test-limit", "500", "--batch", "32"},
            [](int i) {
              return std::vector<std::string>{"--group", i < 3 ? "a" : "b"};
            });
  const auto ends = finished(c, 120s);
  ASSERT_EQ(ends.size(), 6u);
  for (int i : {1, 2}) EXPECT_EQ(ends[i].param_hash(), ends[0].param_hash()) << "group a, worker " << i;
  for (int i : {4, 5}) EXPECT_EQ(ends[i].param_hash(), ends[3].param_hash()) << "group b, worker " << i;
}

INSTANTIATE_TEST_SUITE_P(GroupOwners, Hierarchical, ::testing::Values("spread", "root"));

// A group member SIGKILLed mid-run: its group mate's collectives in flight
// stop when membership evicts it (or time out), that round is skipped, and
// every survivor trains on to the planned round in a view of three, the
// group that lost a member now one of one.
TEST(Hierarchical, SurvivorsOfAKilledGroupMemberTrainOnToThePlannedRound) {
  Cluster c(4,
            {"--algo", "crossover", "--hierarchical", "--epochs", "20", "--quiet", "--threads", "1",
             "--train-limit", "3000", "--test-limit", "300", "--batch", "32", "--heartbeat-ms", "100",
             "--failure-timeout-ms", "1500"},
            [](int i) {
              return std::vector<std::string>{"--group", i % 2 ? "b" : "a"};
            });
  for (int i = 0; i < c.size(); ++i) {
    const uint16_t port = c.http_port(i);
    ASSERT_GT(port, 0);
    ASSERT_TRUE(wait_until([&] { return fetch_status(port).round() > 0; }, 60s)) << "worker " << i;
  }
  c.proc(3).signal(SIGKILL);
  for (int i : {0, 1, 2}) {
    ASSERT_TRUE(c.proc(i).wait(400s)) << "survivor " << i << " hangs: " << c.proc(i).err();
    EXPECT_EQ(c.proc(i).exit_code(), 0) << c.proc(i).err();
    const auto end = c.end_record(i);
    ASSERT_TRUE(end && end->event() == "done") << c.proc(i).out();
    EXPECT_EQ(end->round(), 20u * (3000 / 4 / 32)) << "worker " << i;
    EXPECT_EQ(end->status().members_size(), 3) << end->status().DebugString();
  }
}

// A group's exact average is no segment: it cannot be skipped at the
// segment deadline. Groups {w0, w2} and {w1, w3} across two regions 100 ms
// apart (each average waits on that link; the segments between groups stay
// inside a region), with a 50 ms segment deadline: every member finishes,
// each group holding identical replicas. (A segment between groups may
// still be skipped where its sender runs late on a loaded machine: that is
// the deadline doing its work, not the group's average cut short.)
TEST(Hierarchical, AGroupsAverageOutlastsTheSegmentDeadline) {
  TempDir dir("slow_groups");
  const std::string wan = dir.file("wan.txt");
  std::ofstream(wan) << "region x w0-w1\nregion y w2-w3\ninside delay 1\nbetween delay 100\n";
  Cluster c(
      4,
      {"--algo", "crossover", "--hierarchical", "--wan", wan, "--segment-deadline-ms", "50", "--epochs", "1",
       "--quiet", "--threads", "1", "--train-limit", "2000", "--test-limit", "200", "--batch", "32"},
      [](int i) {
        return std::vector<std::string>{"--group", i % 2 == 0 ? "a" : "b"};
      });
  const auto ends = finished(c, 120s);
  ASSERT_EQ(ends.size(), 4u);
  EXPECT_EQ(ends[2].param_hash(), ends[0].param_hash()) << "group a";
  EXPECT_EQ(ends[3].param_hash(), ends[1].param_hash()) << "group b";
}

// --group auto: the groups follow the network. Six workers on a WAN of two
// regions (gossipd run --wan: 1 ms one way inside a region, 30 ms between)
// measure their round trips; each region becomes a group named after its
// lowest id, whose members hold identical replicas at the end, as the
// groups given by hand above do.
TEST(AutoGroups, SixWorkersOnTwoRegionsFormAGroupARegion) {
  TempDir dir("auto_groups");
  const std::string wan = dir.file("wan.txt");
  std::ofstream(wan) << "region a w0-w2\nregion b w3-w5\ninside delay 1\nbetween delay 30\n";
  Cluster c(6,
            {"--algo", "crossover", "--hierarchical", "--group", "auto", "--wan", wan, "--epochs", "1",
             "--quiet", "--threads", "1", "--train-limit", "6000", "--test-limit", "500", "--batch", "32"});
  const auto ends = finished(c, 120s);
  ASSERT_EQ(ends.size(), 6u);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(ends[i].status().group(), i < 3 ? "auto-w0" : "auto-w3") << "worker " << i;
  for (int i : {1, 2}) EXPECT_EQ(ends[i].param_hash(), ends[0].param_hash()) << "region a, worker " << i;
  for (int i : {4, 5}) EXPECT_EQ(ends[i].param_hash(), ends[3].param_hash()) << "region b, worker " << i;
}

// A joiner with --group auto measures the members it was admitted among
// and enters its region's group, named before it came, then trains in it.
TEST(AutoGroups, AJoinerEntersItsRegionsGroup) {
  TempDir dir("auto_join");
  const std::string wan = dir.file("wan.txt");
  std::ofstream(wan) << "region a w0-w1\nregion b w2-w4\ninside delay 1\nbetween delay 30\n";
  const std::vector<std::string> args{
      "--algo",       "crossover", "--hierarchical", "--group",   "auto", "--wan",         wan,
      "--epochs",     "1000",      "--quiet",        "--threads", "1",    "--train-limit", "2000",
      "--test-limit", "200",       "--batch",        "32"};
  Cluster c(4, args);
  const uint16_t port = c.http_port(0);
  ASSERT_GT(port, 0) << c.proc(0).err();
  ASSERT_TRUE(wait_until([&] { return fetch_status(port).round() > 0; }, 60s)) << c.proc(0).err();
  const int j = c.join("w4", 0, args);
  const uint16_t joiner = c.http_port(j);
  ASSERT_GT(joiner, 0) << c.proc(j).err();
  proto::Status s;
  ASSERT_TRUE(wait_until(
      [&] {
        s = fetch_status(joiner);
        return !s.group().empty() && s.state() == "training";
      },
      60s))
      << c.proc(j).err();
  // Its region's group, whichever member of the region named it: the name
  // is the lowest id the first member to decide measured within reach, and
  // a round trip slowed past --group-near-ms (sanitizers, a loaded machine:
  // w1 once named its own, and w0 took it) changes who, not the grouping.
  EXPECT_EQ(s.group(), fetch_status(c.http_port(2)).group());
  EXPECT_EQ(s.group(), fetch_status(c.http_port(3)).group());
  const uint64_t first = s.round();
  EXPECT_TRUE(wait_until([&] { return fetch_status(joiner).round() > first + 5; }, 60s))
      << "the joiner does not train on: " << c.proc(j).err();
  const std::string a = fetch_status(port).group();
  EXPECT_EQ(a, fetch_status(c.http_port(1)).group()) << "region a is one group";
  EXPECT_NE(a, s.group()) << "the two regions are two groups";
  EXPECT_TRUE(a == "auto-w0" || a == "auto-w1") << a;
  EXPECT_TRUE(s.group() == "auto-w2" || s.group() == "auto-w3") << s.group();
}

TEST(GossipStatus, CrossoverReportsSegmentsBytesAndConsensus) {
  Cluster c(3, {"--algo", "crossover", "--epochs", "1000", "--quiet", "--train-limit", "3000", "--test-limit",
                "500", "--batch", "32", "--consensus-every", "5"});
  const uint16_t port = c.http_port(0);
  ASSERT_GT(port, 0);
  // Consensus distance: measured (round > 0), positive (replicas train on
  // different shards) and finite; by then segments went both ways.
  proto::Status status;
  ASSERT_TRUE(wait_until(
      [&] {
        status = fetch_status(port);
        return status.consensus_round() > 0 && status.bytes_received() > 0;
      },
      60s))
      << status.DebugString();
  EXPECT_EQ(status.algo(), "crossover");
  EXPECT_GT(status.bytes_sent(), 0u);
  EXPECT_GT(status.consensus_distance(), 0.0);
  EXPECT_LT(status.consensus_distance(), 1e6);
  // /metrics after the measurement: the same figures, as Prometheus series.
  const MetricsText metrics = fetch_metrics(port);
  EXPECT_GE(metrics.value("gossipd_segments_skipped_total").value_or(-1), 0) << metrics;
  EXPECT_GT(metrics.value("gossipd_gossip_bytes_sent_total").value_or(0), 0) << metrics;
  const double d = metrics.value("gossipd_consensus_distance").value_or(0);
  EXPECT_GT(d, 0.0) << metrics;
  EXPECT_LT(d, 1e6) << metrics;
}

// Static peers whose models differ cannot average anything: every member
// says which one differs and how, and exits with the usage code.
class LayoutMismatch : public ::testing::TestWithParam<std::string> {};

TEST_P(LayoutMismatch, MembersWhoseModelsDifferExitNamingTheOther) {
  Cluster c(2, {"--algo", GetParam(), "--epochs", "1", "--quiet", "--threads", "1", "--train-limit", "600"},
            [](int i) {
              return i == 1 ? std::vector<std::string>{"--hidden", "17"} : std::vector<std::string>{};
            });
  for (int i = 0; i < c.size(); ++i) {
    ASSERT_TRUE(c.proc(i).wait(60s)) << "worker " << i << " trained on";
    EXPECT_EQ(c.proc(i).exit_code(), 2) << c.proc(i).err();
    const std::string other = Cluster::id(1 - i);
    EXPECT_NE(c.proc(i).err().find("member '" + other + "' trains a model of another layout"),
              std::string::npos)
        << c.proc(i).err();
  }
}

INSTANTIATE_TEST_SUITE_P(Protocols, LayoutMismatch, ::testing::Values("crossover", "allreduce"));

TEST(GossipFlags, BadGossipFlagsAreOneLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--algo", "crossover", "--segments", "lots"}, "--segments 'lots'"},
      {{"--algo", "crossover", "--segments", "0"}, "--segments '0'"},
      {{"--algo", "sgp", "--overlap"}, "--algo osgp"},
      {{"--algo", "sgp", "--hierarchical"}, "--hierarchical is for --algo crossover"},
      {{"--algo", "osgp", "--pace"}, "--pace is for flat --algo crossover and sgp"},
      {{"--algo", "crossover", "--hierarchical", "--group", "g0", "--pace"},
       "--pace is for flat --algo crossover"},
      {{"--join", "tcp://h:1", "--peers", "w1=tcp://h:2"}, "--join and --peers are alternatives"},
      {{"--listen", "tcp://0.0.0.0:7000", "--join", "tcp://h:1"}, "say with --advertise"},
      {{"--listen", "localhost:7000"}, "--listen 'localhost:7000' is not an endpoint"},
      {{"--listen", "inproc-hub://w0"}, "names a member in this process"},
      {{"--peers", "w1=nowhere"}, "--peers w1 'nowhere' is not an endpoint"},
      {{"--algo", "crossover", "--inject-byzantine", "signflip"}, "'signflip' is not an attack"},
      {{"--algo", "crossover", "--inject-byzantine", "scaled:-3"}, "'-3' is not a number above 0"},
      {{"--algo", "crossover", "--inject-byzantine", "stale:2"}, "stale takes no value"},
      {{"--algo", "crossover", "--robust", "krum"}, "--robust 'krum' is not a defence"},
      {{"--algo", "crossover", "--robust", "clip:0"}, "--robust 'clip:0': '0' is not a number above 0"},
      {{"--algo", "grid", "--grid", "1x1", "--robust", "clip"}, "--robust is for --algo"},
      {{"--algo", "crossover", "--evict-byzantine"}, "--evict-byzantine evicts the members --robust names"},
      {{"--algo", "allreduce", "--evict-byzantine"}, "--evict-byzantine evicts the members --robust names"},
      {{"--algo", "sgp", "--robust", "clip", "--evict-byzantine", "--evict-quorum", "0"}, "--evict-quorum 0"},
      {{"--algo", "allreduce", "--evict-quorum", "3"}, "--evict-quorum without --evict-byzantine"},
      {{"--algo", "grid", "--grid", "1x1", "--evict-byzantine"}, "--evict-byzantine is for --algo"},
      {{"--algo", "allreduce", "--robust", "clip", "--local-steps", "4"}, "--robust with --local-steps"},
      {{"--algo", "allreduce", "--robust", "clip", "--compress", "int8"}, "--robust with --compress"},
      {{"--algo", "grid", "--grid", "1x1", "--inject-byzantine", "scaled"},
       "--inject-byzantine is for --algo"},
      {{"--algo", "allreduce", "--local-steps", "4", "--inject-byzantine", "scaled"},
       "--inject-byzantine with --local-steps"},
      {{"--algo", "crossover", "--hierarchical", "--group", "g0", "--robust", "clip", "--compress", "int8"},
       "--robust with --hierarchical and --compress"},
      {{"--algo", "crossover", "--hierarchical", "--group", "g0", "--robust", "clip", "--group-owner",
        "root"},
       "--group-owner root with --robust"},
      {{"--algo", "allreduce", "--inject-byzantine", "dissensus"},
       "--inject-byzantine dissensus: allreduce's members receive no one's copy"},
      {{"--algo", "crossover", "--inject-byzantine", "label_flip:2"}, "label_flip takes no value"},
      {{"--algo", "crossover", "--max-message-bytes", "65536"},
       "--max-message-bytes 65536 is too small for segment 0"},
      {{"--peers", "w1=tcp://h:0"}, "--peers w1 'tcp://h:0' is not an endpoint: port 0 can only be bound"},
      {{"--max-queued-bytes", "2000000", "--max-message-bytes", "4000000"},
       "--max-queued-bytes 2000000 is below"},
      {{"--max-members", "1"}, "--max-members"},
      {{"--send-buffer-kb", "2"}, "--send-buffer-kb"},
      {{"--http", "8080"}, "--http '8080' is not IP:PORT"},
      {{"--params-out", "/nonexistent/dir/p.bin"}, "directory /nonexistent/dir does not exist"},
  };
  for (const auto& [flags, needle] : cases) {
    std::vector<std::string> argv{bin("gossipd"),  "run", "--id",         "w0",
                                  "--train-limit", "100", "--test-limit", "10"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    RunResult r = run(argv, 30s);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    // --check-config finds the same problem without starting anything.
    argv.push_back("--check-config");
    RunResult c = run(argv, 30s);
    EXPECT_EQ(c.exit_code, 2) << needle << ": " << c.err;
    EXPECT_NE(c.err.find(needle), std::string::npos) << c.err;
  }
  RunResult ok = run({bin("gossipd"), "run", "--id", "w0", "--algo", "crossover", "--listen",
                      "tcp://0.0.0.0:7000", "--advertise", "tcp://10.0.0.1:7000", "--join",
                      "tcp://10.0.0.2:7000", "--send-buffer-kb", "62", "--check-config"},
                     30s);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("configuration OK"), std::string::npos) << ok.out;
}

}  // namespace
}  // namespace gossipd::testing
