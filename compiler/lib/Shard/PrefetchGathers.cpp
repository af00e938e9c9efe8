//===- PrefetchGathers.cpp - start each parameter's gather one use early ---===//
//
// See shardc-prefetch-gathers in include/shardc/Shard/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Shard/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

namespace shardc {
#define GEN_PASS_DEF_PREFETCHGATHERSPASS
#include "shardc/Shard/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

/// Whether `value` is available before `op`, in `op`'s block.
bool availableBefore(Value value, Operation *op) {
  Operation *def = value.getDefiningOp();
  Block *block = def ? def->getBlock() : cast<BlockArgument>(value).getOwner();
  if (block != op->getBlock())
    return block->getParent()->isAncestor(op->getParentRegion());
  return !def || def->isBeforeInBlock(op);
}

struct PrefetchGathersPass : public shardc::impl::PrefetchGathersPassBase<PrefetchGathersPass> {
  void runOnOperation() override {
    getOperation().walk([](Block *block) {
      SmallVector<shard::AllGatherOp> gathers;
      for (auto gather : block->getOps<shard::AllGatherOp>())
        if (gather->hasAttr(shardc::kRegatherAttr))
          gathers.push_back(gather);
      for (size_t k = 1; k < gathers.size(); ++k) {
        Operation *previousUse = shardc::firstReaderInBlock(gathers[k - 1].getResult(), block);
        shard::AllGatherOp gather = gathers[k];
        if (previousUse->isBeforeInBlock(gather) &&
            availableBefore(gather.getInput(), previousUse))
          gather->moveBefore(previousUse);
      }
    });
  }
};

} // namespace
