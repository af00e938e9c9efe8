//===- Passes.h - shardc's optimizations on tensors -------------*- C++ -*-===//
//
// Declarations generated from Passes.td: createSplatsToFillsPass(),
// createFuseElementwisePass() and registerShardcOptimizePasses().
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_OPTIMIZE_PASSES_H
#define SHARDC_OPTIMIZE_PASSES_H

#include "mlir/Pass/Pass.h"

namespace shardc {

/// On a function shardc-plan-buffers planned: the bytes of its one arena.
inline constexpr llvm::StringLiteral kArenaBytesAttr = "shardc.arena_bytes";
/// On a function: shardc-plan-buffers takes the arena as a new last argument
/// (the runtime's step arena, which the entry points shardc adds pass) instead
/// of allocating it.
inline constexpr llvm::StringLiteral kArenaArgumentAttr = "shardc.arena_argument";

#define GEN_PASS_DECL
#include "shardc/Optimize/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "shardc/Optimize/Passes.h.inc"

} // namespace shardc

#endif
