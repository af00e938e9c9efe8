//===- MultiplyAccumulate.h - the body of a matrix product ------*- C++ -*-===//
//
// What shardc-matmul-operands-bf16 rounds and shardc-lower-to-kernels calls a
// product kernel for: a linalg op whose body is exactly `out + in0 * in1`.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_SUPPORT_MULTIPLYACCUMULATE_H
#define SHARDC_SUPPORT_MULTIPLYACCUMULATE_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Block.h"

namespace shardc {

/// Whether `body` (of a linalg op with two inputs and an init) is exactly
/// `out + in0 * in1`, in either operand order, each input read as it is or
/// widened by an arith.extf (bf16 operands accumulated in f32).
inline bool isMultiplyAccumulateBody(mlir::Block &body) {
  const size_t ops = body.getOperations().size();
  if (body.getNumArguments() != 3 || (ops != 3 && ops != 5))
    return false;
  auto add = body.getTerminator()->getOperand(0).getDefiningOp<mlir::arith::AddFOp>();
  if (!add)
    return false;
  mlir::Value out = body.getArgument(2);
  auto mul =
      (add.getLhs() == out ? add.getRhs() : add.getLhs()).getDefiningOp<mlir::arith::MulFOp>();
  if (!mul || (add.getLhs() != out && add.getRhs() != out))
    return false;
  auto widened = [](mlir::Value v) {
    auto ext = v.getDefiningOp<mlir::arith::ExtFOp>();
    return ext ? ext.getIn() : v;
  };
  mlir::Value lhs = widened(mul.getLhs()), rhs = widened(mul.getRhs());
  if (ops == 5 && (lhs == mul.getLhs() || rhs == mul.getRhs()))
    return false;
  mlir::Value in0 = body.getArgument(0), in1 = body.getArgument(1);
  return (lhs == in0 && rhs == in1) || (lhs == in1 && rhs == in0);
}

} // namespace shardc

#endif
