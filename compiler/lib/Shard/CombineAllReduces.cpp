//===- CombineAllReduces.cpp - all_reduce(a) + all_reduce(b) as one -------===//
//
// See shardc-combine-all-reduces in include/shardc/Shard/Passes.td.
//
//===----------------------------------------------------------------------===//

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

namespace {

/// Whether `op` is out = in0 + in1 elementwise on operands of out's shape (a
/// linalg.add, or a linalg.generic that is one).
bool isElementwiseAdd(linalg::LinalgOp op) {
  if (isa<linalg::AddOp>(op.getOperation()))
    return op.hasPureTensorSemantics();
  if (!isa<linalg::GenericOp>(op.getOperation()) || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      !llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) { return map.isIdentity(); }))
    return false;
  Block &body = *op.getBlock();
  if (body.getOperations().size() != 2)
    return false;
  auto add = dyn_cast<arith::AddFOp>(body.front());
  if (!add)
    return false;
  Value a = body.getArgument(0), b = body.getArgument(1);
  return (add.getLhs() == a && add.getRhs() == b) || (add.getLhs() == b && add.getRhs() == a);
}

/// The sum all_reduce that makes `value` for this one use, or null.
AllReduceOp soleSum(Value value) {
  auto reduce = value.getDefiningOp<AllReduceOp>();
  if (!reduce || !reduce->hasOneUse() || reduce.getReduction() != ReductionKind::Sum ||
      reduce.getInput().getType() != reduce.getResult().getType())
    return {};
  return reduce;
}

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

/// add(all_reduce(a), all_reduce(b)) -> all_reduce(add(a, b)).
bool combinePair(linalg::LinalgOp add) {
  AllReduceOp lhs = soleSum(add.getDpsInputOperand(0)->get());
  AllReduceOp rhs = soleSum(add.getDpsInputOperand(1)->get());
  if (!lhs || !rhs || !sameReduction(lhs, rhs))
    return false;
  add->setOperand(0, lhs.getInput());
  add->setOperand(1, rhs.getInput());
  Value sum = add->getResult(0);
  Value reduced = allReduceLike(lhs, sum);
  sum.replaceAllUsesExcept(reduced, reduced.getDefiningOp());
  lhs.erase();
  rhs.erase();
  return true;
}

/// A running sum, add(add(y, all_reduce(a)), all_reduce(b)) with the inner add used
/// once -> add(y, all_reduce(add(a, b))): the clipping norm's sum over every
/// gradient, where the replicated gradients' terms (y) need no all_reduce.
bool combineIntoRunningSum(linalg::LinalgOp add) {
  for (unsigned reducedSide : {0u, 1u}) {
    AllReduceOp outer = soleSum(add.getDpsInputOperand(reducedSide)->get());
    Value running = add.getDpsInputOperand(1 - reducedSide)->get();
    auto inner = running.getDefiningOp<linalg::LinalgOp>();
    if (!outer || !inner || !inner->hasOneUse() || !isElementwiseAdd(inner))
      continue;
    for (unsigned innerSide : {0u, 1u}) {
      AllReduceOp first = soleSum(inner.getDpsInputOperand(innerSide)->get());
      if (!first || !sameReduction(first, outer))
        continue;
      Value rest = inner.getDpsInputOperand(1 - innerSide)->get();
      // add now sums the partial values; a copy of inner adds its reduction to the rest.
      add->setOperand(0, first.getInput());
      add->setOperand(1, outer.getInput());
      Value sum = add->getResult(0);
      Value reduced = allReduceLike(outer, sum);
      OpBuilder builder(add->getContext());
      builder.setInsertionPointAfterValue(reduced);
      auto total = cast<linalg::LinalgOp>(builder.clone(*inner));
      total->setOperand(0, rest);
      total->setOperand(1, reduced);
      sum.replaceUsesWithIf(total->getResult(0), [&](OpOperand &use) {
        return use.getOwner() != reduced.getDefiningOp();
      });
      inner->erase();
      first.erase();
      outer.erase();
      return true;
    }
  }
  return false;
}

/// An operand of an add that is itself an add, used once, of something and a sole
/// sum all_reduce.
struct ReducedTerm {
  linalg::LinalgOp add;
  Value rest;
  AllReduceOp reduce;
};

std::optional<ReducedTerm> reducedTerm(Value operand) {
  auto add = operand.getDefiningOp<linalg::LinalgOp>();
  if (!add || !add->hasOneUse() || !isElementwiseAdd(add))
    return std::nullopt;
  for (unsigned side : {0u, 1u})
    if (AllReduceOp reduce = soleSum(add->getOperand(side)))
      return ReducedTerm{add, add->getOperand(1 - side), reduce};
  return std::nullopt;
}

/// add(add(y, all_reduce(a)), add(z, all_reduce(b))) -> add(add(y, z),
/// all_reduce(add(a, b))), and add(add(y, all_reduce(a)), q) -> add(add(y, q),
/// all_reduce(a)): the all_reduces move out of a tree of adds and combine there
/// (a gradient's norm term, its init plus an all_reduce, added to the running sum).
bool floatOut(linalg::LinalgOp add) {
  std::optional<ReducedTerm> lhs = reducedTerm(add->getOperand(0)),
                             rhs = reducedTerm(add->getOperand(1));
  if (lhs && rhs && !sameReduction(lhs->reduce, rhs->reduce))
    rhs.reset();
  if (!lhs && !rhs)
    return false;
  ReducedTerm &term = lhs ? *lhs : *rhs;
  if (!lhs && add->getOperand(0).getDefiningOp<AllReduceOp>())
    return false;
  if (!rhs && add->getOperand(1).getDefiningOp<AllReduceOp>())
    return false;
  add->setOperand(0, lhs ? lhs->rest : add->getOperand(0));
  add->setOperand(1, rhs ? rhs->rest : add->getOperand(1));
  OpBuilder builder(add->getContext());
  builder.setInsertionPointAfter(add);
  Value reduced = term.reduce.getResult();
  if (lhs && rhs) {
    auto partials = cast<linalg::LinalgOp>(builder.clone(*term.add));
    partials->setOperand(0, lhs->reduce.getInput());
    partials->setOperand(1, rhs->reduce.getInput());
    reduced = allReduceLike(term.reduce, partials->getResult(0));
    builder.setInsertionPointAfterValue(reduced);
  }
  auto total = cast<linalg::LinalgOp>(builder.clone(*term.add));
  total->setOperand(0, add->getResult(0));
  total->setOperand(1, reduced);
  add->getResult(0).replaceAllUsesExcept(total->getResult(0), total);
  for (std::optional<ReducedTerm> *side : {&lhs, &rhs})
    if (*side)
      (*side)->add->erase();
  if (lhs && rhs) {
    lhs->reduce.erase();
    rhs->reduce.erase();
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
      if (!combinePair(add) && !combineIntoRunningSum(add))
        floatOut(add);
  }
};

} // namespace
