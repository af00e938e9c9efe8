//===- UpdateInPlace.cpp - new parameters made over the old ones ----------===//
//
// See shardc-update-in-place in include/shardc/Optimize/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Optimize/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace shardc {
#define GEN_PASS_DEF_UPDATEINPLACEPASS
#include "shardc/Optimize/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

struct UpdateInPlacePass : public shardc::impl::UpdateInPlacePassBase<UpdateInPlacePass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    // The tensor each writable buffer argument is read as.
    llvm::DenseMap<Value, Value> readAs;
    function.walk([&](bufferization::ToTensorOp read) {
      if (read.getRestrict() && read.getWritable() && isa<BlockArgument>(read.getBuffer()))
        readAs[read.getBuffer()] = read.getResult();
    });
    function.walk([&](bufferization::MaterializeInDestinationOp store) {
      auto made = dyn_cast<OpResult>(store.getSource());
      auto op = made ? dyn_cast<DestinationStyleOpInterface>(made.getOwner()) : nullptr;
      Value old = readAs.lookup(store.getDest());
      if (!op || !old || store.getRestrict() || !made.hasOneUse())
        return;
      // An empty init's contents are never read, so the old value may stand in
      // for it: bufferization then writes in place where nothing reads the old
      // value afterwards, and copies where something does.
      OpOperand *init = op.getTiedOpOperand(made);
      auto empty = init->get().getDefiningOp<tensor::EmptyOp>();
      if (!empty || old.getType() != init->get().getType())
        return;
      init->set(old);
      if (empty->use_empty())
        empty->erase();
    });
  }
};

} // namespace
