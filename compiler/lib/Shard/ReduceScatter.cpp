//===- ReduceScatter.cpp - all_reduce then all_slice as one reduce_scatter ===//
//
// See shardc-fuse-reduce-scatter in include/shardc/Shard/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Shard/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
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

struct FuseReduceScatterPass
    : public shardc::impl::FuseReduceScatterPassBase<FuseReduceScatterPass> {
  void runOnOperation() override {
    SmallVector<AllSliceOp> slices;
    getOperation().walk([&](AllSliceOp slice) { slices.push_back(slice); });
    for (AllSliceOp slice : slices) {
      auto reduce = slice.getInput().getDefiningOp<AllReduceOp>();
      if (!reduce || !reduce->hasOneUse() || reduce.getGrid() != slice.getGrid() ||
          reduce.getGridAxes() != slice.getGridAxes())
        continue;
      OpBuilder builder(slice);
      auto scatter = ReduceScatterOp::create(
          builder, slice.getLoc(), slice.getResult().getType(), slice.getGridAttr(),
          slice.getGridAxesAttr(), reduce.getInput(), reduce.getReductionAttr(),
          slice.getSliceAxisAttr());
      slice.getResult().replaceAllUsesWith(scatter.getResult());
      slice.erase();
      reduce.erase();
    }
  }
};

} // namespace
