//===- ReassociateReductions.cpp - reductions the vectorizer may reorder ---===//
//
// See shardc-reassociate-reductions in include/shardc/Optimize/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Optimize/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"

namespace shardc {
#define GEN_PASS_DEF_REASSOCIATEREDUCTIONSPASS
#include "shardc/Optimize/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

/// The op of `generic`'s body that folds a yielded value into the output it
/// accumulates in (`acc = acc + term`), if that op is a float add or multiply.
arith::ArithFastMathInterface combiner(linalg::GenericOp generic, unsigned result) {
  auto yield = cast<linalg::YieldOp>(generic.getBody()->getTerminator());
  Operation *op = yield.getOperand(result).getDefiningOp();
  if (!isa_and_nonnull<arith::AddFOp, arith::MulFOp>(op))
    return nullptr;
  if (!llvm::is_contained(op->getOperands(), Value(generic.getRegionOutputArgs()[result])))
    return nullptr;
  return cast<arith::ArithFastMathInterface>(op);
}

struct ReassociateReductionsPass
    : public shardc::impl::ReassociateReductionsPassBase<ReassociateReductionsPass> {
  void runOnOperation() override {
    getOperation().walk([](linalg::GenericOp generic) {
      if (generic.getNumReductionLoops() == 0)
        return;
      for (unsigned result = 0; result < generic.getNumDpsInits(); ++result) {
        arith::ArithFastMathInterface op = combiner(generic, result);
        if (!op)
          continue;
        arith::FastMathFlags flags = op.getFastMathFlagsAttr().getValue();
        op->setAttr(
            op.getFastMathAttrName(),
            arith::FastMathFlagsAttr::get(op->getContext(), flags | arith::FastMathFlags::reassoc));
      }
    });
  }
};

} // namespace
