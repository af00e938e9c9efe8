//===- ShardingModels.h - sharding models the project owns ------*- C++ -*-===//
//
// MLIR 22's shard dialect has no sharding model (or a failing one) for some
// ops shardc emits: convolutions and pooling (their indexing maps are not
// projected permutations), tensor.pad and the reshapes tensor.collapse_shape /
// tensor.expand_shape. These external models fill the gap.
//
// linalg.generic gets one too: upstream's, plus the global position for a
// `linalg.index` of a split loop (upstream leaves the local one), and the
// convolutions' rule for generics whose maps are not projected permutations
// (upstream rejects them).
//
// The models live one file per dialect, like upstream's:
//   lib/Shard/LinalgShardingModels.cpp  linalg.conv_2d_nhwc_hwcf,
//                                       linalg.pooling_nhwc_{sum,max},
//                                       linalg.generic
//   lib/Shard/TensorShardingModels.cpp  tensor.pad, tensor.collapse_shape,
//                                       tensor.expand_shape
// and share the helpers declared at the end of this header.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_SHARD_SHARDINGMODELS_H
#define SHARDC_SHARD_SHARDINGMODELS_H

#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace shardc {

/// Attaches the project's sharding models. Must be called before upstream's
/// linalg::registerShardingInterfaceExternalModels on the same registry: the
/// first model attached to an op wins (InterfaceMap ignores a repeated
/// registration, and registry extensions run in the order they were added).
void registerShardingModels(mlir::DialectRegistry &registry);

/// The per-dialect halves of registerShardingModels.
void registerLinalgShardingModels(mlir::DialectRegistry &registry);
void registerTensorShardingModels(mlir::DialectRegistry &registry);

namespace shard_detail {

/// Collects, loop by loop, the grid axes that operand and result shardings
/// imply, with upstream's conflict rules (defaultGetShardingOption): one grid
/// per op, a loop split the same way by every tensor that indexes it, and a
/// grid axis used by one loop only. Each model decides which tensor dimensions
/// it feeds in; dimensions it leaves out end up replicated, so propagation
/// inserts the reshard in front of (or behind) the op.
class LoopShardingBuilder {
public:
  explicit LoopShardingBuilder(unsigned numLoops);

  /// Records that an operand or result carries `sharding` (null: none),
  /// split or not. Fails on a second grid or on halos / explicit shard
  /// offsets, which none of the models supports.
  llvm::LogicalResult addTensor(const mlir::shard::Sharding &sharding);

  /// Records that loop `loop` is split on `axes`; an empty `axes` is a no-op.
  llvm::LogicalResult addLoop(unsigned loop, llvm::ArrayRef<mlir::shard::GridAxis> axes);

  /// addTensor, then addLoop for each of the tensor's `rank` dimensions with
  /// the loop `loopOf` gives it; a dimension without one is left out.
  llvm::LogicalResult
  addTensorDims(const mlir::shard::Sharding &sharding, int64_t rank,
                llvm::function_ref<std::optional<unsigned>(int64_t dim)> loopOf);

  /// The option; empty (nothing known yet) when no operand or result had a
  /// sharding. A replicated one counts, as in MLIR 22's default model.
  mlir::shard::ShardingOption finish();

private:
  mlir::shard::ShardingArray loops;
  mlir::FlatSymbolRefAttr grid;
};

/// Split axes of dimension `dim` of a sharding (empty when replicated or past
/// the trailing entries the sharding omits).
llvm::ArrayRef<mlir::shard::GridAxis> splitAxesOfDim(const mlir::shard::Sharding &sharding,
                                                     int64_t dim);

/// Number of devices the product of `axes` of the grid named by `sharding`
/// spans, or std::nullopt when the grid cannot be found.
std::optional<int64_t> deviceCountOfAxes(mlir::Operation *op, const mlir::shard::Sharding &sharding,
                                         llvm::ArrayRef<mlir::shard::GridAxis> axes);

} // namespace shard_detail
} // namespace shardc

#endif
