//===- PrefetchGathers.cpp - start each parameter's gather one read early -===//
//
// See shardc-prefetch-gathers in include/shardc/Shard/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/IR/Attributes.h"
#include "shardc/IR/FirstReader.h"
#include "shardc/Shard/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"

namespace shardc {
#define GEN_PASS_DEF_PREFETCHGATHERSPASS
#include "shardc/Shard/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

bool isParameterGather(Operation *op) {
  return isa<shard::AllGatherOp>(op) && op->hasAttr(shardc::kRegatherAttr);
}

/// The first parameter gather of `fn` that gathers one of its arguments, if any.
shard::AllGatherOp firstGatherOfArgument(func::FuncOp fn) {
  for (auto gather : fn.getBody().front().getOps<shard::AllGatherOp>())
    if (isParameterGather(gather)) {
      auto arg = dyn_cast<BlockArgument>(gather.getInput());
      return arg && arg.getOwner() == &fn.getBody().front() ? gather : nullptr;
    }
  return nullptr;
}

/// The call before `call` in its block of a function in `callees`, if any.
func::CallOp previousCall(func::CallOp call, const DenseSet<StringAttr> &callees) {
  for (Operation *op = call->getPrevNode(); op; op = op->getPrevNode())
    if (auto previous = dyn_cast<func::CallOp>(op);
        previous && callees.contains(previous.getCalleeAttr().getAttr()))
      return previous;
  return nullptr;
}

/// A private function's first gather (of an argument) moves into its callers, and
/// its result becomes an argument: each call's gather goes before the previous call of
/// such a function in the block (the layer before), so that it can travel while that
/// layer computes. Returns the new arguments, by function body.
DenseMap<Block *, Value> gatherInCallers(ModuleOp module, DominanceInfo &dominance) {
  DenseMap<StringAttr, SmallVector<func::CallOp>> calls;
  module.walk([&](func::CallOp call) { calls[call.getCalleeAttr().getAttr()].push_back(call); });
  DenseSet<StringAttr> callees;
  SmallVector<std::pair<func::FuncOp, shard::AllGatherOp>> moved;
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn.isPrivate() && !fn.isExternal() && calls.count(fn.getSymNameAttr()))
      if (shard::AllGatherOp gather = firstGatherOfArgument(fn)) {
        callees.insert(fn.getSymNameAttr());
        moved.push_back({fn, gather});
      }
  DenseMap<Block *, Value> gatheredArguments;
  for (auto [fn, gather] : moved) {
    unsigned input = cast<BlockArgument>(gather.getInput()).getArgNumber();
    for (func::CallOp call : calls[fn.getSymNameAttr()]) {
      Value shard = call.getOperand(input);
      Operation *at = call;
      if (func::CallOp previous = previousCall(call, callees);
          previous && dominance.properlyDominates(shard, previous))
        at = previous;
      OpBuilder b(at);
      IRMapping map;
      map.map(gather.getInput(), shard);
      Operation *copy = b.clone(*gather, map);
      call->insertOperands(call.getNumOperands(), copy->getResult(0));
    }
    Block &body = fn.getBody().front();
    BlockArgument gathered = body.addArgument(gather.getType(), gather.getLoc());
    gather.replaceAllUsesWith(gathered);
    gather.erase();
    fn.setType(
        FunctionType::get(module.getContext(), body.getArgumentTypes(), fn.getResultTypes()));
    gatheredArguments[&body] = gathered;
  }
  return gatheredArguments;
}

/// In each block, each parameter gather moves before the first reader of the previous
/// gathered weight: the previous gather, or first the weight a function is given
/// gathered (`gatheredArguments`).
void gatherOneReadEarly(ModuleOp module, const DenseMap<Block *, Value> &gatheredArguments,
                        DominanceInfo &dominance) {
  module.walk([&](Block *block) {
    SmallVector<Value> gathered;
    if (Value argument = gatheredArguments.lookup(block))
      gathered.push_back(argument);
    for (Operation &op : *block)
      if (isParameterGather(&op))
        gathered.push_back(op.getResult(0));
    for (size_t k = 1; k < gathered.size(); ++k) {
      Operation *previousUse = shardc::firstReaderInBlock(gathered[k - 1], block);
      Operation *gather = gathered[k].getDefiningOp();
      if (previousUse->isBeforeInBlock(gather) &&
          dominance.properlyDominates(gather->getOperand(0), previousUse))
        gather->moveBefore(previousUse);
    }
  });
}

struct PrefetchGathersPass : public shardc::impl::PrefetchGathersPassBase<PrefetchGathersPass> {
  void runOnOperation() override {
    // Moving ops within their blocks keeps the dominator trees: one for both steps.
    DominanceInfo dominance(getOperation());
    gatherOneReadEarly(getOperation(), gatherInCallers(getOperation(), dominance), dominance);
  }
};

} // namespace
