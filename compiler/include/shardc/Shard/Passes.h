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

#define GEN_PASS_DECL
#include "shardc/Shard/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "shardc/Shard/Passes.h.inc"

} // namespace shardc

#endif
