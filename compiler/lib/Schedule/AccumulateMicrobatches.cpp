//===- AccumulateMicrobatches.cpp - train_step as a loop over microbatches ===//
//
// See shardc-accumulate-microbatches in include/shardc/Shard/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "MicrobatchLoops.h"
#include "shardc/IR/Attributes.h"
#include "shardc/Schedule/Passes.h"
#include "shardc/Shard/Matchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace shardc {
#define GEN_PASS_DEF_ACCUMULATEMICROBATCHESPASS
#include "shardc/Schedule/Passes.h.inc"
} // namespace shardc

using namespace mlir;

using namespace shardc::microbatch_loops;

namespace {

struct AccumulateMicrobatchesPass
    : public shardc::impl::AccumulateMicrobatchesPassBase<AccumulateMicrobatchesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto micro = module.lookupSymbol<func::FuncOp>(shardc::kMicrobatchFunction);
    auto apply = module.lookupSymbol<func::FuncOp>(shardc::kApplyFunction);
    auto count = module->getAttrOfType<IntegerAttr>(shardc::kMicrobatchesAttr);
    if ((!micro && !apply) || module->hasAttr(shardc::kPipelineAttr) ||
        module->hasAttr(shardc::kLayerLoopAttr))
      return;
    if (!micro || !apply || !count || module.lookupSymbol(shardc::kTrainFunction)) {
      module.emitError("shardc-accumulate-microbatches needs @")
          << shardc::kMicrobatchFunction << ", @" << shardc::kApplyFunction << ", the module's "
          << shardc::kMicrobatchesAttr << " and no @" << shardc::kTrainFunction;
      return signalPassFailure();
    }
    SmallVector<Operation *> deferred = deferReductions(micro);
    func::FuncOp train = buildTrainStep(micro, apply, count.getInt(), deferred);
    if (!train)
      return signalPassFailure();
    for (Operation *op : deferred)
      if (op && op->use_empty())
        op->erase();
    SmallVector<func::CallOp> calls;
    train.walk([&](func::CallOp call) { calls.push_back(call); });
    for (func::CallOp call : calls)
      inlineCall(call, call.getCallee() == micro.getName() ? micro : apply);
    micro.erase();
    apply.erase();
    train.walk([](scf::ForOp loop) { addInPlace(loop); });
  }

  /// Step 2: @train_step(params, state, inputs, step) -> (params, state, loss,
  /// metrics), the loop over microbatches calling `micro`, then `apply`.
  static func::FuncOp buildTrainStep(func::FuncOp micro, func::FuncOp apply, int64_t count,
                                     ArrayRef<Operation *> deferred) {
    // The arguments of each role.
    SmallVector<unsigned> params, sums, inputs, state; // argument numbers in micro, then apply
    std::optional<unsigned> step, loss;                // in apply
    unsigned gradients = 0;
    for (unsigned i = 0; i < micro.getNumArguments(); ++i) {
      StringRef role = roleOf(micro, i);
      (role == shardc::kParameterRole  ? params
       : role == shardc::kGradientRole ? sums
                                       : inputs)
          .push_back(i);
    }
    for (unsigned i = 0; i < apply.getNumArguments(); ++i) {
      StringRef role = roleOf(apply, i);
      if (role == shardc::kOptimizerStateRole)
        state.push_back(i);
      else if (role == shardc::kStepRole)
        step = i;
      else if (role == shardc::kLossRole)
        loss = i;
      else if (role == shardc::kGradientRole)
        ++gradients;
    }
    const unsigned metrics = micro.getNumResults() - 1 - gradients;
    if (!step || !loss || gradients != params.size() || sums.size() != params.size() ||
        micro.getNumResults() < 1 + gradients) {
      apply.emitError("internal error: apply_step does not match microbatch_step");
      return nullptr;
    }
    func::FuncOp train = declareTrainStep(apply, micro, count, metrics);
    Block *entry = &train.getBody().front();
    OpBuilder b = OpBuilder::atBlockBegin(entry);
    Location loc = micro.getLoc();
    ValueRange args = entry->getArguments();
    ValueRange paramArgs = args.take_front(params.size());
    ValueRange stateArgs = args.slice(params.size(), state.size());
    ValueRange inputArgs = args.slice(params.size() + state.size(), inputs.size());
    const unsigned updated = params.size() + state.size();

    // The loop: each microbatch's inputs sliced, its loss and metrics added up,
    // its gradients added to their sums by microbatch_step itself.
    SmallVector<Value> zeros;
    for (Type t : micro.getResultTypes())
      zeros.push_back(zerosOf(b, loc, cast<RankedTensorType>(t)));
    Value lower = arith::ConstantIndexOp::create(b, loc, 0);
    Value upper = arith::ConstantIndexOp::create(b, loc, count);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = scf::ForOp::create(
        b, loc, lower, upper, one, zeros,
        [&](OpBuilder &nested, Location at, Value k, ValueRange totals) {
          SmallVector<Value> operands(paramArgs);
          llvm::append_range(operands, totals.take_back(gradients));
          for (auto [i, input] : llvm::zip_equal(inputs, inputArgs)) {
            auto dim = micro.getArgAttrOfType<IntegerAttr>(i, shardc::kMicrobatchDimAttr);
            if (!dim) {
              operands.push_back(input);
              continue;
            }
            operands.push_back(sliceMicrobatch(nested, at, input,
                                               cast<RankedTensorType>(micro.getArgumentTypes()[i]),
                                               dim.getInt(), k));
          }
          auto call = func::CallOp::create(nested, at, micro, operands);
          SmallVector<Value> next;
          for (auto [total, value] :
               llvm::zip_equal(totals.drop_back(gradients), call.getResults().drop_back(gradients)))
            next.push_back(accumulate(nested, at, total, value));
          llvm::append_range(next, call.getResults().take_back(gradients));
          scf::YieldOp::create(nested, at, next);
        });

    // After it: each sum scaled, reduced as microbatch_step reduced its value,
    // the update applied.
    SmallVector<Value> totals;
    for (auto [r, sum] : llvm::enumerate(loop.getResults())) {
      Value total = sum;
      if (auto factor = micro.getResultAttrOfType<FloatAttr>(r, shardc::kMicrobatchScaleAttr))
        total = scale(b, loc, total, factor.getValueAsDouble());
      if (Operation *collective = deferred[r]) {
        IRMapping mapping;
        mapping.map(collective->getOperand(0), total);
        total = b.clone(*collective, mapping)->getResult(0);
      }
      totals.push_back(total);
    }
    SmallVector<Value> applyOperands(paramArgs);
    llvm::append_range(applyOperands, stateArgs);
    llvm::append_range(applyOperands, ArrayRef(totals).take_back(gradients));
    applyOperands.push_back(totals.front());
    applyOperands.push_back(args.back());
    auto update = func::CallOp::create(b, loc, apply, applyOperands);
    SmallVector<Value> results(update.getResults().take_front(updated));
    results.push_back(update.getResults().back());
    llvm::append_range(results, ArrayRef(totals).slice(1, metrics));
    func::ReturnOp::create(b, loc, results);
    return train;
  }
};

} // namespace
