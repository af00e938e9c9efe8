//===- LayoutPrinter.cpp - which rank holds which block, as text ----------===//
//
// `shardc --emit=layout`, before anything runs: for each parameter and input,
// the grid of shardrt/layout_grid.h drawn with box characters, every cell
// listing the ranks that hold that block:
//
//   dense1.W: f32[features=3136, hidden=256]  sharding [none, model]
//     columns: hidden over model, 2 blocks of 128
//     +---------+---------+
//     | 0 2 4 6 | 1 3 5 7 |
//     +---------+---------+
//
//===----------------------------------------------------------------------===//

#include "shardc/Sema/LayoutPrinter.h"

#include "shardrt/layout_grid.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

using namespace shardc;

namespace {

/// "0 1 2 3", or "0-15" for a run of more than four.
std::string rankList(const std::vector<int64_t> &ranks) {
  bool run = ranks.size() > 4;
  for (size_t i = 1; i < ranks.size(); ++i)
    run = run && ranks[i] == ranks[i - 1] + 1;
  if (run)
    return std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  std::string text;
  for (int64_t rank : ranks)
    text += (text.empty() ? "" : " ") + std::to_string(rank);
  return text;
}

void printLayout(const ShardedTensor &tensor, const Mesh &mesh, llvm::raw_ostream &os) {
  std::vector<int64_t> meshSizes;
  for (const auto &axis : mesh.axes)
    meshSizes.push_back(axis.second);
  std::vector<std::vector<int>> split;
  for (const DimSharding &dim : tensor.sharding.dims) {
    split.emplace_back();
    for (const std::string &axis : dim.meshAxes)
      split.back().push_back(int(mesh.indexOf(axis)));
  }
  const shardrt::LayoutGrid grid = shardrt::layoutGrid(meshSizes, split);
  os << tensor.path << ": " << tensor.type.str() << "  sharding " << tensor.sharding.str() << "\n";
  auto describe = [&](const char *what, int dim, int64_t blocks) {
    if (dim < 0)
      return;
    const Dim &d = tensor.type.dims[dim];
    os << "  " << what << ": " << d.axis << " over "
       << llvm::join(tensor.sharding.dims[dim].meshAxes, ", ") << ", " << blocks << " blocks of "
       << d.size / blocks << "\n";
  };
  describe("rows", grid.rowDim, grid.rows);
  describe("columns", grid.columnDim, grid.columns);
  std::vector<std::string> cells;
  size_t width = 0;
  for (const std::vector<int64_t> &ranks : grid.ranks) {
    cells.push_back(rankList(ranks));
    width = std::max(width, cells.back().size());
  }
  std::string rule = "  +";
  for (int64_t c = 0; c < grid.columns; ++c)
    rule += std::string(width + 2, '-') + "+";
  os << rule << "\n";
  for (int64_t r = 0; r < grid.rows; ++r) {
    os << "  |";
    for (int64_t c = 0; c < grid.columns; ++c)
      os << " " << llvm::left_justify(cells[r * grid.columns + c], width) << " |";
    os << "\n" << rule << "\n";
  }
}

} // namespace

void shardc::printLayouts(const TypedProgram &program, llvm::raw_ostream &os) {
  os << "mesh " << program.mesh.str() << ": " << program.mesh.numRanks()
     << " ranks, numbered row-major over the mesh axes\n";
  for (const Parameter &param : program.params) {
    os << "\nparam ";
    printLayout(param, program.mesh, os);
  }
  for (const Input &input : program.inputs) {
    os << "\ninput ";
    printLayout(input, program.mesh, os);
  }
}
