//===- NearestName.cpp ----------------------------------------------------===//

#include "shardc/Support/NearestName.h"

std::string shardc::nearestName(llvm::StringRef name, llvm::ArrayRef<std::string> candidates) {
  std::string best;
  unsigned bestDistance = 3;
  for (const std::string &c : candidates) {
    unsigned d = name.edit_distance(c, true, bestDistance);
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return best;
}
