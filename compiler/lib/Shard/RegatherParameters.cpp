//===- RegatherParameters.cpp - ZeRO-3: gather a parameter where it is read ===//
//
// See shardc-regather-parameters in include/shardc/Shard/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/IR/Attributes.h"
#include "shardc/Shard/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/SetVector.h"

namespace shardc {
#define GEN_PASS_DEF_REGATHERPARAMETERSPASS
#include "shardc/Shard/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

bool gathersParameter(shard::AllGatherOp gather, func::FuncOp fn) {
  auto arg = dyn_cast<BlockArgument>(gather.getInput());
  if (!arg || arg.getOwner() != &fn.getBody().front())
    return false;
  auto role = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), shardc::kRoleAttr);
  return role && role.getValue() == shardc::kParameterRole;
}

struct RegatherParametersPass
    : public shardc::impl::RegatherParametersPassBase<RegatherParametersPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal())
      return;
    llvm::SetVector<Operation *> gathers;
    fn.walk([&](shard::AllGatherOp gather) {
      if (gathersParameter(gather, fn))
        gathers.insert(gather);
    });
    // In program order, so that the copies are numbered as they run.
    OpBuilder b(fn.getContext());
    int64_t copies = 0;
    fn.walk([&](Operation *user) {
      for (OpOperand &use : user->getOpOperands()) {
        Operation *gather = use.get().getDefiningOp();
        if (!gather || !gathers.contains(gather))
          continue;
        b.setInsertionPoint(user);
        Operation *copy = b.clone(*gather);
        copy->setAttr(shardc::kRegatherAttr, b.getI64IntegerAttr(copies++));
        use.set(copy->getResult(0));
      }
    });
    for (Operation *gather : gathers)
      gather->erase();
  }
};

} // namespace
