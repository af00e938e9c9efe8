//===- ReplicateUnsharded.h - anchor what propagation left unsharded -*- C++ -*-===//
//
// MLIR 22's sharding-propagation derives an op's sharding from annotated
// operands or users. A tensor that no annotated value reaches gets none: a
// one_hot of an argmax (made from 0-d values) that is summed back to a 0-d
// value, or the broadcast of the loss's cotangent into the gradient of a
// scalar parameter (`mean(image + s)`). shard-partition expects every tensor
// annotated and dereferences the missing grid (a segmentation fault).
//
// `replicate-unsharded` runs after propagation: it annotates each such ranked
// result as replicated (nothing sharded reaches it, so every rank computes
// all of it) and propagates again from those anchors to their operands and
// users.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_SHARD_REPLICATEUNSHARDED_H
#define SHARDC_SHARD_REPLICATEUNSHARDED_H

#include <memory>

namespace mlir {
class Pass;
} // namespace mlir

namespace shardc {

/// `replicate-unsharded` (on func.func, after sharding-propagation).
std::unique_ptr<mlir::Pass> createReplicateUnshardedPass();
void registerReplicateUnshardedPass();

} // namespace shardc

#endif
