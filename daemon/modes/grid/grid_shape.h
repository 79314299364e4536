#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gossipd::topology {

// A Pr x Pc process grid holding one model replica (Gholami et al., SPAA
// 2018): every dense layer's rows, and every image's rows, are split over
// the Pr processes of a grid column; the batch is split over the Pc columns.
struct GridShape {
  size_t rows = 1;  // Pr: model (dense rows) and domain (image rows) parallelism
  size_t cols = 1;  // Pc: batch parallelism
  size_t procs() const { return rows * cols; }
  std::string name() const;  // "PRxPC"
  bool operator==(const GridShape&) const = default;
};

// "PRxPC", e.g. "4x2", both at least 1; throws std::invalid_argument saying
// what is wrong with `text` and the form expected.
GridShape parse_grid_shape(std::string_view text);

// Every shape of `procs` processes, Pr ascending: 1xP ... Px1.
std::vector<GridShape> grid_shapes(size_t procs);

struct GridCoord {
  size_t row = 0;  // 0 .. Pr-1: which block of rows
  size_t col = 0;  // 0 .. Pc-1: which slice of the batch
  bool operator==(const GridCoord&) const = default;
};

// Rank r (the order of --peers) is row r mod Pr of column r / Pr. The Pr
// processes of a column, which exchange activations at every layer, are
// consecutive ranks: placed in order, they share a host where they can.
GridCoord grid_coord(GridShape shape, size_t rank);
size_t grid_rank(GridShape shape, GridCoord coord);

// The Pr ranks of column `col`, by row: one batch slice, the model split
// between them (allgather, reduce-scatter, halo exchange).
std::vector<size_t> column_ranks(GridShape shape, size_t col);
// The Pc ranks of row `row`, by column: the same rows of every layer
// (weight-gradient allreduce).
std::vector<size_t> row_ranks(GridShape shape, size_t row);

}  // namespace gossipd::topology
