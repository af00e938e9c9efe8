//===- TensorShardingModels.cpp - sharding of pad and reshapes ------------===//
//
// MLIR 22 models only tensor.empty and tensor.splat; propagation stops with
// "sharding interface is not implemented" at the tensor ops shardc emits for
// SAME convolutions and flatten. Models here:
//
// tensor.pad: one parallel loop per dimension, the source and the result
//   indexed by the identity. With a constant padding value, a dimension with
//   zero low and high padding keeps its split; a padded one is replicated (a
//   split one would need the neighbours' rows: left to propagation's
//   reshard). A padding value computed from the indices replicates all.
//
// tensor.collapse_shape / tensor.expand_shape (static shapes): one parallel
//   loop per dimension of the expanded side. In row-major order, splitting the
//   head of a reassociation group (its outermost non-unit dimension) into
//   contiguous blocks splits the collapsed dimension into the same contiguous
//   blocks, provided the group's other dimensions are whole. So the collapsed
//   side is indexed by the group heads, the expanded side by the identity, and
//   only head loops are shardable:
//     - expanded side: the head's split carries over when the rest of its group
//       is unsplit; any other split of the group is left out (replicated);
//     - collapsed side: a dimension's split goes to its group head when the
//       head's size divides by the number of devices of those axes.
//   Partition rebuilds the op on local shapes.
//
//===----------------------------------------------------------------------===//

#include "shardc/Shard/ShardingModels.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SmallBitVector.h"

#include <string>
#include <type_traits>

using namespace mlir;
using namespace mlir::shard;
using shardc::shard_detail::deviceCountOfAxes;
using shardc::shard_detail::LoopShardingBuilder;
using shardc::shard_detail::splitAxesOfDim;

namespace {

SmallVector<utils::IteratorType> parallelLoops(int64_t rank) {
  return SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel);
}

// Map of a non-tensor operand (a dynamic size or offset): indexes nothing.
AffineMap scalarMap(int64_t numLoops, MLIRContext *ctx) {
  return AffineMap::get(numLoops, /*symbolCount=*/0, ctx);
}

LogicalResult cannotPartition(Operation *op, StringRef what) {
  return op->emitOpError() << "cannot partition: " << what
                           << " is split in a way the op cannot compute "
                              "locally";
}

//===----------------------------------------------------------------------===//
// tensor.pad
//===----------------------------------------------------------------------===//

// Dimensions with static zero padding on both sides; none when the padding
// value is computed from the indices (they would be local after a split).
llvm::SmallBitVector getShardableDims(tensor::PadOp op) {
  llvm::SmallBitVector shardable(op.getResultType().getRank());
  if (!op.getConstantPaddingValue())
    return shardable;
  for (auto [dim, low, high] : llvm::enumerate(op.getStaticLow(), op.getStaticHigh()))
    shardable[dim] = low == 0 && high == 0;
  return shardable;
}

struct PadShardingModel : public ShardingInterface::ExternalModel<PadShardingModel, tensor::PadOp> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    return parallelLoops(cast<tensor::PadOp>(op).getResultType().getRank());
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    int64_t rank = cast<tensor::PadOp>(op).getResultType().getRank();
    MLIRContext *ctx = op->getContext();
    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
    SmallVector<AffineMap> maps(op->getNumOperands(), scalarMap(rank, ctx));
    maps.front() = identity;
    maps.push_back(identity);
    return maps;
  }

  FailureOr<ShardingOption> getShardingOption(Operation *op, ArrayRef<Sharding> operandShardings,
                                              ArrayRef<Sharding> resultShardings) const {
    auto padOp = cast<tensor::PadOp>(op);
    llvm::SmallBitVector shardable = getShardableDims(padOp);
    LoopShardingBuilder builder(shardable.size());
    // Result first, then the source; padded dimensions are left out.
    auto loopOf = [&](int64_t dim) -> std::optional<unsigned> {
      if (!shardable.test(dim))
        return std::nullopt;
      return dim;
    };
    for (const Sharding &sharding : {resultShardings.front(), operandShardings.front()})
      if (failed(builder.addTensorDims(sharding, shardable.size(), loopOf)))
        return failure();
    return builder.finish();
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings, ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap, SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    auto padOp = cast<tensor::PadOp>(op);
    llvm::SmallBitVector shardable = getShardableDims(padOp);
    for (int64_t dim = 0, e = shardable.size(); dim < e; ++dim) {
      ArrayRef<GridAxis> source = splitAxesOfDim(operandShardings[0], dim);
      ArrayRef<GridAxis> result = splitAxesOfDim(resultShardings[0], dim);
      if (source != result || (!source.empty() && !shardable.test(dim)))
        return cannotPartition(op, "dimension " + std::to_string(dim));
    }
    // The padding value and the region come along unchanged; only the
    // result type shrinks with the source.
    partitionTriviallyShardableOperation(*op, partitionedOperands, operandShardings,
                                         resultShardings, partitionMap, symbolTable, builder);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// tensor.collapse_shape / tensor.expand_shape
//===----------------------------------------------------------------------===//

// The head of each reassociation group: its outermost non-unit dimension
// (leading unit dimensions hold no rows to split), or its first dimension if
// all are unit.
SmallVector<int64_t> getGroupHeads(ArrayRef<ReassociationIndices> groups,
                                   RankedTensorType expanded) {
  SmallVector<int64_t> heads;
  for (const ReassociationIndices &group : groups) {
    const int64_t *head =
        llvm::find_if(group, [&](int64_t dim) { return expanded.getDimSize(dim) != 1; });
    heads.push_back(head == group.end() ? group.front() : *head);
  }
  return heads;
}

// The collapsed side's map: each dimension reads its group head's loop.
AffineMap getHeadsMap(ArrayRef<int64_t> heads, int64_t numLoops, MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (int64_t head : heads)
    exprs.push_back(getAffineDimExpr(head, ctx));
  return AffineMap::get(numLoops, /*symbolCount=*/0, exprs, ctx);
}

// Adds the shardings of both sides of a reshape to `builder`;
// `collapsedIsResult` tells which side is the result (collapse_shape) or the
// source (expand_shape).
LogicalResult addReshapeShardings(Operation *op, LoopShardingBuilder &builder,
                                  ArrayRef<ReassociationIndices> groups, RankedTensorType expanded,
                                  const Sharding &expandedSharding,
                                  const Sharding &collapsedSharding, bool collapsedIsResult) {
  SmallVector<int64_t> heads = getGroupHeads(groups, expanded);

  auto addExpanded = [&]() -> LogicalResult {
    if (failed(builder.addTensor(expandedSharding)))
      return failure();
    for (auto [group, head] : llvm::zip_equal(groups, heads)) {
      bool restWhole = llvm::all_of(group, [&](int64_t dim) {
        return dim == head || splitAxesOfDim(expandedSharding, dim).empty();
      });
      if (restWhole && failed(builder.addLoop(head, splitAxesOfDim(expandedSharding, head))))
        return failure();
    }
    return success();
  };

  auto addCollapsed = [&]() -> LogicalResult {
    if (failed(builder.addTensor(collapsedSharding)))
      return failure();
    for (auto [dim, head] : llvm::enumerate(heads)) {
      ArrayRef<GridAxis> axes = splitAxesOfDim(collapsedSharding, dim);
      if (axes.empty())
        continue;
      std::optional<int64_t> devices = deviceCountOfAxes(op, collapsedSharding, axes);
      int64_t size = expanded.getDimSize(head);
      if (!devices || ShapedType::isDynamic(size) || size % *devices != 0)
        continue;
      if (failed(builder.addLoop(head, axes)))
        return failure();
    }
    return success();
  };

  // Result first, then the source, as upstream does.
  if (collapsedIsResult)
    return success(succeeded(addCollapsed()) && succeeded(addExpanded()));
  return success(succeeded(addExpanded()) && succeeded(addCollapsed()));
}

// Partition precondition: the expanded side is split on group heads only, the
// collapsed side exactly like the heads.
LogicalResult checkReshapeShardings(Operation *op, ArrayRef<ReassociationIndices> groups,
                                    RankedTensorType expanded, const Sharding &expandedSharding,
                                    const Sharding &collapsedSharding) {
  SmallVector<int64_t> heads = getGroupHeads(groups, expanded);
  for (auto [dim, group] : llvm::enumerate(groups)) {
    for (int64_t member : group)
      if (member != heads[dim] && !splitAxesOfDim(expandedSharding, member).empty())
        return cannotPartition(op, "expanded dimension " + std::to_string(member));
    if (splitAxesOfDim(expandedSharding, heads[dim]) != splitAxesOfDim(collapsedSharding, dim))
      return cannotPartition(op, "collapsed dimension " + std::to_string(dim));
  }
  return success();
}

RankedTensorType getLocalType(Operation *op, Type type, const Sharding &sharding,
                              SymbolTableCollection &symbolTable) {
  return cast<RankedTensorType>(
      shardType(type, getGridOrNull(op, sharding.getGridAttr(), symbolTable), sharding));
}

// collapse_shape's expanded side is its source, expand_shape's its result.
template <typename ReshapeOp>
constexpr bool kCollapses = std::is_same_v<ReshapeOp, tensor::CollapseShapeOp>;

template <typename ReshapeOp> RankedTensorType getExpandedType(ReshapeOp op) {
  return kCollapses<ReshapeOp> ? op.getSrcType() : op.getResultType();
}

// One loop per expanded dimension.
template <typename ReshapeOp>
FailureOr<ShardingOption> getReshapeShardingOption(ReshapeOp op, const Sharding &operandSharding,
                                                   const Sharding &resultSharding) {
  constexpr bool collapses = kCollapses<ReshapeOp>;
  RankedTensorType expanded = getExpandedType(op);
  LoopShardingBuilder builder(expanded.getRank());
  if (failed(addReshapeShardings(op, builder, op.getReassociationIndices(), expanded,
                                 collapses ? operandSharding : resultSharding,
                                 collapses ? resultSharding : operandSharding, collapses)))
    return failure();
  return builder.finish();
}

// Rebuilt rather than cloned: expand_shape's static_output_shape must shrink
// too.
template <typename ReshapeOp>
LogicalResult partitionReshape(ReshapeOp op, Value source, const Sharding &operandSharding,
                               const Sharding &resultSharding, IRMapping &partitionMap,
                               SymbolTableCollection &symbolTable, OpBuilder &builder) {
  constexpr bool collapses = kCollapses<ReshapeOp>;
  SmallVector<ReassociationIndices> groups = op.getReassociationIndices();
  if (failed(checkReshapeShardings(op, groups, getExpandedType(op),
                                   collapses ? operandSharding : resultSharding,
                                   collapses ? resultSharding : operandSharding)))
    return failure();
  RankedTensorType localType = getLocalType(op, op.getResultType(), resultSharding, symbolTable);
  auto local = ReshapeOp::create(builder, op->getLoc(), localType, source, groups);
  partitionMap.map(op.getResult(), local.getResult());
  return success();
}

struct CollapseShapeShardingModel
    : public ShardingInterface::ExternalModel<CollapseShapeShardingModel, tensor::CollapseShapeOp> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    return parallelLoops(cast<tensor::CollapseShapeOp>(op).getSrcType().getRank());
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    auto collapseOp = cast<tensor::CollapseShapeOp>(op);
    RankedTensorType srcType = collapseOp.getSrcType();
    MLIRContext *ctx = op->getContext();
    SmallVector<int64_t> heads = getGroupHeads(collapseOp.getReassociationIndices(), srcType);
    return {AffineMap::getMultiDimIdentityMap(srcType.getRank(), ctx),
            getHeadsMap(heads, srcType.getRank(), ctx)};
  }

  FailureOr<ShardingOption> getShardingOption(Operation *op, ArrayRef<Sharding> operandShardings,
                                              ArrayRef<Sharding> resultShardings) const {
    return getReshapeShardingOption(cast<tensor::CollapseShapeOp>(op), operandShardings[0],
                                    resultShardings[0]);
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings, ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap, SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    return partitionReshape(cast<tensor::CollapseShapeOp>(op), partitionedOperands[0],
                            operandShardings[0], resultShardings[0], partitionMap, symbolTable,
                            builder);
  }
};

struct ExpandShapeShardingModel
    : public ShardingInterface::ExternalModel<ExpandShapeShardingModel, tensor::ExpandShapeOp> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    return parallelLoops(cast<tensor::ExpandShapeOp>(op).getResultType().getRank());
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    auto expandOp = cast<tensor::ExpandShapeOp>(op);
    RankedTensorType resultType = expandOp.getResultType();
    int64_t rank = resultType.getRank();
    MLIRContext *ctx = op->getContext();
    SmallVector<int64_t> heads = getGroupHeads(expandOp.getReassociationIndices(), resultType);
    // Source, then the dynamic output_shape values, then the result.
    SmallVector<AffineMap> maps(op->getNumOperands(), scalarMap(rank, ctx));
    maps.front() = getHeadsMap(heads, rank, ctx);
    maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
    return maps;
  }

  FailureOr<ShardingOption> getShardingOption(Operation *op, ArrayRef<Sharding> operandShardings,
                                              ArrayRef<Sharding> resultShardings) const {
    return getReshapeShardingOption(cast<tensor::ExpandShapeOp>(op), operandShardings[0],
                                    resultShardings[0]);
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings, ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap, SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    auto expandOp = cast<tensor::ExpandShapeOp>(op);
    if (!expandOp.getResultType().hasStaticShape())
      return op->emitOpError() << "cannot partition: dynamic output shape";
    return partitionReshape(expandOp, partitionedOperands[0], operandShardings[0],
                            resultShardings[0], partitionMap, symbolTable, builder);
  }
};

} // namespace

void shardc::registerTensorShardingModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::PadOp::attachInterface<PadShardingModel>(*ctx);
    tensor::CollapseShapeOp::attachInterface<CollapseShapeShardingModel>(*ctx);
    tensor::ExpandShapeOp::attachInterface<ExpandShapeShardingModel>(*ctx);
  });
}
