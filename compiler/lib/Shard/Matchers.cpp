//===- Matchers.cpp - shapes of partitioned IR the shard passes rewrite --===//

#include "shardc/Shard/Matchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

bool shardc::isElementwiseAdd(linalg::LinalgOp op) {
  if (isa<linalg::AddOp>(op.getOperation()))
    return op.hasPureTensorSemantics();
  if (!isa<linalg::GenericOp>(op.getOperation()) || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumParallelLoops() != op.getNumLoops() ||
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

shard::AllReduceOp shardc::soleSum(Value value) {
  auto reduce = value.getDefiningOp<shard::AllReduceOp>();
  if (!reduce || !reduce->hasOneUse() || reduce.getReduction() != shard::ReductionKind::Sum ||
      reduce.getInput().getType() != reduce.getResult().getType())
    return {};
  return reduce;
}
