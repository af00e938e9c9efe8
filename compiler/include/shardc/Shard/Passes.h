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

#include "mlir/IR/Block.h"
#include "mlir/Pass/Pass.h"

namespace shardc {

/// On each all_gather shardc-regather-parameters copies, a number that keeps
/// the copies apart: cse would merge equal collectives of the same operand
/// back into one.
inline constexpr llvm::StringLiteral kRegatherAttr = "shardc.regather";

/// The first op of `block` that reads `value` (itself or an op nested in it), else
/// the block's terminator: where a collective started early waits
/// (shardc-prefetch-gathers, shardc-shard-to-runtime).
inline mlir::Operation *firstReaderInBlock(mlir::Value value, mlir::Block *block) {
  mlir::Operation *first = block->getTerminator();
  for (mlir::Operation *user : value.getUsers())
    if (mlir::Operation *reader = block->findAncestorOpInBlock(*user))
      if (reader->isBeforeInBlock(first))
        first = reader;
  return first;
}

#define GEN_PASS_DECL
#include "shardc/Shard/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "shardc/Shard/Passes.h.inc"

} // namespace shardc

#endif
