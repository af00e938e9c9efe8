//===- UnitAxes.cpp - collectives over mesh axes of size 1 ----------------===//
//
// See shardc-drop-unit-axes in include/shardc/Shard/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Shard/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/TypeSwitch.h"

#define DEBUG_TYPE "shardc-drop-unit-axes"

namespace shardc {
#define GEN_PASS_DEF_DROPUNITAXESPASS
#include "shardc/Shard/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace mlir::shard;

namespace {

/// Drops the size-1 axes of one collective; erases it when none is left.
template <typename Collective> void dropUnitAxes(Collective op, SymbolTableCollection &symbols) {
  GridOp grid = getGrid(op, op.getGridAttr(), symbols);
  if (!grid)
    return;
  ArrayRef<int64_t> sizes = grid.getShape();
  SmallVector<int16_t> kept;
  for (int16_t axis : op.getGridAxes())
    if (sizes[axis] != 1)
      kept.push_back(axis);
  if (kept.size() == op.getGridAxes().size())
    return;
  if (!kept.empty()) {
    op.setGridAxes(kept);
    return;
  }
  // Over size-1 axes alone the collective is the identity; an all_reduce
  // that also converts its element type is kept.
  if (op.getInput().getType() != op.getResult().getType())
    return;
  op.getResult().replaceAllUsesWith(op.getInput());
  op.erase();
}

struct DropUnitAxesPass : public shardc::impl::DropUnitAxesPassBase<DropUnitAxesPass> {
  void runOnOperation() override {
    SymbolTableCollection symbols;
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops)
      llvm::TypeSwitch<Operation *>(op)
          .Case<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, AllSliceOp>(
              [&](auto collective) { dropUnitAxes(collective, symbols); });
  }
};

} // namespace
