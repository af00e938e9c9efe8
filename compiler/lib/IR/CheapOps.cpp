//===- CheapOps.cpp - elementwise ops cheaper to repeat than to keep ------===//
//
// See CheapOps.h.
//
//===----------------------------------------------------------------------===//

#include "shardc/IR/CheapOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

bool shardc::onlyMovesData(linalg::GenericOp op) {
  Block *body = op.getBody();
  if (body->getOperations().size() != 1)
    return false;
  Value yielded = body->getTerminator()->getOperand(0);
  auto arg = dyn_cast<BlockArgument>(yielded);
  return arg && arg.getOwner() == body && arg.getArgNumber() < op.getNumDpsInputs();
}

bool shardc::cheapToRepeat(linalg::GenericOp op) {
  Block *body = op.getBody();
  return body->getOperations().size() <= 8 &&
         llvm::all_of(body->without_terminator(), [](Operation &inner) {
           return isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::MaximumFOp,
                      arith::MinimumFOp, arith::NegFOp, arith::SelectOp, arith::CmpFOp,
                      arith::UIToFPOp>(inner);
         });
}
