// Where a restarted grid goes on from (daemon/worker/spread_resume.h): the
// newest round every cell has a checkpoint of, and the newer ones of a cell
// set aside.
#include "daemon/worker/spread_resume.h"

#include <gtest/gtest.h>

#include <fstream>

#include "daemon/cluster/checkpoint.h"
#include "tests/support/temp_dir.h"

namespace gossipd::daemon {
namespace {

TEST(SpreadResume, TheNewestRoundEveryCellHas) {
  EXPECT_EQ(common_round({{60, 40, 20}, {40, 20}, {60, 40}}), 40u);
  EXPECT_EQ(common_round({{60, 40}, {60, 40}}), 60u);
  EXPECT_EQ(common_round({{}, {}, {}}), 0u);  // a fresh start
  EXPECT_EQ(common_round({{60, 40}, {20}}), std::nullopt);
  EXPECT_EQ(common_round({{60}, {}}), std::nullopt);  // one cell lost its checkpoints
}

TEST(SpreadResume, ACellOffersTheRoundItLoadedAndItsOlderFiles) {
  testing::TempDir dir("gossipd_spread_resume");
  const std::filesystem::path d = dir.file("ckpt");
  std::filesystem::create_directories(d);
  for (uint64_t r : {20, 40, 60, 80}) std::ofstream(d / checkpoint_name(r)) << "x";
  // It loaded 60 (80 is damaged, say): 60 and what is older.
  EXPECT_EQ(resumable_rounds(d, 60), (std::vector<uint64_t>{60, 40, 20}));
  EXPECT_EQ(resumable_rounds(d, 0), std::vector<uint64_t>{});
  EXPECT_EQ(resumable_rounds("", 0), std::vector<uint64_t>{});
  abandon_after(d, 40);
  EXPECT_EQ(list_checkpoints(d).size(), 2u);
  EXPECT_TRUE(std::filesystem::exists(d / (checkpoint_name(60) + ".abandoned")));
  EXPECT_TRUE(std::filesystem::exists(d / (checkpoint_name(80) + ".abandoned")));
}

}  // namespace
}  // namespace gossipd::daemon
