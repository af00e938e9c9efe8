//===- Bytes.h - sizes in bytes as people write them ------------*- C++ -*-===//

#ifndef SHARDC_SUPPORT_BYTES_H
#define SHARDC_SUPPORT_BYTES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cstdint>
#include <string>

namespace shardc {

/// Totals over a program's tensors (bytes per rank, traffic) can exceed 64 bits
/// even though each tensor is within Sema's kMaxTensorElements: they saturate.
inline int64_t addSaturating(int64_t a, int64_t b) {
  return llvm::checkedAdd(a, b).value_or(INT64_MAX);
}
inline int64_t mulSaturating(int64_t a, int64_t b) {
  return llvm::checkedMul(a, b).value_or(INT64_MAX);
}

/// `1.50 MiB`
std::string formatBytes(int64_t bytes);
/// A size as flags write it: digits, then maybe K, M, G or T (powers of 1024, with
/// or without "iB"): `4G`, `512MiB`, `1048576`; -1 when it is not one.
int64_t parseBytes(llvm::StringRef text);

} // namespace shardc

#endif
