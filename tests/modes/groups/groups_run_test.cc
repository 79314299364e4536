// gossipd run --algo groups across real processes: each compute group ends
// with one model and every group's push is applied once (duplicated and
// reordered on the wire), /status shows the shards and the staleness, one
// group is AllReduce-SGD, a dead member's group re-forms and its shards are
// seeded again while the other group goes on, under --robust clip the
// owners name a member that pushes scaled gradients, and bad counts are one
// line.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "daemon/modes/groups/groups_status.pb.h"
#include "daemon/observe/message_json.h"
#include "tests/daemon/sync_run.h"
#include "tests/support/cluster.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

const std::vector<std::string> kGroupsData{"--train-limit", "3000", "--test-limit", "500",
                                           "--batch",       "32",   "--threads",    "1"};

// For the runs that are not about failures: a member stalled past the
// failure timeout is evicted and its group goes on as two (once in CI, under
// the sanitizers); ADeadMemberLeavesItsGroupToReform is the test of that.
const std::vector<std::string> kNoEviction{"--failure-timeout-ms", "600000"};

std::vector<std::string> groups(int g, const std::vector<std::string>& more) {
  return with(with(kGroupsData, {"--algo", "groups", "--compute-groups", std::to_string(g), "--quiet"}),
              more);
}

// The groups' final records: pushes applied by every owner, repeats refused.
struct Pushes {
  uint64_t applied = 0, repeats = 0, duplicated = 0;
};
Pushes pushes(Cluster& c, int n) {
  Pushes p;
  for (int i = 0; i < n; ++i) {
    const auto end = c.end_record(i);
    if (!end) continue;
    const proto::ControlRecord& r = *end;
    p.applied += daemon::mode_status<proto::GroupsStatus>(r.status()).pushes_applied();
    p.repeats += daemon::mode_status<proto::GroupsStatus>(r.status()).pushes_duplicate();
    p.duplicated += r.faults().duplicated();
  }
  return p;
}

// No --momentum: compute groups take --momentum auto (an explicit 0.9 diverges from g = 4 on).
void each_group_ends_with_one_model(const std::vector<std::string>& extra) {
  Cluster c(4, with(with(groups(2, {"--epochs", "2", "--timeout-ms", "10000"}), kNoEviction), extra));
  const Done first = expect_identical_cells(c, 180s, {0, 1});
  const Done second = expect_identical_cells(c, 180s, {2, 3});
  EXPECT_EQ(first.rounds, 2 * (3000 / 4 / 32));  // data parallel: each worker its quarter
  EXPECT_EQ(second.rounds, first.rounds);
  EXPECT_NE(first.hash, second.hash) << "asynchronous groups ended with the same model";
  EXPECT_GT(first.accuracy, 0.6);
  EXPECT_GT(second.accuracy, 0.6);
  EXPECT_EQ(pushes(c, 4).applied, static_cast<uint64_t>(2 * first.rounds * 4))
      << "two groups, every step, four shards: each once";
  const auto end = c.end_record(0);
  ASSERT_TRUE(end.has_value());
  const auto status = daemon::mode_status<proto::GroupsStatus>(end->status());
  EXPECT_TRUE(status.momentum_auto());
  if (std::find(extra.begin(), extra.end(), "--group-overlap") != extra.end()) {
    EXPECT_GT(status.staleness_mean(), 1.5) << "an overlapped push is a step staler";
    EXPECT_NEAR(status.momentum(), 0.9 - (1 - 1.0 / 4), 1e-6) << "auto momentum: as 2g groups' asynchrony";
  }
}

TEST(GroupsRun, EachGroupEndsWithOneModelBothLearnAndEveryPushIsAppliedOnce) {
  each_group_ends_with_one_model({});
}

// --compress int8: the rings, the pushes and the answers in the codec; a
// group's members still take the same bits (protocol::CompressedRing).
TEST(GroupsRun, InInt8EachGroupEndsWithOneModelBothLearnAndEveryPushIsAppliedOnce) {
  each_group_ends_with_one_model({"--compress", "int8", "--compress-block", "64"});
}

// --group-overlap: each step's push and pull run while the group computes
// the next. Each group still ends with one model, every push is applied
// once, and the owners count the step the gradients are older: a group's
// own last push always lands between the values a gradient was computed on
// and its push (staleness at least 1; at equal speed about 2g - 1 = 3
// instead of g - 1 = 1).
TEST(GroupsRun, OverlappedEachGroupEndsWithOneModelEveryPushIsAppliedOnceAndCountedAStepStaler) {
  each_group_ends_with_one_model({"--group-overlap"});
}

// Groups of one member run no collective: every message between them is a
// push or an answer, and the injected faults duplicate and reorder those.
TEST(GroupsRun, FourGroupsOfOneApplyEveryDuplicatedOrReorderedPushOnce) {
  Cluster c(4, with(groups(4, {"--epochs", "1", "--momentum", "0", "--inject-duplicate", "0.2",
                               "--inject-reorder", "0.2", "--inject-seed", "5"}),
                    kNoEviction));
  int rounds = 0;
  for (int i = 0; i < 4; ++i) rounds = expect_identical_cells(c, 120s, {i}).rounds;
  EXPECT_EQ(rounds, 3000 / 4 / 32);
  const Pushes p = pushes(c, 4);
  EXPECT_EQ(p.applied, static_cast<uint64_t>(4 * rounds * 4))
      << "four groups, every step, four shards: each once";
  EXPECT_GT(p.duplicated, 0u);
  EXPECT_GT(p.repeats, 0u) << "no repeated push reached an owner: the test tested nothing";
}

TEST(GroupsRun, StatusShowsTheGroupTheShardsTheStalenessAndTheAutoMomentum) {
  Cluster c(4, groups(2, {"--epochs", "1000", "--momentum", "auto", "--target-momentum", "0.8"}));
  for (int i : {0, 2}) {
    const uint16_t port = c.http_port(i);
    ASSERT_GT(port, 0) << c.proc(i).err();
    proto::Status s;
    ASSERT_TRUE(wait_until(
        [&] {
          s = fetch_status(port);
          return daemon::mode_status<proto::GroupsStatus>(s).pushes_applied() > 20;
        },
        60s))
        << s.DebugString();
    EXPECT_EQ(s.algo(), "groups");
    const proto::GroupsStatus g = daemon::mode_status<proto::GroupsStatus>(s);
    EXPECT_EQ(g.groups(), 2u);
    EXPECT_EQ(g.group(), i == 0 ? 0u : 1u);
    const std::vector<std::string> ring(g.group_members().begin(), g.group_members().end());
    EXPECT_EQ(ring, i == 0 ? (std::vector<std::string>{"w0", "w1"}) : (std::vector<std::string>{"w2", "w3"}));
    EXPECT_EQ(std::vector<uint32_t>(g.shards_owned().begin(), g.shards_owned().end()),
              std::vector<uint32_t>{static_cast<uint32_t>(i)});
    // The summary agrees with the histogram it summarises (one snapshot):
    // every applied push in one bucket, the mean and the largest staleness
    // those of the buckets (the last bucket holds its index and above).
    const auto& histogram = g.staleness_histogram();
    ASSERT_GT(histogram.size(), 1);
    uint64_t pushes = 0, top = 0;
    double sum = 0;
    for (int k = 0; k < histogram.size(); ++k) {
      pushes += histogram[k];
      sum += static_cast<double>(k) * static_cast<double>(histogram[k]);
      if (histogram[k] > 0) top = static_cast<uint64_t>(k);
    }
    EXPECT_EQ(pushes, g.pushes_applied()) << "every applied push has its staleness";
    if (histogram[histogram.size() - 1] == 0) {
      EXPECT_EQ(g.staleness_max(), static_cast<int64_t>(top));
      EXPECT_NEAR(g.staleness_mean(), sum / static_cast<double>(pushes), 1e-9);
    } else {
      EXPECT_GE(g.staleness_max(), static_cast<int64_t>(top));
      EXPECT_GE(g.staleness_mean(), sum / static_cast<double>(pushes) - 1e-9);
    }
    EXPECT_GT(s.bytes_sent(), 0u);
    // Two groups: the asynchrony's implicit momentum is 1 - 1/2, the explicit the rest of 0.8.
    EXPECT_TRUE(g.momentum_auto());
    EXPECT_FLOAT_EQ(g.implicit_momentum(), 0.5f);
    EXPECT_NEAR(g.momentum(), 0.3f, 1e-6);
    const MetricsText m = fetch_metrics(port);
    EXPECT_GT(m.value("gossipd_groups_pushes_applied_total").value_or(0), 0) << m;
  }
}

// With one group every owner applies one update a step: synchronous SGD,
// AllReduce-SGD's parameters after 100 steps (4 members, 25 steps an epoch).
TEST(GroupsRun, OneGroupIsAllreduceSgd) {
  const std::vector<std::string> flags{"--train-limit", "3200", "--test-limit", "200", "--batch", "32",
                                       "--threads",     "1",    "--epochs",     "4",   "--quiet"};
  std::map<std::string, std::vector<float>> params;
  for (const std::string algo : {"groups", "allreduce"}) {
    TempDir dir("gossipd_groups_sync");
    const auto ckpt = [&](int i) { return dir.file(Cluster::id(i) + ".ckpt"); };
    std::vector<std::string> mode{"--algo", algo};
    if (algo == "groups") mode = {"--algo", "groups", "--compute-groups", "1"};
    Cluster c(4, with(with(flags, mode), kNoEviction), [&](int i) {
      return std::vector<std::string>{"--checkpoint-dir", ckpt(i)};
    });
    const Done done = expect_identical_cells(c, 120s);
    EXPECT_EQ(done.rounds, 100) << algo;
    const auto all = daemon::list_checkpoints(ckpt(0));
    ASSERT_FALSE(all.empty()) << algo;
    const daemon::ReplicaState st = daemon::read_checkpoint(all[0]).state;
    EXPECT_EQ(st.header.step(), 100u) << algo;
    params[algo] = st.params;
  }
  const auto& a = params["groups"];
  const auto& b = params["allreduce"];
  ASSERT_EQ(a.size(), b.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  EXPECT_LE(std::sqrt(diff / norm), 1e-5);
}

// w3 owned shard 3: it moves to w0 (alive[3 mod 3]), seeded from a group's copy.
// `seeded`: the dead member's shards reach w0 seeded by a member's later
// copy (counted by version; with an exchange in flight the first seed may
// come from a copy whose version its sender had not pulled, uncounted).
void a_dead_member_leaves_its_group(const std::vector<std::string>& extra, bool seeded) {
  Cluster c(4, with(groups(2, {"--epochs", "20", "--timeout-ms", "1000", "--heartbeat-ms", "100",
                               "--failure-timeout-ms", "1500"}),
                    extra));
  wait_for_rounds(c, 1);
  c.proc(3).signal(SIGKILL);
  const Done pair = expect_identical_cells(c, 120s, {0, 1});
  const Done alone = expect_identical_cells(c, 120s, {2});
  EXPECT_GT(pair.accuracy, 0.6);
  EXPECT_GT(alone.accuracy, 0.6);
  EXPECT_EQ(alone.rounds, 20 * (3000 / 4 / 32));
  const std::string log = c.proc(2).out() + c.proc(2).err();
  EXPECT_NE(log.find("ring re-formed over 1 members"), std::string::npos) << log;
  for (int i : {0, 1}) {
    const std::string other = c.proc(i).out() + c.proc(i).err();
    EXPECT_EQ(other.find("ring re-formed"), std::string::npos) << "group 0 re-formed: " << other;
  }
  const auto end = c.end_record(0);
  ASSERT_TRUE(end.has_value());
  if (seeded) {
    EXPECT_GE(daemon::mode_status<proto::GroupsStatus>(end->status()).shards_seeded(), 1u)
        << end->DebugString();
  }
}

TEST(GroupsRun, ADeadMemberLeavesItsGroupToReformItsShardIsSeededAgainAndTheOtherGroupGoesOn) {
  a_dead_member_leaves_its_group({}, true);
}

// The same with an exchange in flight while the member dies (--group-overlap).
TEST(GroupsRun, OverlappedADeadMemberLeavesItsGroupToReformAndTheOtherGroupGoesOn) {
  a_dead_member_leaves_its_group({"--group-overlap"}, false);
}

// Four groups of one; w3 pushes its gradients scaled ×1000. Under --robust
// clip every owner it pushes to (the three others: its own shard it
// applies itself) centres its pushes, names it (in /status's record and
// the log) and no one else, and refuses its pushes from then on; the
// honest members learn. Without the defence the same attack takes every
// replica to chance (tests/bench/byzantine.sh: 0.10).
TEST(GroupsRun, UnderRobustClipOwnersNameTheScaledPusherAloneAndTheHonestLearn) {
  constexpr int kBad = 3;
  Cluster c(4, with(groups(4, {"--epochs", "2", "--robust", "clip"}), kNoEviction), [](int i) {
    return i == kBad ? std::vector<std::string>{"--inject-byzantine", "scaled"} : std::vector<std::string>{};
  });
  for (int i = 0; i < c.size(); ++i) ASSERT_TRUE(c.proc(i).wait(180s)) << "worker " << i << " did not finish";
  for (int i = 0; i < c.size(); ++i) {
    if (i == kBad) continue;
    EXPECT_EQ(why_not_named_alone(c, i, kBad, 0.6), "");
    EXPECT_GT(daemon::mode_status<proto::GroupsStatus>(c.end_record(i)->status()).pushes_refused(), 0u)
        << "no push of the named member was refused";
  }
}

TEST(GroupsRun, BadCountsAndMomentaAreOneLine) {
  expect_refused_by(4, groups(3, {}), "--compute-groups 3: 3 compute groups do not divide 4 workers");
  expect_refused_by(4, with(kGroupsData, {"--algo", "groups"}), "--algo groups needs --compute-groups");
  expect_refused_by(4, with(kGroupsData, {"--compute-groups", "2"}), "--compute-groups is for --algo groups");
  expect_refused_by(4, with(kGroupsData, {"--momentum", "auto"}), "--momentum auto is for --algo groups");
  expect_refused_by(4, groups(2, {"--momentum", "1.5"}), "'1.5' is not in [0, 0.999] nor auto");
  expect_refused_by(4, groups(2, {"--momentum", "high"}), "'high' is not in [0, 0.999] nor auto");
  expect_refused_by(4, groups(2, {"--optimizer", "lars"}),
                    "--optimizer lars needs whole layers; use --optimizer sgd");
  expect_refused_by(4, groups(2, {"--compute-group-order", "w0,w1,w2,w9"}),
                    "--compute-group-order: the order does not list every one of the 4 members exactly once");
  expect_refused_by(
      4, groups(2, {"--inject-byzantine", "alie"}),
      "--inject-byzantine alie: a compute group's member receives no one's pushes to aim it with");
  expect_refused_by(4, groups(2, {"--robust", "clip", "--evict-byzantine"}),
                    "--evict-byzantine: compute groups take no one in or out of their groups during a run");
  expect_refused_by(4, groups(2, {"--robust", "clip:0"}), "--robust 'clip:0': '0' is not a number above 0");
  const RunResult train = run({bin("gossipd"), "train", "--momentum", "auto", "--epochs", "1"}, 30s);
  EXPECT_EQ(train.exit_code, 2) << train.err;
  EXPECT_NE(train.err.find("--momentum auto is a distributed mode's rule (gossipd run --help)"),
            std::string::npos)
      << train.err;
}

}  // namespace
}  // namespace gossipd::testing
