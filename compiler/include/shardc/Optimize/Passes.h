//===- Passes.h - shardc's optimizations of the step ------------*- C++ -*-===//
//
// The create*Pass() functions and registerShardcOptimizePasses() that
// Passes.td declares, and the attributes shardc-plan-buffers leaves.
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
