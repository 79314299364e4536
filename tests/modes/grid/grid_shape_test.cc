// The process grid (grid_shape.h) and the splits it uses (topology/split.h).
#include "daemon/modes/grid/grid_shape.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "topology/split.h"

namespace gossipd::topology {
namespace {

TEST(GridShape, ParsesRowsByColumns) {
  EXPECT_EQ(parse_grid_shape("4x2"), (GridShape{4, 2}));
  EXPECT_EQ(parse_grid_shape("1x8"), (GridShape{1, 8}));
  EXPECT_EQ(parse_grid_shape("4x2").name(), "4x2");
  EXPECT_EQ(parse_grid_shape("12x3").procs(), 36u);
}

TEST(GridShape, RefusesWhatIsNotPrTimesPc) {
  for (const char* bad : {"", "4", "x2", "4x", "0x4", "4x0", "4*2", "4x2x1", "-1x2", "4X2", " 4x2", "axb"}) {
    try {
      parse_grid_shape(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("PRxPC"), std::string::npos) << e.what();
    }
  }
}

TEST(GridShape, ShapesOfEightAreEveryFactorisation) {
  const std::vector<GridShape> want{{1, 8}, {2, 4}, {4, 2}, {8, 1}};
  EXPECT_EQ(grid_shapes(8), want);
  EXPECT_EQ(grid_shapes(7), (std::vector<GridShape>{{1, 7}, {7, 1}}));
  EXPECT_EQ(grid_shapes(1), (std::vector<GridShape>{{1, 1}}));
}

TEST(GridCoord, ColumnsAreConsecutiveRanksAndEveryRankHasOnePlace) {
  for (const GridShape shape : grid_shapes(12)) {
    std::set<std::pair<size_t, size_t>> seen;
    for (size_t r = 0; r < shape.procs(); ++r) {
      const GridCoord c = grid_coord(shape, r);
      ASSERT_LT(c.row, shape.rows);
      ASSERT_LT(c.col, shape.cols);
      EXPECT_EQ(grid_rank(shape, c), r);
      seen.insert({c.row, c.col});
    }
    EXPECT_EQ(seen.size(), shape.procs()) << shape.name();
  }
  const GridShape shape{4, 2};
  EXPECT_EQ(grid_coord(shape, 5), (GridCoord{1, 1}));
  EXPECT_EQ(column_ranks(shape, 1), (std::vector<size_t>{4, 5, 6, 7}));
  EXPECT_EQ(row_ranks(shape, 2), (std::vector<size_t>{2, 6}));
}

TEST(GridCoord, RowsAndColumnsCrossInExactlyOneRank) {
  const GridShape shape{3, 4};
  for (size_t row = 0; row < shape.rows; ++row) {
    for (size_t col = 0; col < shape.cols; ++col) {
      const auto in_col = column_ranks(shape, col), in_row = row_ranks(shape, row);
      std::vector<size_t> both;
      for (size_t r : in_col) {
        if (std::find(in_row.begin(), in_row.end(), r) != in_row.end()) both.push_back(r);
      }
      EXPECT_EQ(both, (std::vector<size_t>{grid_rank(shape, {row, col})}));
    }
  }
}

TEST(Split, BlockRangeCoversEveryElementOnceFirstBlocksLarger) {
  size_t next = 0;
  for (size_t i = 0; i < 3; ++i) {
    const BlockRange b = block_range(10, 3, i);
    EXPECT_EQ(b.begin, next);
    EXPECT_EQ(b.size(), i == 0 ? 4u : 3u);
    next = b.end;
  }
  EXPECT_EQ(next, 10u);
  EXPECT_EQ(block_range(2, 4, 3).size(), 0u);
}

TEST(Split, UnitSplitKeepsPoolingWindowsWhole) {
  // 28 image rows, two 2x2 pools below: blocks of whole 4-row units.
  const std::vector<BlockRange> four = unit_split(28, 4, 4);
  EXPECT_EQ(four, (std::vector<BlockRange>{{0, 8}, {8, 16}, {16, 24}, {24, 28}}));
  for (size_t parts = 1; parts <= 7; ++parts) {
    size_t next = 0;
    for (const BlockRange& b : unit_split(28, parts, 4)) {
      EXPECT_EQ(b.begin, next);
      EXPECT_EQ(b.size() % 4, 0u);
      EXPECT_GT(b.size(), 0u);
      next = b.end;
    }
    EXPECT_EQ(next, 28u);
  }
}

TEST(Split, UnitSplitRefusesTooManyPartsOrARaggedCount) {
  EXPECT_THROW(unit_split(28, 8, 4), std::invalid_argument);  // 7 units
  EXPECT_THROW(unit_split(30, 2, 4), std::invalid_argument);
  EXPECT_THROW(unit_split(28, 0, 4), std::invalid_argument);
}

}  // namespace
}  // namespace gossipd::topology
