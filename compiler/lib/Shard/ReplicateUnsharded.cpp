//===- ReplicateUnsharded.cpp - anchor what propagation left unsharded ---===//
//
// See shardc-replicate-unsharded in include/shardc/Shard/Passes.td.
// Propagation leaves an annotated result with exactly one user, a shard.shard
// that is not annotate_for_users; any other ranked result of an op with a
// sharding interface was not reached.
//
//===----------------------------------------------------------------------===//

#include "shardc/Shard/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

namespace shardc {
#define GEN_PASS_DEF_REPLICATEUNSHARDEDPASS
#include "shardc/Shard/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace mlir::shard;

namespace {

bool isAnnotated(OpResult result) {
  if (!result.hasOneUse())
    return false;
  auto user = dyn_cast<ShardOp>(*result.user_begin());
  return user && !user.getAnnotateForUsers();
}

struct ReplicateUnshardedPass
    : public shardc::impl::ReplicateUnshardedPassBase<ReplicateUnshardedPass> {
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    // The grid of the function's own annotations; a function with none (the
    // reference build) is not partitioned at all.
    FlatSymbolRefAttr grid;
    function.walk([&](ShardingOp op) {
      grid = op.getGridAttr();
      return WalkResult::interrupt();
    });
    if (!grid)
      return;

    bool anchored = false;
    OpBuilder b(function.getContext());
    for (Operation &op : llvm::make_early_inc_range(function.getBody().getOps())) {
      if (!isa<ShardingInterface>(op))
        continue;
      for (OpResult result : op.getResults()) {
        auto type = dyn_cast<RankedTensorType>(result.getType());
        if (!type || type.getRank() == 0 || isAnnotated(result))
          continue;
        b.setInsertionPointAfter(&op);
        SmallVector<GridAxesAttr> replicated(type.getRank(), b.getDenseI16ArrayAttr({}));
        Value sharding = ShardingOp::create(b, op.getLoc(), grid, replicated);
        auto annotation = ShardOp::create(b, op.getLoc(), result, sharding);
        result.replaceAllUsesExcept(annotation, annotation);
        anchored = true;
      }
    }
    if (!anchored)
      return;
    OpPassManager again(func::FuncOp::getOperationName());
    ShardingPropagationOptions options;
    options.traversal = TraversalOrder::ForwardBackward;
    again.addPass(createShardingPropagation(options));
    if (failed(runPipeline(again, function)))
      signalPassFailure();
  }
};

} // namespace
