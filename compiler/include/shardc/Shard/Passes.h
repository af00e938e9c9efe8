//===- Passes.h - shardc's passes around upstream's partitioner -*- C++ -*-===//
//
// Declarations generated from Passes.td: createReplicateUnshardedPass(),
// createDecomposeReshardsPass(), createDropUnitAxesPass(),
// createSliceEarlyPass(), createFuseReduceScatterPass() and
// registerShardcShardPasses().
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_SHARD_PASSES_H
#define SHARDC_SHARD_PASSES_H

#include "mlir/Pass/Pass.h"

namespace shardc {

/// On each all_gather shardc-regather-parameters copies, a number that keeps
/// the copies apart: cse would merge equal collectives of the same operand
/// back into one.
inline constexpr llvm::StringLiteral kRegatherAttr = "shardc.regather";

#define GEN_PASS_DECL
#include "shardc/Shard/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "shardc/Shard/Passes.h.inc"

} // namespace shardc

#endif
