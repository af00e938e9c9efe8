//===- CombineAllReduces.cpp - all_reduce(a) + all_reduce(b) as one -------===//
//
// See shardc-combine-all-reduces in include/shardc/Shard/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Shard/Matchers.h"
#include "shardc/Shard/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"

namespace shardc {
#define GEN_PASS_DEF_COMBINEALLREDUCESPASS
#include "shardc/Shard/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace mlir::shard;
using shardc::isElementwiseAdd;
using shardc::soleSum;

namespace {

/// Whether two all_reduces sum over the same grid axes.
bool sameReduction(AllReduceOp a, AllReduceOp b) {
  return a != b && a.getGrid() == b.getGrid() && a.getGridAxes() == b.getGridAxes();
}

/// `value` summed by an all_reduce like `like`, inserted after `value`'s definition.
Value allReduceLike(AllReduceOp like, Value value) {
  OpBuilder builder(value.getContext());
  builder.setInsertionPointAfterValue(value);
  return AllReduceOp::create(builder, like.getLoc(), value.getType(), like.getGridAttr(),
                             like.getGridAxesAttr(), value, like.getReductionAttr());
}

/// An operand of an add as `rest + all_reduce(partial)`: a sole sum all_reduce (no
/// rest), an add used only there of something and one (`inner`), or neither (no
/// reduce).
struct Term {
  Value rest;
  AllReduceOp reduce;
  linalg::LinalgOp inner;
};

Term termOf(Value operand) {
  if (AllReduceOp reduce = soleSum(operand))
    return {Value(), reduce, {}};
  auto add = operand.getDefiningOp<linalg::LinalgOp>();
  if (add && add->hasOneUse() && isElementwiseAdd(add))
    for (unsigned side : {0u, 1u})
      if (AllReduceOp reduce = soleSum(add->getOperand(side)))
        return {add->getOperand(1 - side), reduce, add};
  return {operand, {}, {}};
}

/// Rewrites `add` of two terms so that its all_reduces come out of it and combine:
///   all_reduce(a) + all_reduce(b)          -> all_reduce(a + b)
///   (y + all_reduce(a)) + all_reduce(b)    -> y + all_reduce(a + b)
///   (y + all_reduce(a)) + (z + all_reduce(b)) -> (y + z) + all_reduce(a + b)
///   (y + all_reduce(a)) + q                -> (y + q) + all_reduce(a)
/// Repeated in program order, a chain of adds (an attention block's input gradient
/// through q, k and v) or a running sum whose terms are partly reduced (the clipping
/// norm) ends with one all_reduce.
bool combine(linalg::LinalgOp add) {
  Term lhs = termOf(add->getOperand(0)), rhs = termOf(add->getOperand(1));
  if (lhs.reduce && rhs.reduce && !sameReduction(lhs.reduce, rhs.reduce))
    return false;
  // Nothing to move: no all_reduce, or one that is already an operand of add.
  if ((!lhs.reduce || !lhs.inner) && (!rhs.reduce || !rhs.inner) && !(lhs.reduce && rhs.reduce))
    return false;
  OpBuilder builder(add);
  builder.setInsertionPointAfter(add);
  auto sum = [&](Value x, Value y) {
    auto copy = cast<linalg::LinalgOp>(builder.clone(*add));
    copy->setOperand(0, x);
    copy->setOperand(1, y);
    return copy->getResult(0);
  };
  AllReduceOp like = lhs.reduce ? lhs.reduce : rhs.reduce;
  Value reduced = like.getResult();
  if (lhs.reduce && rhs.reduce) {
    reduced = allReduceLike(like, sum(lhs.reduce.getInput(), rhs.reduce.getInput()));
    builder.setInsertionPointAfterValue(reduced);
  }
  Value rest = lhs.rest && rhs.rest ? sum(lhs.rest, rhs.rest) : lhs.rest ? lhs.rest : rhs.rest;
  add->getResult(0).replaceAllUsesWith(rest ? sum(rest, reduced) : reduced);
  add->erase();
  for (Term *term : {&lhs, &rhs})
    if (term->inner)
      term->inner->erase();
  if (lhs.reduce && rhs.reduce) {
    lhs.reduce.erase();
    rhs.reduce.erase();
  }
  return true;
}

struct CombineAllReducesPass
    : public shardc::impl::CombineAllReducesPassBase<CombineAllReducesPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> adds;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isElementwiseAdd(op))
        adds.push_back(op);
    });
    // In program order: an add whose operand an earlier rewrite made is combined too.
    for (linalg::LinalgOp add : adds)
      combine(add);
  }
};

} // namespace
