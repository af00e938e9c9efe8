//===- SliceEarly.cpp - slice the operands, not the result ----------------===//
//
// See shardc-slice-early in include/shardc/Shard/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Shard/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/TypeSwitch.h"

namespace shardc {
#define GEN_PASS_DEF_SLICEEARLYPASS
#include "shardc/Shard/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace mlir::shard;

namespace {

// How many blocks `slice` cuts its dimension into.
int64_t blocksOf(AllSliceOp slice) {
  int64_t axis = slice.getSliceAxis().getSExtValue();
  return cast<RankedTensorType>(slice.getInput().getType()).getDimSize(axis) /
         slice.getResult().getType().getDimSize(axis);
}

// `value` sliced on `dim` as `slice` slices its input: same grid and axes, so
// the same number of blocks, each rank the same one.
Value sliceLike(AllSliceOp slice, Value value, int64_t dim, PatternRewriter &rewriter) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] /= blocksOf(slice);
  return AllSliceOp::create(rewriter, slice.getLoc(), type.clone(shape), slice.getGridAttr(),
                            slice.getGridAxesAttr(), value, rewriter.getIndexAttr(dim));
}

// A linalg op whose sliced result dimension is a parallel loop that every map
// uses as a plain dimension (at most once) and whose body does not read the
// loop's index: each rank's block of the result is the op on the blocks of
// the operands that the loop indexes.
LogicalResult liftOverLinalg(AllSliceOp slice, linalg::LinalgOp op, PatternRewriter &rewriter) {
  if (op->getNumResults() != 1 || !op.hasPureTensorSemantics())
    return failure();
  int64_t axis = slice.getSliceAxis().getSExtValue();
  auto loopExpr = dyn_cast<AffineDimExpr>(
      op.getIndexingMapMatchingResult(cast<OpResult>(slice.getInput())).getResult(axis));
  if (!loopExpr)
    return failure();
  unsigned loop = loopExpr.getPosition();
  if (op.getIteratorTypesArray()[loop] != utils::IteratorType::parallel)
    return failure();
  bool readsIndex = false;
  op->walk([&](linalg::IndexOp index) { readsIndex |= index.getDim() == loop; });
  if (readsIndex)
    return failure();

  SmallVector<Value> operands;
  for (OpOperand &operand : op->getOpOperands()) {
    std::optional<int64_t> dim;
    for (auto [i, expr] : llvm::enumerate(op.getMatchingIndexingMap(&operand).getResults())) {
      if (!expr.isFunctionOfDim(loop))
        continue;
      if (!isa<AffineDimExpr>(expr) || dim)
        return failure();
      dim = i;
    }
    operands.push_back(dim ? sliceLike(slice, operand.get(), *dim, rewriter) : operand.get());
  }
  Operation *local = rewriter.clone(*op);
  local->setOperands(operands);
  local->getResult(0).setType(slice.getResult().getType());
  rewriter.replaceOp(slice, local->getResults());
  rewriter.eraseOp(op);
  return success();
}

// tensor.pad with no padding on the sliced dimension, and a padding value
// that does not depend on the position there.
LogicalResult liftOverPad(AllSliceOp slice, tensor::PadOp pad, PatternRewriter &rewriter) {
  int64_t axis = slice.getSliceAxis().getSExtValue();
  if (pad.getStaticLow()[axis] != 0 || pad.getStaticHigh()[axis] != 0 ||
      !pad.getRegion().getArgument(axis).use_empty())
    return failure();
  Value source = sliceLike(slice, pad.getSource(), axis, rewriter);
  auto local = tensor::PadOp::create(rewriter, pad.getLoc(), slice.getResult().getType(), source,
                                     pad.getStaticLow(), pad.getStaticHigh(), pad.getLow(),
                                     pad.getHigh(), pad.getNofold());
  rewriter.inlineRegionBefore(pad.getRegion(), local.getRegion(), local.getRegion().end());
  rewriter.replaceOp(slice, local.getResult());
  rewriter.eraseOp(pad);
  return success();
}

// tensor.collapse_shape: the contiguous blocks of a collapsed dimension are
// the blocks of the outermost source dimension of size > 1 in its group,
// when the blocks divide that one.
LogicalResult liftOverCollapse(AllSliceOp slice, tensor::CollapseShapeOp collapse,
                               PatternRewriter &rewriter) {
  SmallVector<ReassociationIndices> groups = collapse.getReassociationIndices();
  ArrayRef<int64_t> group = groups[slice.getSliceAxis().getSExtValue()];
  ArrayRef<int64_t> sourceShape = collapse.getSrcType().getShape();
  const int64_t *outer = llvm::find_if(group, [&](int64_t dim) { return sourceShape[dim] != 1; });
  if (outer == group.end() || sourceShape[*outer] % blocksOf(slice) != 0)
    return failure();
  Value source = sliceLike(slice, collapse.getSrc(), *outer, rewriter);
  rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(slice, slice.getResult().getType(), source,
                                                       groups);
  rewriter.eraseOp(collapse);
  return success();
}

// An all_reduce over other mesh axes than the slice's: every rank of a
// reduction group keeps the same block, so reducing the blocks gives it, and
// moves 1/N of the bytes.
LogicalResult liftOverAllReduce(AllSliceOp slice, AllReduceOp reduce, PatternRewriter &rewriter) {
  if (reduce.getGrid() != slice.getGrid() || llvm::any_of(slice.getGridAxes(), [&](GridAxis axis) {
        return llvm::is_contained(reduce.getGridAxes(), axis);
      }))
    return failure();
  Value block = sliceLike(slice, reduce.getInput(), slice.getSliceAxis().getSExtValue(), rewriter);
  rewriter.replaceOpWithNewOp<AllReduceOp>(slice, slice.getResult().getType(), reduce.getGridAttr(),
                                           reduce.getGridAxesAttr(), block,
                                           reduce.getReductionAttr());
  rewriter.eraseOp(reduce);
  return success();
}

// scf.if with one result (the init of a split reduction: the whole init on
// one rank of the group, the neutral element on the others): each branch
// yields its block.
LogicalResult liftOverIf(AllSliceOp slice, scf::IfOp ifOp, PatternRewriter &rewriter) {
  if (ifOp->getNumResults() != 1 || !ifOp.elseBlock())
    return failure();
  int64_t axis = slice.getSliceAxis().getSExtValue();
  for (Block *branch : {ifOp.thenBlock(), ifOp.elseBlock()}) {
    auto yield = cast<scf::YieldOp>(branch->getTerminator());
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(yield);
    Value block = sliceLike(slice, yield.getOperand(0), axis, rewriter);
    rewriter.modifyOpInPlace(yield, [&] { yield->setOperand(0, block); });
  }
  rewriter.modifyOpInPlace(ifOp, [&] { ifOp.getResult(0).setType(slice.getResult().getType()); });
  rewriter.replaceOp(slice, ifOp.getResults());
  return success();
}

// A block of a splat constant or of an empty tensor is a smaller one.
LogicalResult shrinkFill(AllSliceOp slice, PatternRewriter &rewriter) {
  auto type = cast<RankedTensorType>(slice.getResult().getType());
  if (slice.getInput().getDefiningOp<tensor::EmptyOp>()) {
    rewriter.replaceOpWithNewOp<tensor::EmptyOp>(slice, type.getShape(), type.getElementType());
    return success();
  }
  SplatElementsAttr splat;
  if (!matchPattern(slice.getInput(), m_Constant(&splat)))
    return failure();
  rewriter.replaceOpWithNewOp<arith::ConstantOp>(slice, splat.resizeSplat(type));
  return success();
}

struct LiftSlice : OpRewritePattern<AllSliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AllSliceOp slice, PatternRewriter &rewriter) const override {
    Operation *producer = slice.getInput().getDefiningOp();
    if (!producer || !cast<RankedTensorType>(slice.getInput().getType()).hasStaticShape())
      return failure();
    if (succeeded(shrinkFill(slice, rewriter)))
      return success();
    // The producer goes away: no other user may need the whole value.
    if (!producer->hasOneUse())
      return failure();
    return llvm::TypeSwitch<Operation *, LogicalResult>(producer)
        .Case([&](linalg::LinalgOp op) { return liftOverLinalg(slice, op, rewriter); })
        .Case([&](tensor::PadOp op) { return liftOverPad(slice, op, rewriter); })
        .Case([&](tensor::CollapseShapeOp op) { return liftOverCollapse(slice, op, rewriter); })
        .Case([&](AllReduceOp op) { return liftOverAllReduce(slice, op, rewriter); })
        .Case([&](scf::IfOp op) { return liftOverIf(slice, op, rewriter); })
        .Default([](Operation *) { return failure(); });
  }
};

struct SliceEarlyPass : public shardc::impl::SliceEarlyPassBase<SliceEarlyPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LiftSlice>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
