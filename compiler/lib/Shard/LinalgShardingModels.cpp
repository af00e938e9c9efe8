//===- LinalgShardingModels.cpp - conv, pooling and generic models --------===//
//
// Upstream's linalg model (StructuredOpShardingInterface) accepts only ops
// whose indexing maps are projected permutations. A convolution or pooling
// window reads input[n, oh * s + kh * d, ow * s + kw * d, c]: propagation
// errors out when the input height is split, splits the input like the output
// when the output height is split (wrong: a window straddles two shards, a
// halo would be needed), and partition rejects the op outright.
//
// This model, attached before upstream's, works from one rule for every op
// with a map that is not a projected permutation (the "windowed" ops:
// convolution, pooling, and the generics of their gradients):
//   1. A loop is shardable when every indexing map uses it only as a plain
//      dimension, never inside a compound expression such as `oh * s + kh *
//      d`, `d1 - d4 + 2` or `(d1 + p) floordiv k`. For conv_2d_nhwc_hwcf
//      (loops n, oh, ow, f, kh, kw, c) that is n, f and c; for pooling_nhwc_*
//      (loops n, oh, ow, c, kh, kw) n and c; for the filter gradient (kh, kw,
//      c, f, n, oh, ow) c, f and n (a reduction: a split batch gives a partial
//      sum and an all_reduce); for the input gradient (n, i, j, c, kh, kw, f)
//      n, c and f.
//   2. Propagation: the option splits the shardable loops as the operand and
//      result shardings say (upstream's conflict rules); a split of any other
//      dimension is left out, so the tensor is annotated replicated there and
//      propagation puts the reshard (an all-gather) in front of the op. A
//      tensor dimension is split only when a shardable loop alone indexes it.
//   3. Partition: parallel loops only -> clone on local shapes. A split
//      reduction loop (conv input channel c) -> every rank computes a partial
//      sum: the init is used by one rank of each reduction group only (the
//      others start from the combiner's neutral element), then an all_reduce
//      with the combiner's kind over the reduction axes, as upstream does for
//      matmul.
//
// linalg.generic gets the model too; one whose maps are projected
// permutations gets upstream's propagation and loop split, except for one
// silent miscompile the model fixes: upstream clones the body unchanged, so a
// `linalg.index` of a split loop yields the local position (0..n/p-1 on every
// rank) instead of the global one (one_hot over split classes, argmax over a
// split axis). Here each such index gets the rank's offset along the loop's
// grid axes added. Attaching a model to linalg.generic pre-empts upstream's
// for every generic, hence the faithful copy of the rest.
//
//===----------------------------------------------------------------------===//

#include "shardc/Shard/ShardingModels.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Shard/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::shard;
using shardc::shard_detail::LoopShardingBuilder;
using shardc::shard_detail::splitAxesOfDim;

namespace {

// Loops that no indexing map uses inside a compound expression (step 1).
llvm::SmallBitVector getShardableLoops(linalg::LinalgOp op) {
  llvm::SmallBitVector shardable(op.getNumLoops(), true);
  for (AffineMap map : op.getIndexingMapsArray())
    for (AffineExpr expr : map.getResults()) {
      if (isa<AffineDimExpr>(expr))
        continue;
      expr.walk([&](AffineExpr sub) {
        if (auto dim = dyn_cast<AffineDimExpr>(sub))
          shardable.reset(dim.getPosition());
      });
    }
  return shardable;
}

// The loop a tensor dimension may be split along, if any.
std::optional<unsigned> shardableLoopOf(AffineExpr expr, const llvm::SmallBitVector &shardable) {
  auto dim = dyn_cast<AffineDimExpr>(expr);
  if (!dim || !shardable.test(dim.getPosition()))
    return std::nullopt;
  return dim.getPosition();
}

// Operand maps followed by one map per result (that of its init).
SmallVector<AffineMap> getOperandAndResultMaps(linalg::LinalgOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (int64_t i = 0, e = op.getNumDpsInits(); i < e; ++i)
    maps.push_back(maps[op.getDpsInitOperand(i)->getOperandNumber()]);
  return maps;
}

// Same table as upstream's linalg model: the collective that finishes a
// reduction split over ranks.
ReductionKind getReductionKind(Operation *combiner) {
  return llvm::TypeSwitch<Operation *, ReductionKind>(combiner)
      .Case<arith::AddFOp, arith::AddIOp>([](auto) { return ReductionKind::Sum; })
      .Case<arith::MulFOp, arith::MulIOp>([](auto) { return ReductionKind::Product; })
      .Case<arith::MaximumFOp, arith::MaxSIOp, arith::MaxUIOp>(
          [](auto) { return ReductionKind::Max; })
      .Case<arith::MinimumFOp, arith::MinSIOp, arith::MinUIOp>(
          [](auto) { return ReductionKind::Min; })
      .Case<arith::OrIOp>([](auto) { return ReductionKind::BitwiseOr; })
      .Case<arith::XOrIOp>([](auto) { return ReductionKind::BitwiseXor; })
      .Case<arith::AndIOp>([](auto) { return ReductionKind::BitwiseAnd; })
      .Default([](Operation *) { return ReductionKind::Generic; });
}

Operation *getCombiner(linalg::LinalgOp op) {
  SmallVector<Operation *> combinerOps;
  Value reduced = matchReduction(op.getRegionOutputArgs(), 0, combinerOps);
  if (!reduced || combinerOps.size() != 1)
    return nullptr;
  return combinerOps.front();
}

// Rewrites every `linalg.index` of a split loop in `localOp` (a clone on
// local shapes) to the global index: local index + the rank's linear position
// along the loop's grid axes * the loop's local extent.
LogicalResult globalizeIndices(linalg::LinalgOp localOp, ArrayRef<int64_t> globalLoopRanges,
                               ShardingArrayRef loopAxes, StringRef gridName, GridOp grid,
                               OpBuilder &builder) {
  SmallVector<linalg::IndexOp> indexOps;
  localOp->walk([&](linalg::IndexOp indexOp) {
    if (indexOp.getDim() < loopAxes.size() && !loopAxes[indexOp.getDim()].empty())
      indexOps.push_back(indexOp);
  });
  if (indexOps.empty())
    return success();

  // Offsets are computed in front of the op: its body may use them, values
  // defined after it would not dominate.
  OpBuilder::InsertionGuard guard(builder);
  ImplicitLocOpBuilder b(localOp.getLoc(), builder);
  b.setInsertionPoint(localOp);
  DenseMap<uint64_t, Value> offsets;
  for (linalg::IndexOp indexOp : indexOps) {
    uint64_t loop = indexOp.getDim();
    if (offsets.count(loop))
      continue;
    int64_t devices = collectiveProcessGroupSize(loopAxes[loop], grid);
    int64_t size = globalLoopRanges[loop];
    if (ShapedType::isDynamic(size) || ShapedType::isDynamic(devices) || size % devices != 0)
      return localOp->emitOpError() << "cannot partition: linalg.index of loop " << loop
                                    << " needs a static extent divisible by its devices";
    Value position = createProcessLinearIndex(gridName, loopAxes[loop], b);
    Value extent = arith::ConstantIndexOp::create(b, size / devices);
    offsets[loop] = arith::MulIOp::create(b, position, extent);
  }
  for (linalg::IndexOp indexOp : indexOps) {
    b.setInsertionPointAfter(indexOp);
    auto global = arith::AddIOp::create(b, indexOp.getResult(), offsets[indexOp.getDim()]);
    indexOp.getResult().replaceAllUsesExcept(global, global);
  }
  return success();
}

// Split reduction: only rank 0 of each reduction group starts from the init;
// the others start from the combiner's neutral element, so that the
// all_reduce after the local op adds the init exactly once (upstream's scheme
// for matmul). Leaves the local op's results in `localMap`.
LogicalResult partitionWithSplitReduction(linalg::LinalgOp op, ArrayRef<Value> partitionedOperands,
                                          ArrayRef<Sharding> operandShardings,
                                          ArrayRef<Sharding> resultShardings,
                                          ArrayRef<GridAxis> reductionAxes, StringRef gridName,
                                          IRMapping &localMap, SymbolTableCollection &symbolTable,
                                          OpBuilder &builder) {
  Operation *combiner = getCombiner(op);
  std::optional<TypedAttr> neutral = combiner ? arith::getNeutralElement(combiner) : std::nullopt;
  if (op.getNumDpsInits() != 1 || !neutral || getReductionKind(combiner) == ReductionKind::Generic)
    return op->emitOpError() << "cannot partition: split reduction without a known combiner";

  ImplicitLocOpBuilder b(op.getLoc(), builder);
  Location loc = op.getLoc();
  unsigned initNumber = op.getDpsInitOperand(0)->getOperandNumber();
  Value localInit = partitionedOperands[initNumber];
  Value groupIndex = createProcessLinearIndex(gridName, reductionAxes, b);
  Value zero = arith::ConstantIndexOp::create(b, 0);
  Value isLead =
      arith::CmpIOp::create(b, b.getI1Type(), arith::CmpIPredicate::eq, groupIndex, zero);
  auto ifOp = scf::IfOp::create(b, localInit.getType(), isLead,
                                /*addThenBlock=*/true, /*addElseBlock=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(&ifOp.getThenRegion().front());
    scf::YieldOp::create(b, localInit);
    b.setInsertionPointToEnd(&ifOp.getElseRegion().front());
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, localInit);
    Value empty = tensor::EmptyOp::create(b, loc, sizes, neutral->getType());
    Value neutralValue = arith::ConstantOp::create(b, loc, *neutral);
    Value filled = linalg::FillOp::create(b, loc, neutralValue, empty).getResult(0);
    scf::YieldOp::create(b, filled);
  }

  SmallVector<Value> operands(partitionedOperands);
  operands[initNumber] = ifOp.getResult(0);
  for (auto [original, local] : llvm::zip_equal(op->getOperands(), operands))
    localMap.map(original, local);
  partitionTriviallyShardableOperation(*op, operands, operandShardings, resultShardings, localMap,
                                       symbolTable, b);
  return success();
}

// Partition of a linalg op once the split of each loop is known: clone on
// local shapes (with the split-reduction init when a reduction loop is
// split), globalize linalg.index, then all_reduce partial results.
LogicalResult partitionLinalgOp(linalg::LinalgOp op, ShardingArrayRef loopAxes,
                                ArrayRef<Value> partitionedOperands,
                                ArrayRef<Sharding> operandShardings,
                                ArrayRef<Sharding> resultShardings, IRMapping &partitionMap,
                                SymbolTableCollection &symbolTable, OpBuilder &builder) {
  SmallVector<GridAxis> reductionAxes = getReductionGridAxes(op.getIteratorTypesArray(), loopAxes);
  bool anySplit =
      llvm::any_of(loopAxes, [](const SmallVector<GridAxis> &axes) { return !axes.empty(); });
  if (!anySplit) {
    partitionTriviallyShardableOperation(*op, partitionedOperands, operandShardings,
                                         resultShardings, partitionMap, symbolTable, builder);
    return success();
  }

  // Some loop is split, so some annotation names the grid.
  FlatSymbolRefAttr gridAttr;
  for (const Sharding &sharding : llvm::concat<const Sharding>(operandShardings, resultShardings))
    if (sharding && !gridAttr)
      gridAttr = sharding.getGridAttr();
  GridOp grid = getGridOrNull(op, gridAttr, symbolTable);
  if (!grid)
    return op->emitOpError() << "cannot partition: no grid";
  StringRef gridName = grid.getSymName();

  // A private map for the clone (the pass-wide one must keep the original
  // init's partitioned value), holding the values the body captures too:
  // left unmapped they would point into the block partition erases.
  IRMapping localMap;
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  for (Value value : captured)
    if (Value local = partitionMap.lookupOrNull(value))
      localMap.map(value, local);
  if (reductionAxes.empty()) {
    for (auto [original, local] : llvm::zip_equal(op->getOperands(), partitionedOperands))
      localMap.map(original, local);
    partitionTriviallyShardableOperation(*op, partitionedOperands, operandShardings,
                                         resultShardings, localMap, symbolTable, builder);
  } else if (failed(partitionWithSplitReduction(op, partitionedOperands, operandShardings,
                                                resultShardings, reductionAxes, gridName, localMap,
                                                symbolTable, builder))) {
    return failure();
  }

  auto localOp = cast<linalg::LinalgOp>(localMap.lookup(op->getResult(0)).getDefiningOp());
  if (localOp.hasIndexSemantics() && failed(globalizeIndices(localOp, op.getStaticLoopRanges(),
                                                             loopAxes, gridName, grid, builder)))
    return failure();

  ImplicitLocOpBuilder b(op.getLoc(), builder);
  ReductionKind kind =
      reductionAxes.empty() ? ReductionKind::Sum : getReductionKind(getCombiner(op));
  for (OpResult result : op->getResults()) {
    Value local = localMap.lookup(result);
    if (!reductionAxes.empty())
      local = AllReduceOp::create(b, local, gridName, reductionAxes, kind);
    partitionMap.map(result, local);
  }
  return success();
}

// Step 2. Results first, then operands, as upstream does.
FailureOr<ShardingOption> getWindowedShardingOption(linalg::LinalgOp op,
                                                    ArrayRef<Sharding> operandShardings,
                                                    ArrayRef<Sharding> resultShardings) {
  llvm::SmallBitVector shardable = getShardableLoops(op);
  SmallVector<AffineMap> maps = getOperandAndResultMaps(op);
  unsigned numOperands = op->getNumOperands();
  LoopShardingBuilder builder(op.getNumLoops());

  auto addTensor = [&](const Sharding &sharding, AffineMap map) {
    return builder.addTensorDims(sharding, map.getNumResults(), [&](int64_t dim) {
      return shardableLoopOf(map.getResult(dim), shardable);
    });
  };
  for (auto [i, sharding] : llvm::enumerate(resultShardings))
    if (failed(addTensor(sharding, maps[numOperands + i])))
      return failure();
  for (auto [i, sharding] : llvm::enumerate(operandShardings))
    if (failed(addTensor(sharding, maps[i])))
      return failure();
  return builder.finish();
}

// Step 2, the annotations an option implies: a dimension indexed by a
// shardable loop alone is split like the loop, any other is replicated.
// Upstream's default would split a compound dimension along a split loop in
// it, and rejects maps with constants or floordiv, such as the input
// gradient's `d1 - d4 + 2`.
std::vector<Sharding> getWindowedAnnotations(linalg::LinalgOp op, const ShardingOption &option) {
  llvm::SmallBitVector shardable = getShardableLoops(op);
  SmallVector<AffineMap> maps = getOperandAndResultMaps(op);
  MLIRContext *ctx = op->getContext();
  std::vector<Sharding> shardings;
  auto values = llvm::concat<Value>(op->getOperands(), op->getResults());
  for (auto [value, map] : llvm::zip_equal(values, maps)) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type) {
      shardings.emplace_back();
      continue;
    }
    ShardingArray splitAxes(map.getNumResults());
    for (auto [dim, expr] : llvm::enumerate(map.getResults())) {
      std::optional<unsigned> loop = shardableLoopOf(expr, shardable);
      if (loop && *loop < option.shardingArray.size())
        splitAxes[dim] = option.shardingArray[*loop];
    }
    removeTrailingEmptySubArray(splitAxes);
    auto toAttr = [&](ArrayRef<GridAxis> axes) { return GridAxesAttr::get(ctx, axes); };
    shardings.push_back(Sharding::get(option.grid, llvm::map_to_vector(splitAxes, toAttr)));
  }
  return shardings;
}

// Results first, then operands, as upstream does.
LogicalResult addWindowedAnnotations(linalg::LinalgOp op, OpBuilder &b,
                                     const ShardingOption &option) {
  std::vector<Sharding> shardings = getWindowedAnnotations(op, option);
  unsigned numOperands = op->getNumOperands();
  for (OpResult result : op->getResults())
    maybeInsertTargetShardingAnnotation(shardings[numOperands + result.getResultNumber()], result,
                                        b);
  for (OpOperand &operand : op->getOpOperands()) {
    OpBuilder::InsertionGuard guard(b);
    maybeInsertSourceShardingAnnotation(shardings[operand.getOperandNumber()], operand, b);
  }
  return success();
}

// Step 3.
FailureOr<ShardingArray> getWindowedPartitionLoopAxes(linalg::LinalgOp linalgOp,
                                                      ArrayRef<Sharding> operandShardings,
                                                      ArrayRef<Sharding> resultShardings) {
  llvm::SmallBitVector shardable = getShardableLoops(linalgOp);
  SmallVector<AffineMap> maps = getOperandAndResultMaps(linalgOp);

  // Recover the loop split from the annotations, refusing any split that
  // step 2 never produces: computing it locally would be silently wrong.
  ShardingArray loopAxes(linalgOp.getNumLoops());
  std::vector<Sharding> shardings(operandShardings.begin(), operandShardings.end());
  llvm::append_range(shardings, resultShardings);
  for (auto [i, sharding] : llvm::enumerate(shardings)) {
    for (auto [dim, expr] : llvm::enumerate(maps[i].getResults())) {
      ArrayRef<GridAxis> axes = splitAxesOfDim(sharding, dim);
      if (axes.empty())
        continue;
      std::optional<unsigned> loop = shardableLoopOf(expr, shardable);
      if (!loop || (!loopAxes[*loop].empty() && ArrayRef<GridAxis>(loopAxes[*loop]) != axes))
        return linalgOp->emitOpError()
               << "cannot partition: dimension " << dim << " of "
               << (i < operandShardings.size() ? "operand " : "result ")
               << (i < operandShardings.size() ? i : i - operandShardings.size())
               << " is split in a way the op cannot compute locally";
      loopAxes[*loop].assign(axes.begin(), axes.end());
    }
  }
  return loopAxes;
}

// Whether `op` takes the windowed rule (steps 1-3): some map is not a
// projected permutation (convolution, pooling, their gradients' generics).
// The other ops get upstream's propagation and loop split.
bool isWindowed(linalg::LinalgOp op) {
  return !llvm::all_of(getOperandAndResultMaps(op),
                       [](AffineMap map) { return map.isProjectedPermutation(); });
}

// The model of every op it is attached to: upstream's view of a linalg op,
// the windowed rule or upstream's propagation, and partitionLinalgOp.
template <typename OpTy>
struct LinalgOpShardingModel
    : public ShardingInterface::ExternalModel<LinalgOpShardingModel<OpTy>, OpTy> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    return cast<linalg::LinalgOp>(op).getIteratorTypesArray();
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    return getOperandAndResultMaps(cast<linalg::LinalgOp>(op));
  }

  SmallVector<ReductionKind> getReductionLoopIteratorKinds(Operation *op) const {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    Operation *combiner = getCombiner(linalgOp);
    ReductionKind kind = combiner ? getReductionKind(combiner) : ReductionKind::Generic;
    return SmallVector<ReductionKind>(linalgOp.getNumReductionLoops(), kind);
  }

  FailureOr<ShardingOption> getShardingOption(Operation *op, ArrayRef<Sharding> operandShardings,
                                              ArrayRef<Sharding> resultShardings) const {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    if (isWindowed(linalgOp))
      return getWindowedShardingOption(linalgOp, operandShardings, resultShardings);
    return shard::detail::defaultGetShardingOption(op, operandShardings, resultShardings);
  }

  FailureOr<std::vector<Sharding>> getShardingAnnotations(Operation *op,
                                                          const ShardingOption &option) const {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    if (isWindowed(linalgOp))
      return getWindowedAnnotations(linalgOp, option);
    return shard::detail::defaultGetShardingAnnotations(op, option);
  }

  LogicalResult addShardingAnnotations(Operation *op, OpBuilder &b,
                                       const ShardingOption &option) const {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    if (isWindowed(linalgOp))
      return addWindowedAnnotations(linalgOp, b, option);
    return shard::detail::defaultAddShardingAnnotations(op, b, option);
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings, ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap, SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    // Upstream's helper reads the operand shardings alone.
    FailureOr<ShardingArray> loopAxes =
        isWindowed(linalgOp)
            ? getWindowedPartitionLoopAxes(linalgOp, operandShardings, resultShardings)
            : getGridAxisAssignmentForLoopIterators(operandShardings, resultShardings,
                                                    linalgOp.getIteratorTypesArray(),
                                                    linalgOp.getIndexingMapsArray());
    if (failed(loopAxes))
      return failure();
    return partitionLinalgOp(linalgOp, *loopAxes, partitionedOperands, operandShardings,
                             resultShardings, partitionMap, symbolTable, builder);
  }
};

template <typename... OpTys> void attachModels(MLIRContext *ctx) {
  (OpTys::template attachInterface<LinalgOpShardingModel<OpTys>>(*ctx), ...);
}

} // namespace

void shardc::registerLinalgShardingModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, linalg::LinalgDialect *) {
    // Partition builds arith, scf, tensor and linalg ops and collectives;
    // make sure their dialects are loaded (as upstream's linalg model does).
    DialectRegistry deps;
    deps.insert<affine::AffineDialect, arith::ArithDialect, scf::SCFDialect, tensor::TensorDialect,
                shard::ShardDialect>();
    ctx->appendDialectRegistry(deps);
    for (StringRef name : deps.getDialectNames())
      ctx->getOrLoadDialect(name);

    attachModels<linalg::Conv2DNhwcHwcfOp, linalg::PoolingNhwcSumOp, linalg::PoolingNhwcMaxOp,
                 linalg::GenericOp>(ctx);
  });
}
