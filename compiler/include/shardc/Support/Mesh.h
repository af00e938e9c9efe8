//===- Mesh.h - a mesh of named axes ----------------------------*- C++ -*-===//
//
// What the rules file declares and the report reads back off the module's
// grid, so that the stages after partitioning name the mesh as Sema does.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_SUPPORT_MESH_H
#define SHARDC_SUPPORT_MESH_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace shardc {

/// A mesh of named axes; the number of ranks is the product of the sizes.
struct Mesh {
  std::vector<std::pair<std::string, int64_t>> axes;
  int64_t size(const std::string &axis) const;
  /// The position of `axis` in `axes` (the shard dialect's grid axis).
  int64_t indexOf(const std::string &axis) const;
  int64_t numRanks() const;
  std::string str() const; // `(data = 2, model = 4)`
};

} // namespace shardc

#endif
