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

/// Whether `op` is out = in0 + in1 elementwise on operands of out's shape.
bool isElementwiseAdd(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      !llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) { return map.isIdentity(); }))
    return false;
  Block &body = op.getRegion().front();
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

struct CombineAllReducesPass
    : public shardc::impl::CombineAllReducesPassBase<CombineAllReducesPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> adds;
    getOperation().walk([&](linalg::GenericOp op) {
      if (isElementwiseAdd(op))
        adds.push_back(op);
    });
    // In program order: an add whose operand an earlier rewrite made is combined too.
    for (linalg::GenericOp add : adds) {
      AllReduceOp lhs = soleSum(add.getDpsInputOperand(0)->get());
      AllReduceOp rhs = soleSum(add.getDpsInputOperand(1)->get());
      if (!lhs || !rhs || lhs == rhs || lhs.getGrid() != rhs.getGrid() ||
          lhs.getGridAxes() != rhs.getGridAxes())
        continue;
      add.setOperand(0, lhs.getInput());
      add.setOperand(1, rhs.getInput());
      OpBuilder builder(add->getContext());
      builder.setInsertionPointAfter(add);
      Value sum = add.getResult(0);
      auto reduce = AllReduceOp::create(builder, lhs.getLoc(), sum.getType(), lhs.getGridAttr(),
                                        lhs.getGridAxesAttr(), sum, lhs.getReductionAttr());
      sum.replaceAllUsesExcept(reduce.getResult(), reduce);
      lhs.erase();
      rhs.erase();
    }
  }
};

} // namespace
