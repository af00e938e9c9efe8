//===- Passes.h - shardc's optimizations on tensors -------------*- C++ -*-===//
//
// Declarations generated from Passes.td: createSplatsToFillsPass(),
// createFuseElementwisePass() and registerShardcOptimizePasses().
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_OPTIMIZE_PASSES_H
#define SHARDC_OPTIMIZE_PASSES_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/Pass.h"

#include <limits>
#include <string>

namespace shardc {

/// On a function shardc-plan-buffers planned: the bytes of its one arena.
inline constexpr llvm::StringLiteral kArenaBytesAttr = "shardc.arena_bytes";
/// On a function: shardc-plan-buffers takes the arena as a new last argument
/// (the runtime's step arena, which the entry points shardc adds pass) instead
/// of allocating it.
inline constexpr llvm::StringLiteral kArenaArgumentAttr = "shardc.arena_argument";

/// What an outlined function prints as when shardc-outline-kernels and
/// shardc-outline-layers look for one that prints alike: the generic form,
/// without locations, nothing elided, whatever --mlir-print-* options ask for
/// the IR's own printing (elided constants would make two functions alike).
inline std::string printedForSharing(mlir::Operation *op) {
  mlir::OpPrintingFlags flags;
  flags.printGenericOpForm().enableDebugInfo(false).skipRegions(false).printNameLocAsPrefix(false);
  flags.elideLargeElementsAttrs(std::numeric_limits<int64_t>::max());
  flags.elideLargeResourceString(std::numeric_limits<int64_t>::max());
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os, flags);
  return text;
}

#define GEN_PASS_DECL
#include "shardc/Optimize/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "shardc/Optimize/Passes.h.inc"

} // namespace shardc

#endif
