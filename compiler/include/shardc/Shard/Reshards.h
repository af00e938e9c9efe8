//===- Reshards.h - reshards upstream's partitioner can do ------*- C++ -*-===//
//
// MLIR 22's shard-partition turns each pair of chained shard.shard ops (a
// value's sharding, then the sharding a user wants) into collectives, but
// only when the two differ by one step on one grid axis: split a dimension
// once more (all_slice), unsplit its last axis (all_gather), or move a last
// axis to another dimension (all_to_all). Anything else is meant to be
// rejected by an assertion that release builds of LLVM compile out: the pass
// then applies the first step it recognises and carries on with a value
// whose local shape is wrong. On a 2-D mesh that is easy to hit: a gradient
// produced [[], [model]] and used as [[data]] came out [[data], [model]], and
// the op using it failed to verify ("inferred input/output operand #1 has
// shape's dimension #1 to be 256, but found 1024").
//
// `decompose-reshards` runs right before shard-partition and breaks every
// such pair into a chain of single steps through intermediate shard.shard
// ops, which shard-partition then handles one by one.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_SHARD_RESHARDS_H
#define SHARDC_SHARD_RESHARDS_H

#include <memory>

namespace mlir {
class Pass;
} // namespace mlir

namespace shardc {

/// `decompose-reshards` (on any op, typically func.func): for each
/// shard.shard whose source is a shard.shard with another sharding that
/// upstream cannot reach in one step, inserts intermediate shard.shard ops
/// (at the user's location) so that each link of the chain is one step.
/// Order: splits first (local slices that shrink what later collectives
/// move), then all_to_all moves upstream recognises, then all_gathers.
/// Pairs with halos or explicit shard offsets are left alone.
std::unique_ptr<mlir::Pass> createDecomposeReshardsPass();
void registerDecomposeReshardsPass();

} // namespace shardc

#endif
