//===- WriteInSlots.cpp - a layer loop's values made in their slots -------===//
//
// See shardc-write-in-slots in include/shardc/Optimize/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/MLIRGen/Attributes.h"
#include "shardc/Optimize/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace shardc {
#define GEN_PASS_DEF_WRITEINSLOTSPASS
#include "shardc/Optimize/Passes.h.inc"
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
  /// and the slot's place is known before the op.
  static void writeInSlot(scf::ForOp loop, tensor::InsertSliceOp insert) {
    auto stack = dyn_cast<BlockArgument>(insert.getDest());
    auto made = dyn_cast<OpResult>(insert.getSource());
    auto op = made ? dyn_cast<DestinationStyleOpInterface>(made.getOwner()) : nullptr;
    if (!stack || stack.getOwner() != loop.getBody() || !op ||
        op->getBlock() != loop.getBody())
      return;
    OpOperand *init = op.getTiedOpOperand(made);
    auto empty = init->get().getDefiningOp<tensor::EmptyOp>();
    auto before = [&](Value v) {
      return v.getParentBlock() != loop.getBody() || isa<BlockArgument>(v) ||
             v.getDefiningOp()->isBeforeInBlock(op);
    };
    if (!empty || !llvm::all_of(insert.getOffsets(), before))
      return;
    OpBuilder b(op);
    init->set(tensor::ExtractSliceOp::create(b, insert.getLoc(), insert.getSourceType(), stack,
                                             insert.getMixedOffsets(), insert.getMixedSizes(),
                                             insert.getMixedStrides()));
    if (empty->use_empty())
      empty->erase();
  }
};

} // namespace
