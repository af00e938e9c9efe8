//===- ReduceScatter.cpp - all_reduce then all_slice as one reduce_scatter ===//
//
// See shardc-fuse-reduce-scatter in include/shardc/Shard/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Shard/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"

#define DEBUG_TYPE "shardc-fuse-reduce-scatter"

namespace shardc {
#define GEN_PASS_DEF_FUSEREDUCESCATTERPASS
#include "shardc/Shard/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace mlir::shard;

namespace {

/// Whether `op` sums over the slice axis of `sum`, reading nothing else: every
/// input is `sum`, the loop of its `sliceAxis` is a reduction that the output
/// does not index, and the body yields `out + f(inputs)`.
bool isSumOverSliceAxis(linalg::GenericOp op, Value sum, int64_t sliceAxis) {
  if (op.getNumDpsInits() != 1 ||
      !llvm::all_of(op.getDpsInputs(), [&](Value in) { return in == sum; }))
    return false;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  std::optional<unsigned> loop;
  for (AffineMap map : ArrayRef(maps).drop_back()) {
    auto dim = dyn_cast<AffineDimExpr>(map.getResult(sliceAxis));
    if (!dim || (loop && *loop != dim.getPosition()))
      return false;
    loop = dim.getPosition();
  }
  if (!loop || op.getIteratorTypesArray()[*loop] != utils::IteratorType::reduction ||
      maps.back().isFunctionOfDim(*loop))
    return false;
  Block &body = op.getRegion().front();
  Value out = body.getArguments().back();
  auto add = dyn_cast_or_null<arith::AddFOp>(
      cast<linalg::YieldOp>(body.getTerminator()).getValues()[0].getDefiningOp());
  return add && out.hasOneUse() && (add.getLhs() == out || add.getRhs() == out);
}

/// A sum over the sliced axis of an all_reduce's result (the clipping norm's
/// sum of a gradient's squares, a layer norm's bias gradient under a sequence
/// split) made to read the rank's slice instead: init + all_reduce(sum of the
/// slice from zero). The all_reduce is then the slice's alone.
void sumTheSlice(linalg::GenericOp op, AllSliceOp slice, AllReduceOp reduce) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Value init = op.getDpsInits()[0];
  auto type = cast<RankedTensorType>(init.getType());
  Value zero =
      linalg::FillOp::create(
          builder, loc,
          arith::ConstantOp::create(builder, loc, builder.getZeroAttr(type.getElementType()))
              .getResult(),
          tensor::EmptyOp::create(builder, loc, type.getShape(), type.getElementType()).getResult())
          .getResult(0);
  auto local = cast<linalg::GenericOp>(builder.clone(*op));
  for (OpOperand *input : local.getDpsInputOperands())
    input->set(slice.getResult());
  local.getDpsInitsMutable()[0].set(zero);
  Value summed =
      AllReduceOp::create(builder, loc, type, reduce.getGridAttr(), reduce.getGridAxesAttr(),
                          local.getResult(0), reduce.getReductionAttr());
  Value total =
      linalg::AddOp::create(
          builder, loc, ValueRange{init, summed},
          ValueRange{tensor::EmptyOp::create(builder, loc, type.getShape(), type.getElementType())})
          .getResult(0);
  op.getResult(0).replaceAllUsesWith(total);
  op.erase();
}

struct FuseReduceScatterPass
    : public shardc::impl::FuseReduceScatterPassBase<FuseReduceScatterPass> {
  void runOnOperation() override {
    SmallVector<AllSliceOp> slices;
    getOperation().walk([&](AllSliceOp slice) { slices.push_back(slice); });
    for (AllSliceOp slice : slices) {
      auto reduce = slice.getInput().getDefiningOp<AllReduceOp>();
      if (!reduce || reduce.getGrid() != slice.getGrid() ||
          reduce.getGridAxes() != slice.getGridAxes())
        continue;
      // The all_reduce's other users must be sums over the sliced axis.
      SmallVector<linalg::GenericOp> sums;
      bool onlySums = true;
      for (Operation *user : reduce->getUsers()) {
        if (user == slice)
          continue;
        auto sum = dyn_cast<linalg::GenericOp>(user);
        if (!sum || reduce.getReduction() != ReductionKind::Sum ||
            !isSumOverSliceAxis(sum, reduce.getResult(), slice.getSliceAxis().getSExtValue()))
          onlySums = false;
        else if (!llvm::is_contained(sums, sum))
          sums.push_back(sum);
      }
      if (!onlySums)
        continue;
      slice->moveAfter(reduce);
      for (linalg::GenericOp sum : sums)
        sumTheSlice(sum, slice, reduce);
      OpBuilder builder(slice);
      auto scatter =
          ReduceScatterOp::create(builder, slice.getLoc(), slice.getResult().getType(),
                                  slice.getGridAttr(), slice.getGridAxesAttr(), reduce.getInput(),
                                  reduce.getReductionAttr(), slice.getSliceAxisAttr());
      slice.getResult().replaceAllUsesWith(scatter.getResult());
      slice.erase();
      reduce.erase();
    }
  }
};

} // namespace
