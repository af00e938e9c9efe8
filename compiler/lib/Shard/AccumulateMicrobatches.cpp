//===- AccumulateMicrobatches.cpp - train_step as a loop over microbatches ===//
//
// See shardc-accumulate-microbatches in include/shardc/Shard/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/MLIRGen/Attributes.h"
#include "shardc/Shard/Matchers.h"
#include "shardc/Shard/Passes.h"

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
#include "shardc/Shard/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

StringRef roleOf(func::FuncOp fn, unsigned arg) {
  auto role = fn.getArgAttrOfType<StringAttr>(arg, shardc::kRoleAttr);
  return role ? role.getValue() : StringRef();
}

/// Where microbatch_step's result `value` is reduced across ranks by a sum
/// all_reduce that may move after the loop (it is linear: reducing the sum equals
/// summing the reductions): `value` itself (a loss or metric) or, for a
/// gradient's running sum `sum + g`, the term `g` added to the sum argument.
/// Not a reduce_scatter (FSDP's gradients): deferred, each rank would hold the
/// sum of the whole gradient instead of its shard.
OpOperand *deferrableReduction(OpOperand &result) {
  if (shardc::soleSum(result.get()))
    return &result;
  auto add = result.get().getDefiningOp<linalg::LinalgOp>();
  if (!add || !add->hasOneUse() || !shardc::isElementwiseAdd(add))
    return nullptr;
  for (unsigned side : {0u, 1u})
    if (isa<BlockArgument>(add->getOperand(1 - side)) && shardc::soleSum(add->getOperand(side)))
      return &add->getOpOperand(side);
  return nullptr;
}

/// A linalg.generic on `value`, elementwise into `init`: `payload(value's
/// element, init's element)`.
Value elementwise(OpBuilder &b, Location loc, Value value, Value init,
                  function_ref<Value(OpBuilder &, Location, Value, Value)> payload) {
  auto type = cast<RankedTensorType>(init.getType());
  AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> parallel(type.getRank(), utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, type, value, init, ArrayRef<AffineMap>{identity, identity}, parallel,
      [&](OpBuilder &nested, Location at, ValueRange args) {
        linalg::YieldOp::create(nested, at, payload(nested, at, args[0], args[1]));
      });
  return generic.getResult(0);
}

/// `value` * `factor`.
Value scale(OpBuilder &b, Location loc, Value value, double factor) {
  auto type = cast<RankedTensorType>(value.getType());
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return elementwise(b, loc, value, init, [&](OpBuilder &nested, Location at, Value x, Value) {
    Value c = arith::ConstantOp::create(nested, at, FloatAttr::get(type.getElementType(), factor));
    return arith::MulFOp::create(nested, at, x, c).getResult();
  });
}

/// `sum` + `value`, written over `sum`: the payload reads its output, so that
/// bufferization keeps one buffer for the sum through the loop, and elementwise
/// fusion (which gives an op whose output it does not read a new one) leaves it.
Value accumulate(OpBuilder &b, Location loc, Value sum, Value value) {
  return elementwise(b, loc, value, sum, [](OpBuilder &nested, Location at, Value x, Value acc) {
    return arith::AddFOp::create(nested, at, acc, x).getResult();
  });
}

/// Replaces `call` by a copy of `callee`'s body (one block).
void inlineCall(func::CallOp call, func::FuncOp callee) {
  OpBuilder b(call);
  IRMapping mapping;
  Block &body = callee.getBody().front();
  mapping.map(body.getArguments(), call.getOperands());
  for (Operation &op : body.without_terminator())
    b.clone(op, mapping);
  for (auto [result, returned] : llvm::zip_equal(call.getResults(), body.getTerminator()->getOperands()))
    result.replaceAllUsesWith(mapping.lookupOrDefault(returned));
  call.erase();
}

struct AccumulateMicrobatchesPass
    : public shardc::impl::AccumulateMicrobatchesPassBase<AccumulateMicrobatchesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto micro = module.lookupSymbol<func::FuncOp>(shardc::kMicrobatchFunction);
    auto apply = module.lookupSymbol<func::FuncOp>(shardc::kApplyFunction);
    auto count = module->getAttrOfType<IntegerAttr>(shardc::kMicrobatchesAttr);
    if (!micro && !apply)
      return;
    if (!micro || !apply || !count || module.lookupSymbol(shardc::kTrainFunction)) {
      module.emitError("shardc-accumulate-microbatches needs @")
          << shardc::kMicrobatchFunction << ", @" << shardc::kApplyFunction << ", the module's "
          << shardc::kMicrobatchesAttr << " and no @" << shardc::kTrainFunction;
      return signalPassFailure();
    }
    SmallVector<Operation *> deferred = deferReductions(micro);
    func::FuncOp train = buildTrainStep(module, micro, apply, count.getInt(), deferred);
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

  /// Step 4: each running sum `sum + g` the loop yields (microbatch_step's)
  /// becomes an accumulation into `sum`; anything else it yields in place of a
  /// sum is copied into it. A loop that yielded a new buffer per iteration would
  /// need the deallocation pipeline's runtime ownership checks, which the
  /// bare-pointer lowering does not support.
  static void addInPlace(scf::ForOp loop) {
    for (auto [sum, yielded] : llvm::zip_equal(loop.getRegionIterArgs(), loop.getYieldedValues())) {
      if (yielded == sum)
        continue;
      auto op = yielded.getDefiningOp<linalg::LinalgOp>();
      if (op && op.getNumDpsInits() == 1 && op.getDpsInits()[0] == sum)
        continue; // an accumulation already (the loss's, a metric's)
      OpBuilder b(loop.getBody()->getTerminator());
      Value inPlace;
      if (op && shardc::isElementwiseAdd(op) && llvm::is_contained(op.getDpsInputs(), sum)) {
        b.setInsertionPoint(op);
        inPlace = accumulate(b, op.getLoc(), sum, op.getDpsInputs()[op.getDpsInputs()[0] == sum]);
      } else {
        inPlace = linalg::CopyOp::create(b, loop.getLoc(), yielded, sum).getResult(0);
      }
      loop.getBody()->getTerminator()->replaceUsesOfWith(yielded, inPlace);
      if (op && op->use_empty())
        op->erase();
    }
  }

  /// Step 1: each result of `micro` that a sum all_reduce reduces is returned
  /// unreduced; the all_reduces, by result (null: none), for after the loop.
  static SmallVector<Operation *> deferReductions(func::FuncOp micro) {
    Operation *ret = micro.getBody().front().getTerminator();
    SmallVector<Operation *> deferred(ret->getNumOperands(), nullptr);
    for (OpOperand &result : ret->getOpOperands())
      if (OpOperand *reduced = deferrableReduction(result)) {
        auto reduce = reduced->get().getDefiningOp<shard::AllReduceOp>();
        deferred[result.getOperandNumber()] = reduce;
        reduced->set(reduce.getInput());
      }
    return deferred;
  }

  /// Step 2: @train_step(params, state, inputs, step) -> (params, state, loss,
  /// metrics), the loop over microbatches calling `micro`, then `apply`.
  static func::FuncOp buildTrainStep(ModuleOp module, func::FuncOp micro, func::FuncOp apply,
                                     int64_t count, ArrayRef<Operation *> deferred) {
    // The signature, each argument described as where it comes from.
    SmallVector<Type> argTypes;
    SmallVector<DictionaryAttr> argAttrs;
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
    auto add = [&](func::FuncOp from, unsigned i, Type type) {
      argTypes.push_back(type);
      SmallVector<NamedAttribute> attrs;
      for (NamedAttribute attr : from.getArgAttrDict(i) ? from.getArgAttrDict(i).getValue()
                                                          : ArrayRef<NamedAttribute>{})
        if (attr.getName() != shardc::kMicrobatchDimAttr)
          attrs.push_back(attr);
      argAttrs.push_back(DictionaryAttr::get(from.getContext(), attrs));
    };
    for (unsigned i : params)
      add(micro, i, micro.getArgumentTypes()[i]);
    for (unsigned i : state)
      add(apply, i, apply.getArgumentTypes()[i]);
    for (unsigned i : inputs) {
      auto type = cast<RankedTensorType>(micro.getArgumentTypes()[i]);
      SmallVector<int64_t> shape(type.getShape());
      if (auto dim = micro.getArgAttrOfType<IntegerAttr>(i, shardc::kMicrobatchDimAttr))
        shape[dim.getInt()] *= count;
      add(micro, i, type.clone(shape));
    }
    add(apply, *step, apply.getArgumentTypes()[*step]);
    // Results: the update's parameters and state, its loss, then the metrics.
    const unsigned updated = params.size() + state.size();
    SmallVector<Type> resultTypes(apply.getResultTypes().take_front(updated));
    resultTypes.push_back(apply.getResultTypes().back());
    for (unsigned m = 1; m <= metrics; ++m)
      resultTypes.push_back(micro.getResultTypes()[m]);
    SmallVector<DictionaryAttr> resultAttrs;
    for (unsigned r = 0; r < updated; ++r)
      resultAttrs.push_back(apply.getResultAttrDict(r));
    resultAttrs.push_back(apply.getResultAttrDict(apply.getNumResults() - 1));
    for (unsigned m = 1; m <= metrics; ++m)
      resultAttrs.push_back(micro.getResultAttrDict(m));

    OpBuilder b(module.getBodyRegion());
    b.setInsertionPoint(micro);
    Location loc = micro.getLoc();
    auto train = func::FuncOp::create(b, loc, shardc::kTrainFunction,
                                      b.getFunctionType(argTypes, resultTypes));
    train.setAllArgAttrs(argAttrs);
    for (auto [r, attrs] : llvm::enumerate(resultAttrs))
      if (attrs)
        train.setResultAttrs(r, attrs);
    Block *entry = train.addEntryBlock();
    b.setInsertionPointToStart(entry);
    ValueRange args = entry->getArguments();
    ValueRange paramArgs = args.take_front(params.size());
    ValueRange stateArgs = args.slice(params.size(), state.size());
    ValueRange inputArgs = args.slice(params.size() + state.size(), inputs.size());

    // The loop: each microbatch's inputs sliced, its loss and metrics added up,
    // its gradients added to their sums by microbatch_step itself.
    SmallVector<Value> zeros;
    for (Type t : micro.getResultTypes()) {
      auto type = cast<RankedTensorType>(t);
      Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
      Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
      zeros.push_back(linalg::FillOp::create(b, loc, zero, empty).getResult(0));
    }
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
            auto type = cast<RankedTensorType>(micro.getArgumentTypes()[i]);
            int64_t d = dim.getInt();
            SmallVector<OpFoldResult> offsets(type.getRank(), nested.getIndexAttr(0));
            SmallVector<OpFoldResult> sizes, strides(type.getRank(), nested.getIndexAttr(1));
            for (int64_t size : type.getShape())
              sizes.push_back(nested.getIndexAttr(size));
            Value rows = arith::ConstantIndexOp::create(nested, at, type.getDimSize(d));
            offsets[d] = arith::MulIOp::create(nested, at, k, rows).getResult();
            operands.push_back(
                tensor::ExtractSliceOp::create(nested, at, type, input, offsets, sizes, strides));
          }
          auto call = func::CallOp::create(nested, at, micro, operands);
          SmallVector<Value> next;
          for (auto [total, value] : llvm::zip_equal(totals.drop_back(gradients),
                                                     call.getResults().drop_back(gradients)))
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
