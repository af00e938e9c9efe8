//===- GradientSyncs.cpp - the collectives that reduce gradients ----------===//
//
// See shardc-mark-gradient-syncs in include/shardc/Shard/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/IR/Attributes.h"
#include "shardc/Shard/Matchers.h"
#include "shardc/Shard/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace shardc {
#define GEN_PASS_DEF_MARKGRADIENTSYNCSPASS
#include "shardc/Shard/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace mlir::shard;

namespace {

/// Marks `op` when it is a sum all_reduce or reduce_scatter; whether it is a
/// collective or a reshape, through which the gradient goes on.
bool markIfSum(Operation *op) {
  auto mark = [&] { op->setAttr(shardc::kGradientSyncAttr, UnitAttr::get(op->getContext())); };
  if (auto reduce = dyn_cast<AllReduceOp>(op)) {
    if (reduce.getReduction() == ReductionKind::Sum)
      mark();
    return true;
  }
  if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    if (scatter.getReduction() == ReductionKind::Sum)
      mark();
    return true;
  }
  return isa<AllSliceOp, AllGatherOp, AllToAllOp, tensor::CollapseShapeOp, tensor::ExpandShapeOp,
             tensor::CastOp>(op);
}

bool isAdd(Operation *op) {
  auto add = dyn_cast<linalg::LinalgOp>(op);
  return add && shardc::isElementwiseAdd(add);
}

/// The sums that reduce what `made` (a gradient's op) computes: the
/// collectives after it, through the adds that partitioning puts between them
/// (a reduction's init, added on one rank after its all_reduce), and, when
/// `made` adds up the gradient's pieces, those that reduced a piece before.
void markSyncs(Operation *made) {
  SmallVector<Value> after(made->getResults());
  while (!after.empty())
    for (Operation *user : after.pop_back_val().getUsers())
      if (markIfSum(user) || isAdd(user))
        after.push_back(user->getResult(0));
  if (!isAdd(made))
    return;
  SmallVector<Value> before(cast<linalg::LinalgOp>(made).getDpsInputs());
  while (!before.empty()) {
    Operation *op = before.pop_back_val().getDefiningOp();
    if (op && isAdd(op))
      llvm::append_range(before, cast<linalg::LinalgOp>(op).getDpsInputs());
    else if (op && markIfSum(op))
      before.push_back(op->getOperand(0));
  }
}

struct MarkGradientSyncsPass
    : public shardc::impl::MarkGradientSyncsPassBase<MarkGradientSyncsPass> {
  void runOnOperation() override {
    SmallVector<Operation *> gradients;
    getOperation().walk([&](Operation *op) {
      if (op->hasAttr(shardc::kGradientSyncAttr) && !isa<ShardDialect>(op->getDialect()))
        gradients.push_back(op);
    });
    for (Operation *made : gradients) {
      markSyncs(made);
      made->removeAttr(shardc::kGradientSyncAttr);
    }
  }
};

} // namespace
