//===- ShardingModels.h - sharding models the project owns ------*- C++ -*-===//
//
// MLIR 22's shard dialect has no sharding model (or a failing one) for some
// ops shardc emits: convolutions and pooling (their indexing maps are not
// projected permutations), tensor.pad and the reshapes tensor.collapse_shape /
// tensor.expand_shape. These external models fill the gap.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_SHARD_SHARDINGMODELS_H
#define SHARDC_SHARD_SHARDINGMODELS_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace shardc {

/// Attaches the project's sharding models. Must be called before upstream's
/// linalg::registerShardingInterfaceExternalModels on the same registry: the
/// first model attached to an op wins.
void registerShardingModels(mlir::DialectRegistry &registry);

} // namespace shardc

#endif
