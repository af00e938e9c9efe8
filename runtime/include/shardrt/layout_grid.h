// Which rank holds which block of a tensor, as jax.debug.visualize_array_sharding draws
// it: a grid over the tensor's split dimensions, each cell a block and the ranks that
// hold it. shardc's --emit=layout prints it as text before anything runs; the run's
// report page draws it. Header-only, shared by both.
#ifndef SHARDRT_LAYOUT_GRID_H
#define SHARDRT_LAYOUT_GRID_H

#include <cstdint>
#include <vector>

namespace shardrt {

struct LayoutGrid {
  int rowDim = -1, columnDim = -1;         // the tensor dimensions drawn; -1: none (one block)
  int64_t rows = 1, columns = 1;           // blocks along them
  std::vector<std::vector<int64_t>> ranks; // per cell, row-major: the ranks holding it
};

/// `meshSizes`: the mesh's axis sizes; ranks are numbered row-major over them (the
/// last axis fastest). `split`: per tensor dimension, the mesh axes it is split over,
/// major first. The first two split dimensions are drawn: one alone goes down the
/// rows when it is the first of several dimensions, else across the columns.
inline LayoutGrid layoutGrid(const std::vector<int64_t> &meshSizes,
                             const std::vector<std::vector<int>> &split) {
  LayoutGrid grid;
  std::vector<int> drawn;
  for (int d = 0; d < int(split.size()) && drawn.size() < 2; ++d)
    if (!split[d].empty())
      drawn.push_back(d);
  if (drawn.size() == 2) {
    grid.rowDim = drawn[0];
    grid.columnDim = drawn[1];
  } else if (drawn.size() == 1) {
    (drawn[0] == 0 && split.size() > 1 ? grid.rowDim : grid.columnDim) = drawn[0];
  }
  // The block a rank holds along dimension d: its linear index over d's axes.
  auto blockOf = [&](const std::vector<int64_t> &coords, int d) {
    int64_t block = 0;
    if (d >= 0)
      for (int axis : split[d])
        block = block * meshSizes[axis] + coords[axis];
    return block;
  };
  auto blocksAlong = [&](int d) {
    int64_t blocks = 1;
    if (d >= 0)
      for (int axis : split[d])
        blocks *= meshSizes[axis];
    return blocks;
  };
  grid.rows = blocksAlong(grid.rowDim);
  grid.columns = blocksAlong(grid.columnDim);
  grid.ranks.resize(grid.rows * grid.columns);
  int64_t ranks = 1;
  for (int64_t size : meshSizes)
    ranks *= size;
  std::vector<int64_t> coords(meshSizes.size());
  for (int64_t rank = 0; rank < ranks; ++rank) {
    for (int64_t a = int64_t(meshSizes.size()) - 1, r = rank; a >= 0; --a) {
      coords[a] = r % meshSizes[a];
      r /= meshSizes[a];
    }
    grid.ranks[blockOf(coords, grid.rowDim) * grid.columns + blockOf(coords, grid.columnDim)]
        .push_back(rank);
  }
  return grid;
}

} // namespace shardrt

#endif // SHARDRT_LAYOUT_GRID_H
