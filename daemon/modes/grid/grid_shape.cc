#include "daemon/modes/grid/grid_shape.h"

#include <charconv>
#include <stdexcept>

namespace gossipd::topology {
namespace {

// A whole number >= 1 spelling all of `text`, or 0.
size_t positive(std::string_view text) {
  size_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size() ? v : 0;
}

}  // namespace

std::string GridShape::name() const { return std::to_string(rows) + "x" + std::to_string(cols); }

GridShape parse_grid_shape(std::string_view text) {
  const size_t x = text.find('x');
  const size_t rows = x == std::string_view::npos ? 0 : positive(text.substr(0, x));
  const size_t cols = x == std::string_view::npos ? 0 : positive(text.substr(x + 1));
  if (rows == 0 || cols == 0) {
    throw std::invalid_argument("grid shape '" + std::string(text) +
                                "' is not PRxPC with whole numbers >= 1 (e.g. 4x2: 4 rows of model "
                                "parallelism, 2 columns of batch parallelism)");
  }
  return {rows, cols};
}

std::vector<GridShape> grid_shapes(size_t procs) {
  std::vector<GridShape> shapes;
  for (size_t rows = 1; rows <= procs; ++rows) {
    if (procs % rows == 0) shapes.push_back({rows, procs / rows});
  }
  return shapes;
}

GridCoord grid_coord(GridShape shape, size_t rank) { return {rank % shape.rows, rank / shape.rows}; }

size_t grid_rank(GridShape shape, GridCoord coord) { return coord.col * shape.rows + coord.row; }

std::vector<size_t> column_ranks(GridShape shape, size_t col) {
  std::vector<size_t> ranks;
  for (size_t row = 0; row < shape.rows; ++row) ranks.push_back(grid_rank(shape, {row, col}));
  return ranks;
}

std::vector<size_t> row_ranks(GridShape shape, size_t row) {
  std::vector<size_t> ranks;
  for (size_t col = 0; col < shape.cols; ++col) ranks.push_back(grid_rank(shape, {row, col}));
  return ranks;
}

}  // namespace gossipd::topology
