//===- NearestName.h - the "did you mean" of a diagnostic -------*- C++ -*-===//

#ifndef SHARDC_SUPPORT_NEARESTNAME_H
#define SHARDC_SUPPORT_NEARESTNAME_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace shardc {

/// The candidate nearest to `name` (an edit distance under 3), or "".
std::string nearestName(llvm::StringRef name, llvm::ArrayRef<std::string> candidates);

} // namespace shardc

#endif
