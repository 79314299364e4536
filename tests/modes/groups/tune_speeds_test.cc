// gossipctl tune's reading of the members' speeds: the last record that
// timed a step, and the wait for every member's before the probe that
// learns them may stop.
#include "daemon/modes/groups/tune_speeds.h"

#include <gtest/gtest.h>

#include <fstream>

#include "daemon/ctl/compare_report.h"
#include "tests/support/temp_dir.h"

namespace gossipd::daemon {
namespace {

// Each file's records, as the tuner reads them.
std::vector<std::vector<proto::EpochRecord>> read(const std::vector<std::string>& files) {
  std::vector<std::vector<proto::EpochRecord>> out;
  for (const auto& f : files) out.push_back(read_epoch_records(f));
  return out;
}

// A records file of one JSON line per compute per step (0: no step timed).
std::string records(const std::string& path, const std::vector<double>& ms) {
  std::ofstream out(path);
  for (double m : ms) out << R"({"epoch":0,"progress":0.25,"computeMsPerRound":)" << m << "}\n";
  return path;
}

TEST(TuneSpeeds, AMemberIsTimedByItsLastRecordThatTimedAStep) {
  testing::TempDir tmp{"gossipd_tune_speeds"};
  const std::string d = tmp.path();
  const std::vector<std::string> files{records(d + "/w0", {30, 0}), records(d + "/w1", {10}),
                                       records(d + "/w2", {31}), records(d + "/w3", {0, 11})};
  const MemberSpeeds s = member_speeds(files);
  EXPECT_EQ(s.compute_ms, (std::vector<double>{30, 10, 31, 11}));
  EXPECT_EQ(order_flag(s), "w1,w3,w0,w2");
  EXPECT_TRUE(every_member_timed(read(files)));
}

TEST(TuneSpeeds, AMemberWithoutATimedStepHoldsTheProbeAndIsNoSpeed) {
  testing::TempDir tmp{"gossipd_tune_speeds"};
  const std::string d = tmp.path();
  const std::vector<std::string> files{records(d + "/w0", {0}), records(d + "/w1", {10}),
                                       d + "/w2 (not written yet)"};
  EXPECT_FALSE(every_member_timed(read(files)));
  EXPECT_FALSE(every_member_timed(read({files[0]})));
  EXPECT_TRUE(every_member_timed(read({files[1]})));
  const MemberSpeeds s = member_speeds(files);
  EXPECT_EQ(s.compute_ms, (std::vector<double>{0, 10, 0}));
  EXPECT_TRUE(s.order.empty());  // a member of no speed orders nothing
}

}  // namespace
}  // namespace gossipd::daemon
