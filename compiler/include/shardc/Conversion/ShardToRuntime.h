//===- ShardToRuntime.h - lower shard collectives to libshardrt -*- C++ -*-===//
//
// Upstream's convert-shard-to-mpi lowers only all_reduce and splits a new MPI
// communicator at every call. shardc lowers every collective of a partitioned
// function to a call into libshardrt (runtime/include/shardrt/shardrt.h), whose
// communicators are made once per mesh-axis subset.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_CONVERSION_SHARDTORUNTIME_H
#define SHARDC_CONVERSION_SHARDTORUNTIME_H

#include <memory>

namespace mlir {
class Pass;
} // namespace mlir

namespace shardc {

/// `shard-to-runtime`: rewrites shard.all_reduce / all_gather / reduce_scatter /
/// all_to_all / all_slice / process_multi_index / process_linear_index /
/// grid_shape / neighbors_linear_indices on tensors into func.call of
/// libshardrt functions; removes shard.grid ops when nothing refers to them
/// any more. Any other shard op is an error.
///
/// The result stays at tensor level (bufferization.to_buffer read_only of the
/// inputs, memref.alloc + to_tensor restrict writable of the outputs), for
/// one-shot-bufferize to run next. Run canonicalize / cse before this pass or
/// after bufferization, not in between: the to_buffer(to_tensor) folding hides
/// the runtime's reads from the bufferization analysis.
std::unique_ptr<mlir::Pass> createShardToRuntimePass();
void registerShardToRuntimePass();

} // namespace shardc

#endif
