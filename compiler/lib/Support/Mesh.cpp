//===- Mesh.cpp - a mesh of named axes ------------------------------------===//

#include "shardc/Support/Mesh.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace shardc;

int64_t Mesh::size(const std::string &axis) const {
  for (const auto &[name, n] : axes)
    if (name == axis)
      return n;
  return 1;
}

int64_t Mesh::indexOf(const std::string &axis) const {
  auto it = llvm::find_if(axes, [&](const auto &a) { return a.first == axis; });
  return it - axes.begin();
}

int64_t Mesh::numRanks() const {
  // Sema rejects meshes of more than 2^31 - 1 ranks; saturate before that.
  int64_t n = 1;
  for (const auto &axis : axes)
    n = llvm::checkedMul(n, axis.second).value_or(INT64_MAX);
  return n;
}

std::string Mesh::str() const {
  std::string out = "(";
  for (size_t i = 0; i < axes.size(); ++i)
    out += (i ? ", " : "") + axes[i].first + " = " + std::to_string(axes[i].second);
  return out + ")";
}
