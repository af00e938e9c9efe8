//===- WriteInSlots.cpp - a layer loop's values made in their slots -------===//
//
// See shardc-write-in-slots in include/shardc/Optimize/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/IR/Attributes.h"
#include "shardc/Schedule/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace shardc {
#define GEN_PASS_DEF_WRITEINSLOTSPASS
#include "shardc/Schedule/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

struct WriteInSlotsPass : public shardc::impl::WriteInSlotsPassBase<WriteInSlotsPass> {
  void runOnOperation() override {
    getOperation().walk([](scf::ForOp loop) {
      if (!loop->hasAttr(shardc::kLayerLoopAttr))
        return;
      loop.getBody()->walk([&](tensor::InsertSliceOp insert) { writeInSlot(loop, insert); });
    });
  }

  /// `insert`'s value made in its slot, where its op's init is an empty tensor
  /// or a fill of one (a contraction's zeros, which then fill the slot) and the
  /// slot's place is known before the op.
  static void writeInSlot(scf::ForOp loop, tensor::InsertSliceOp insert) {
    auto stack = dyn_cast<BlockArgument>(insert.getDest());
    auto made = dyn_cast<OpResult>(insert.getSource());
    auto op = made ? dyn_cast<DestinationStyleOpInterface>(made.getOwner()) : nullptr;
    if (!stack || stack.getOwner() != loop.getBody() || !op || op->getBlock() != loop.getBody())
      return;
    OpOperand *init = op.getTiedOpOperand(made);
    auto fill = init->get().getDefiningOp<linalg::FillOp>();
    Value unfilled = fill ? fill.getDpsInits()[0] : init->get();
    auto empty = unfilled.getDefiningOp<tensor::EmptyOp>();
    auto before = [&](Value v) {
      return v.getParentBlock() != loop.getBody() || isa<BlockArgument>(v) ||
             v.getDefiningOp()->isBeforeInBlock(op);
    };
    if (!empty || !llvm::all_of(insert.getOffsets(), before) ||
        (fill && !llvm::all_of(fill.getInputs(), before)))
      return;
    OpBuilder b(op);
    Value slot = tensor::ExtractSliceOp::create(b, insert.getLoc(), insert.getSourceType(), stack,
                                                insert.getMixedOffsets(), insert.getMixedSizes(),
                                                insert.getMixedStrides());
    if (fill)
      slot =
          linalg::FillOp::create(b, fill.getLoc(), fill.getInputs(), ValueRange{slot}).getResult(0);
    init->set(slot);
    if (fill && fill->use_empty())
      fill->erase();
    if (empty->use_empty())
      empty->erase();
  }
};

} // namespace
