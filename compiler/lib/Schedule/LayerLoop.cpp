//===- LayerLoop.cpp - train_step with the scan as a loop ------------------===//
//
// See shardc-layer-loop in include/shardc/Shard/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "LayerStacks.h"
#include "MicrobatchLoops.h"
#include "shardc/IR/Attributes.h"
#include "shardc/IR/CheapOps.h"
#include "shardc/Schedule/Passes.h"
#include "shardc/Shard/Matchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

#include <map>

namespace shardc {
#define GEN_PASS_DEF_LAYERLOOPPASS
#include "shardc/Schedule/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc::layer_stacks;
using namespace shardc::microbatch_loops;

namespace {

/// The functions of one part of the program (the prologue, the layer, the
/// epilogue): training forward and backward, evaluation forward. The
/// epilogue's backward (epilogue_step) computes its forward too.
struct Part {
  func::FuncOp forward, backward, eval;
};

struct LayerLoopPass : public shardc::impl::LayerLoopPassBase<LayerLoopPass> {
  ModuleOp module;
  int64_t layers = 0;
  using Transfers = SmallVector<std::pair<int64_t, int64_t>>; // from, to
  Transfers transfers, evalTransfers;
  Part prologue, layer, epilogue;
  func::FuncOp apply;
  llvm::DenseSet<unsigned> recomputed; // layer.forward's residuals its backward makes again

  void runOnOperation() override {
    module = getOperation();
    auto attr = module->getAttrOfType<DictionaryAttr>(shardc::kLayerLoopAttr);
    if (!attr)
      return;
    if (failed(readModule(attr)))
      return signalPassFailure();
    recomputeCheapResiduals();
    returnGradients();
    func::FuncOp train = buildStep(/*update=*/true);
    func::FuncOp grad = buildStep(/*update=*/false);
    func::FuncOp eval = buildEvalStep();
    for (func::FuncOp step : {train, grad, eval}) {
      SmallVector<func::CallOp> calls;
      step.walk([&](func::CallOp call) { calls.push_back(call); });
      for (func::CallOp call : calls)
        inlineCall(call, module.lookupSymbol<func::FuncOp>(call.getCallee()));
      step.walk([](scf::ForOp loop) {
        addInPlace(loop);
        loop->setAttr(shardc::kLayerLoopAttr, UnitAttr::get(loop.getContext()));
      });
    }
    for (Part part : {prologue, layer, epilogue})
      for (func::FuncOp fn : {part.forward, part.backward, part.eval})
        if (fn)
          fn.erase();
    apply.erase();
    // The loops carry it from here on (shardc-outline-layers leaves them).
    module->removeAttr(shardc::kLayerLoopAttr);
  }

  LogicalResult readModule(DictionaryAttr attr) {
    auto layersAttr = attr.getAs<IntegerAttr>("layers");
    auto transfersAttr = attr.getAs<ArrayAttr>("transfers");
    auto evalTransfersAttr = attr.getAs<ArrayAttr>("eval_transfers");
    apply = module.lookupSymbol<func::FuncOp>(shardc::kApplyFunction);
    auto fn = [&](StringRef prefix, StringRef kind) {
      return module.lookupSymbol<func::FuncOp>((prefix + kind).str());
    };
    for (auto [part, prefix] : {std::pair{&prologue, shardc::kPrologueFunction},
                                std::pair{&layer, shardc::kLayerFunction}})
      *part = Part{fn(prefix, "forward"), fn(prefix, "backward"), fn(prefix, "eval")};
    epilogue =
        Part{nullptr, fn(shardc::kEpilogueFunction, "step"), fn(shardc::kEpilogueFunction, "eval")};
    if (!layersAttr || !transfersAttr || !evalTransfersAttr || !apply ||
        module.lookupSymbol(shardc::kTrainFunction) || module.lookupSymbol(shardc::kEvalFunction) ||
        llvm::any_of(std::initializer_list<Part>{prologue, layer},
                     [](const Part &p) { return !p.forward || !p.backward || !p.eval; }) ||
        !epilogue.backward || !epilogue.eval)
      return module.emitError("shardc-layer-loop needs the module's ")
             << shardc::kLayerLoopAttr << " {layers, transfers, eval_transfers}, @prologue_, "
             << "@layer_forward, _backward and _eval, @epilogue_step and _eval, @"
             << shardc::kApplyFunction << ", and no @" << shardc::kTrainFunction << " or @"
             << shardc::kEvalFunction;
    layers = layersAttr.getInt();
    auto read = [](ArrayAttr from, Transfers &to) {
      for (Attribute t : from) {
        ArrayRef<int64_t> fromTo = cast<DenseI64ArrayAttr>(t).asArrayRef();
        to.push_back({fromTo[0], fromTo[1]});
      }
    };
    read(transfersAttr, transfers);
    read(evalTransfersAttr, evalTransfers);
    return success();
  }

  /// Where each argument of a part's function comes from.
  struct Sources {
    ValueRange params, inputs;   // train_step's
    ArrayRef<std::string> names; // of train_step's params, then inputs
    Value layerIndex;            // the loop's layer (null outside the loops)
  };

  /// `fn`'s parameter or input argument `i` in train_step: the whole argument,
  /// or its layer's slice of a stack.
  Value argumentFor(OpBuilder &b, Location loc, func::FuncOp fn, unsigned i, const Sources &s) {
    auto [name, layerIndex] = nameAndLayer(fn, i);
    const unsigned params = s.params.size();
    for (unsigned k = 0; k < s.names.size(); ++k) {
      if (s.names[k] != name || (k < params) != (roleOf(fn, i) == shardc::kParameterRole))
        continue;
      Value whole = k < params ? s.params[k] : s.inputs[k - params];
      return layerIndex < 0 ? whole : layerOf(b, loc, whole, OpFoldResult(s.layerIndex));
    }
    fn.emitError("shardc-layer-loop: argument '") << name << "' is not one of train_step's";
    signalPassFailure();
    return emptyOf(b, loc, fn.getArgumentTypes()[i]);
  }

  static int64_t transferOf(DictionaryAttr attrs) {
    auto t = attrs ? attrs.getAs<IntegerAttr>(shardc::kTransferAttr) : nullptr;
    return t ? t.getInt() : -1;
  }
  static std::string nameOf(DictionaryAttr attrs) {
    auto name = attrs ? attrs.getAs<StringAttr>(shardc::kNameAttr) : nullptr;
    return name ? name.str() : "";
  }
  /// The parameter whose gradient sum `attrs` names (`grad/NAME`; empty: none).
  static std::string summedParam(DictionaryAttr attrs) {
    std::string full = nameOf(attrs);
    StringRef name = full;
    return name.consume_front("grad/") && transferOf(attrs) < 0 ? name.str() : "";
  }

  /// Calls `fn` with its parameters and inputs from `s`, every other argument
  /// from `other(i)`.
  func::CallOp callPart(OpBuilder &b, Location loc, func::FuncOp fn, const Sources &s,
                        llvm::function_ref<Value(unsigned)> other) {
    SmallVector<Value> operands;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      StringRef role = roleOf(fn, i);
      operands.push_back(role == shardc::kParameterRole || role == shardc::kInputRole
                             ? argumentFor(b, loc, fn, i, s)
                             : other(i));
    }
    return func::CallOp::create(b, loc, fn, operands);
  }

  /// The transfer from stage `from` to stage `to` (-1: none).
  static int64_t transferBetween(const Transfers &transfers, int64_t from, int64_t to) {
    for (auto [k, t] : llvm::enumerate(transfers))
      if (t.first == from && t.second == to)
        return int64_t(k);
    return -1;
  }

  /// `fn`'s arguments of `role` appended (types, attributes, names); how many.
  static unsigned addArguments(func::FuncOp fn, StringRef role, SmallVectorImpl<Type> &types,
                               SmallVectorImpl<DictionaryAttr> &attrs,
                               SmallVectorImpl<std::string> &names) {
    unsigned n = 0;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (roleOf(fn, i) == role) {
        types.push_back(fn.getArgumentTypes()[i]);
        attrs.push_back(fn.getArgAttrDict(i));
        names.push_back(nameAndLayer(fn, i).first);
        ++n;
      }
    return n;
  }

  /// eval_step: the parameters and inputs -> the epilogue's evaluation results;
  /// the layers' evaluation forward in a loop.
  func::FuncOp buildEvalStep() {
    SmallVector<Type> argTypes, resultTypes;
    SmallVector<DictionaryAttr> argAttrs, resultAttrs;
    SmallVector<std::string> names;
    // The parameters (apply_step's) and the runtime's inputs (the prologue's), stacked.
    const unsigned numParams =
        addArguments(apply, shardc::kParameterRole, argTypes, argAttrs, names);
    const unsigned numInputs =
        addArguments(prologue.forward, shardc::kInputRole, argTypes, argAttrs, names);
    SmallVector<unsigned> evalResults;
    for (unsigned r = 0; r < epilogue.eval.getNumResults(); ++r)
      if (transferOf(epilogue.eval.getResultAttrDict(r)) < 0) {
        evalResults.push_back(r);
        resultTypes.push_back(epilogue.eval.getResultTypes()[r]);
        resultAttrs.push_back(epilogue.eval.getResultAttrDict(r));
      }
    func::FuncOp fn =
        declareStep(apply, shardc::kEvalFunction, argTypes, argAttrs, resultTypes, resultAttrs);
    Block *entry = &fn.getBody().front();
    OpBuilder b = OpBuilder::atBlockBegin(entry);
    Location loc = apply.getLoc();
    ValueRange args = entry->getArguments();
    Sources outer{args.take_front(numParams), args.slice(numParams, numInputs), names, Value()};
    const int64_t carryIn = transferBetween(evalTransfers, 0, 1),
                  carryLast = transferBetween(evalTransfers, layers, layers + 1);
    std::map<int64_t, Value> sent;
    auto collect = [&](func::FuncOp part, func::CallOp call) {
      for (unsigned r = 0; r < part.getNumResults(); ++r)
        if (int64_t k = transferOf(part.getResultAttrDict(r)); k >= 0)
          sent[k] = call.getResult(r);
    };
    auto received = [&](func::FuncOp part) {
      return [&, part](unsigned i) mutable { return sent.at(transferOf(part.getArgAttrDict(i))); };
    };
    collect(prologue.eval, callPart(b, loc, prologue.eval, outer, received(prologue.eval)));
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value count = arith::ConstantIndexOp::create(b, loc, layers);
    auto loop = scf::ForOp::create(b, loc, zero, count, one, ValueRange{sent.at(carryIn)},
                                   [&](OpBuilder &nb, Location at, Value l, ValueRange carried) {
                                     Sources s = outer;
                                     s.layerIndex = l;
                                     auto call = callPart(nb, at, layer.eval, s,
                                                          [&](unsigned) { return carried[0]; });
                                     scf::YieldOp::create(nb, at, call.getResults());
                                   });
    sent[carryLast] = loop.getResult(0);
    auto last = callPart(b, loc, epilogue.eval, outer, received(epilogue.eval));
    SmallVector<Value> results;
    for (unsigned r : evalResults)
      results.push_back(last.getResult(r));
    func::ReturnOp::create(b, loc, results);
    return fn;
  }

  /// train_step (`update`: the gradients applied by apply_step) or grad_step
  /// (the loss and the gradients), the runtime's ABI: the parameters (and
  /// state), the inputs (the prologue's: stacked), the step.
  func::FuncOp buildStep(bool update) {
    SmallVector<Type> argTypes, resultTypes;
    SmallVector<DictionaryAttr> argAttrs, resultAttrs;
    SmallVector<std::string> names;
    // Sources::names holds the parameters' and the inputs' names, not the state's.
    const unsigned numParams =
        addArguments(apply, shardc::kParameterRole, argTypes, argAttrs, names);
    SmallVector<std::string> stateNames;
    const unsigned numState =
        update ? addArguments(apply, shardc::kOptimizerStateRole, argTypes, argAttrs, stateNames)
               : 0;
    const unsigned numInputs =
        addArguments(prologue.forward, shardc::kInputRole, argTypes, argAttrs, names);
    std::optional<unsigned> stepArg;
    for (unsigned i = 0; i < apply.getNumArguments(); ++i)
      if (roleOf(apply, i) == shardc::kStepRole)
        stepArg = i;
    const unsigned updated = numParams + numState;
    const unsigned numMetrics = countMetrics();
    if (update) {
      argTypes.push_back(apply.getArgumentTypes()[*stepArg]);
      argAttrs.push_back(apply.getArgAttrDict(*stepArg));
      llvm::append_range(resultTypes, apply.getResultTypes().take_front(updated));
      for (unsigned r = 0; r < updated; ++r)
        resultAttrs.push_back(apply.getResultAttrDict(r));
      resultTypes.push_back(apply.getResultTypes().back());
      resultAttrs.push_back(apply.getResultAttrDict(apply.getNumResults() - 1));
      for (unsigned m = 1; m <= numMetrics; ++m) {
        resultTypes.push_back(epilogue.backward.getResultTypes()[m]);
        resultAttrs.push_back(epilogue.backward.getResultAttrDict(m));
      }
    } else {
      resultTypes.push_back(epilogue.backward.getResultTypes()[0]);
      resultAttrs.push_back(epilogue.backward.getResultAttrDict(0));
      for (unsigned p = 0; p < numParams; ++p) {
        resultTypes.push_back(argTypes[p]);
        NamedAttrList attrs(argAttrs[p]);
        attrs.erase(shardc::kRoleAttr);
        resultAttrs.push_back(attrs.getDictionary(module.getContext()));
      }
    }
    func::FuncOp fn = declareStep(apply, update ? shardc::kTrainFunction : shardc::kGradFunction,
                                  argTypes, argAttrs, resultTypes, resultAttrs);
    Block *entry = &fn.getBody().front();
    OpBuilder b = OpBuilder::atBlockBegin(entry);
    Location loc = apply.getLoc();
    ValueRange args = entry->getArguments();
    Sources outer{args.take_front(numParams), args.slice(updated, numInputs), names, Value()};
    std::optional<Gradients> grads = buildGradients(b, loc, outer);
    if (!grads)
      return fn;
    // Every parameter's gradient (zeros where the loss reads none).
    SmallVector<Value> gradients;
    for (unsigned p = 0; p < numParams; ++p) {
      Value sum = grads->sums.lookup(names[p]);
      gradients.push_back(sum ? sum : zerosOf(b, loc, cast<RankedTensorType>(argTypes[p])));
    }
    SmallVector<Value> results;
    if (update) {
      SmallVector<Value> applyOperands(args.take_front(updated));
      llvm::append_range(applyOperands, gradients);
      applyOperands.push_back(grads->lossAndMetrics.front());
      applyOperands.push_back(args.back());
      auto applied = func::CallOp::create(b, loc, apply, applyOperands);
      llvm::append_range(results, applied.getResults().take_front(updated));
      results.push_back(applied.getResults().back());
      llvm::append_range(results, ArrayRef(grads->lossAndMetrics).drop_front());
    } else {
      results.push_back(grads->lossAndMetrics.front());
      llvm::append_range(results, gradients);
    }
    func::ReturnOp::create(b, loc, results);
    return fn;
  }

  /// What the parts' functions compute of a step: the loss and the metrics, and
  /// each parameter's gradient by name.
  struct Gradients {
    SmallVector<Value> lossAndMetrics;
    llvm::StringMap<Value> sums;
  };

  std::optional<Gradients> buildGradients(OpBuilder &b, Location loc, const Sources &outer) {
    const int64_t carryIn = transferBetween(transfers, 0, 1),
                  carryOut = transferBetween(transfers, 1, 2),
                  carryLast = transferBetween(transfers, layers, layers + 1);
    if (carryIn < 0 || carryOut < 0 || carryLast < 0) {
      module.emitError("shardc-layer-loop: the layers do not pass one carry on");
      signalPassFailure();
      return std::nullopt;
    }

    // The prologue: what it sends (by transfer) and keeps (by name).
    auto unexpected = [&](unsigned i) -> Value {
      prologue.forward.emitError("shardc-layer-loop: unexpected argument ") << i;
      signalPassFailure();
      return Value();
    };
    auto prologueForward = callPart(b, loc, prologue.forward, outer, unexpected);
    std::map<int64_t, Value> sent;
    llvm::StringMap<Value> prologueKept;
    for (unsigned r = 0; r < prologue.forward.getNumResults(); ++r) {
      DictionaryAttr attrs = prologue.forward.getResultAttrDict(r);
      if (int64_t k = transferOf(attrs); k >= 0)
        sent[k] = prologueForward.getResult(r);
      else
        prologueKept[nameOf(attrs)] = prologueForward.getResult(r);
    }

    // The forward loop: layer l reads its carry from slot l of a stack of
    // layers + 1 carries and makes the next in slot l + 1 (shardc-write-in-slots), which
    // the backward loop reads again; its residuals go into stacks of their own.
    auto stackType = [&](Type t, int64_t slots) {
      auto type = cast<RankedTensorType>(t);
      SmallVector<int64_t> shape{slots};
      llvm::append_range(shape, type.getShape());
      return type.clone(shape);
    };
    auto stackOfType = [&](Type t, int64_t slots) { return emptyOf(b, loc, stackType(t, slots)); };
    SmallVector<unsigned> layerResiduals; // results of layer.forward kept
    for (unsigned r = 0; r < layer.forward.getNumResults(); ++r)
      if (transferOf(layer.forward.getResultAttrDict(r)) < 0 && !recomputed.contains(r))
        layerResiduals.push_back(r);
    SmallVector<Type> residualTypes, gradientTypes;
    for (unsigned r : layerResiduals)
      residualTypes.push_back(layer.forward.getResultTypes()[r]);
    for (unsigned i : layerSums)
      gradientTypes.push_back(layer.backward.getArgumentTypes()[i]);
    std::optional<Workspace> shared = planWorkspace(residualTypes, gradientTypes);
    Value first = sent.at(carryIn);
    SmallVector<Value> init{setLayer(b, loc, stackOfType(first.getType(), layers + 1), 0, first)};
    if (shared)
      init.push_back(tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{layers + 1, shared->slot},
                                             b.getF32Type()));
    else
      for (Type t : residualTypes)
        init.push_back(stackOfType(t, layers));
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value count = arith::ConstantIndexOp::create(b, loc, layers);
    auto forwardLoop = scf::ForOp::create(
        b, loc, zero, count, one, init,
        [&](OpBuilder &nb, Location at, Value l, ValueRange carried) {
          Sources s = outer;
          s.layerIndex = l;
          // Before the layer's ops: shardc-write-in-slots has them make the next
          // carry in its slot.
          Value nextLayer = arith::AddIOp::create(nb, at, l, one);
          Value carry = layerOf(nb, at, carried[0], OpFoldResult(l));
          auto call = callPart(nb, at, layer.forward, s, [&](unsigned) { return carry; });
          SmallVector<Value> next{carried[0]};
          for (unsigned r = 0; r < call.getNumResults(); ++r)
            if (transferOf(layer.forward.getResultAttrDict(r)) >= 0)
              next[0] = setLayer(nb, at, carried[0], OpFoldResult(nextLayer), call.getResult(r));
          if (shared) {
            Value workspace = carried[1];
            for (auto [n, r] : llvm::enumerate(layerResiduals))
              workspace = writeSlot(nb, at, workspace, l, shared->residualAt[n], call.getResult(r));
            next.push_back(workspace);
          } else {
            for (auto [n, r] : llvm::enumerate(layerResiduals))
              next.push_back(setLayer(nb, at, carried[1 + n], OpFoldResult(l), call.getResult(r)));
          }
          scf::YieldOp::create(nb, at, next);
        });
    Value receivedStack = forwardLoop.getResult(0);
    sent[carryLast] = layerOf(b, loc, receivedStack, layers);

    // The epilogue: forward and backward from the loss in one.
    auto received = [&](func::FuncOp fn, unsigned i) {
      return sent.at(transferOf(fn.getArgAttrDict(i)));
    };
    // Each parameter's gradient sum so far, by name (a tied parameter's grows
    // from the epilogue's to the prologue's).
    llvm::StringMap<Value> sums;
    auto sumFor = [&](OpBuilder &nb, Location at, func::FuncOp fn, unsigned i) -> Value {
      if (Value sum = sums.lookup(summedParam(fn.getArgAttrDict(i))))
        return sum;
      return zerosOf(nb, at, cast<RankedTensorType>(fn.getArgumentTypes()[i]));
    };
    auto takeSums = [&](func::FuncOp fn, func::CallOp call) {
      for (unsigned r = 0; r < fn.getNumResults(); ++r)
        if (std::string param = summedParam(fn.getResultAttrDict(r)); !param.empty())
          sums[param] = call.getResult(r);
    };
    std::map<int64_t, Value> cotangents; // by transfer
    auto takeCotangents = [&](func::FuncOp fn, func::CallOp call) {
      for (unsigned r = 0; r < fn.getNumResults(); ++r)
        if (int64_t k = transferOf(fn.getResultAttrDict(r)); k >= 0)
          cotangents[k] = call.getResult(r);
    };
    auto epilogueBackward = callPart(b, loc, epilogue.backward, outer, [&](unsigned i) -> Value {
      if (roleOf(epilogue.backward, i) == shardc::kGradientRole)
        return sumFor(b, loc, epilogue.backward, i);
      return received(epilogue.backward, i);
    });
    takeSums(epilogue.backward, epilogueBackward);
    takeCotangents(epilogue.backward, epilogueBackward);

    // The backward loop, last layer first: each layer's backward on its kept
    // values and the carry's cotangent; its gradients into stacks, or into the
    // workspace's next slot (its residuals are spent: that layer ran before).
    SmallVector<Value> backInit;
    const bool carryDifferentiable = cotangents.count(carryLast);
    if (carryDifferentiable)
      backInit.push_back(cotangents.at(carryLast));
    if (shared)
      backInit.push_back(forwardLoop.getResult(1));
    else
      for (auto [n, type] : llvm::enumerate(gradientTypes))
        backInit.push_back(gradientReturned[n] ? stackOfType(type, layers)
                                               : zerosOf(b, loc, stackType(type, layers)));
    Value last = arith::ConstantIndexOp::create(b, loc, layers - 1);
    auto backwardLoop = scf::ForOp::create(
        b, loc, zero, count, one, backInit,
        [&](OpBuilder &nb, Location at, Value i, ValueRange carried) {
          Value l = arith::SubIOp::create(nb, at, last, i);
          Sources s = outer;
          s.layerIndex = l;
          ValueRange stores = carried.drop_front(carryDifferentiable);
          auto call = callPart(nb, at, layer.backward, s, [&](unsigned a) -> Value {
            StringRef role = roleOf(layer.backward, a);
            DictionaryAttr attrs = layer.backward.getArgAttrDict(a);
            if (role == shardc::kGradientRole) {
              unsigned n = llvm::find(layerSums, a) - layerSums.begin();
              return shared ? emptyOf(nb, at, gradientTypes[n])
                            : layerOf(nb, at, stores[n], OpFoldResult(l));
            }
            if (role == shardc::kActivationRole)
              return layerOf(nb, at, receivedStack, OpFoldResult(l));
            if (role == shardc::kCotangentRole)
              return carried[0];
            unsigned n =
                llvm::find_if(layerResiduals,
                              [&](unsigned r) {
                                return nameOf(layer.forward.getResultAttrDict(r)) == nameOf(attrs);
                              }) -
                layerResiduals.begin();
            return shared ? readSlot(nb, at, stores[0], l, shared->residualAt[n],
                                     cast<RankedTensorType>(residualTypes[n]))
                          : layerOf(nb, at, forwardLoop.getResult(1 + n), OpFoldResult(l));
          });
          SmallVector<Value> next;
          for (unsigned r = 0; r < call.getNumResults(); ++r)
            if (transferOf(layer.backward.getResultAttrDict(r)) >= 0)
              next.push_back(call.getResult(r));
          if (shared) {
            Value workspace = stores[0];
            Value after = arith::AddIOp::create(nb, at, l, one);
            for (auto [n, r] : llvm::enumerate(layerSumResults))
              workspace =
                  writeSlot(nb, at, workspace, after, shared->gradientAt[n], call.getResult(r));
            next.push_back(workspace);
          } else {
            for (auto [n, r] : llvm::enumerate(layerSumResults))
              next.push_back(setLayer(nb, at, stores[n], OpFoldResult(l), call.getResult(r)));
          }
          scf::YieldOp::create(nb, at, next);
        });
    if (carryDifferentiable)
      cotangents[carryIn] = backwardLoop.getResult(0);
    for (auto [n, i] : llvm::enumerate(layerSums))
      sums[summedParam(layer.backward.getArgAttrDict(i))] =
          shared ? slots(b, loc, backwardLoop.getResult(carryDifferentiable), b.getIndexAttr(1),
                         layers, shared->gradientAt[n], cast<RankedTensorType>(gradientTypes[n]))
                 : backwardLoop.getResult(carryDifferentiable + n);

    // The prologue's backward from the cotangents of what it sent.
    auto prologueBackward = callPart(b, loc, prologue.backward, outer, [&](unsigned i) -> Value {
      StringRef role = roleOf(prologue.backward, i);
      DictionaryAttr attrs = prologue.backward.getArgAttrDict(i);
      if (role == shardc::kGradientRole)
        return sumFor(b, loc, prologue.backward, i);
      if (role == shardc::kCotangentRole)
        return cotangents.at(transferOf(attrs));
      return prologueKept.at(nameOf(attrs));
    });
    takeSums(prologue.backward, prologueBackward);

    Gradients grads{{}, std::move(sums)};
    for (unsigned m = 0; m <= countMetrics(); ++m)
      grads.lossAndMetrics.push_back(epilogueBackward.getResult(m));
    return grads;
  }

  /// The layer's backward makes again each residual that its forward makes by
  /// cheap elementwise ops (shardc::cheapToRepeat, broadcasts) from the
  /// layer's arguments and the residuals it keeps: a layer norm's normalized,
  /// scaled and shifted output from its centered input and scale; a dropout's
  /// mask from its random numbers. No stack keeps those: what the unrolled
  /// step's elementwise fusion gave (a forward op fused into its backward
  /// reader is computed again there).
  void recomputeCheapResiduals() {
    func::FuncOp forward = layer.forward, backward = layer.backward;
    Operation *ret = forward.getBody().front().getTerminator();
    auto backwardArgument = [&](StringRef role, StringRef name) -> Value {
      for (unsigned j = 0; j < backward.getNumArguments(); ++j)
        if (roleOf(backward, j) == role && nameAndLayer(backward, j).first == name)
          return backward.getArgument(j);
      return nullptr;
    };
    auto residualOf = [&](Value v) -> std::optional<unsigned> {
      for (OpOperand &operand : ret->getOpOperands())
        if (operand.get() == v &&
            transferOf(forward.getResultAttrDict(operand.getOperandNumber())) < 0)
          return operand.getOperandNumber();
      return std::nullopt;
    };
    OpBuilder b(&backward.getBody().front(), backward.getBody().front().begin());
    IRMapping inBackward;
    // `v` of the forward made in the backward by cheap ops (null: it cannot be).
    std::function<Value(Value)> remake = [&](Value v) -> Value {
      if (Value there = inBackward.lookupOrNull(v))
        return there;
      if (auto arg = dyn_cast<BlockArgument>(v))
        return backwardArgument(roleOf(forward, arg.getArgNumber()),
                                nameAndLayer(forward, arg.getArgNumber()).first);
      auto op = v.getDefiningOp<linalg::GenericOp>();
      llvm::SetVector<Value> captured;
      if (op && op->getParentOp() == forward && op->getNumResults() == 1 &&
          (shardc::cheapToRepeat(op) || shardc::onlyMovesData(op)) &&
          op.getNumParallelLoops() == op.getNumLoops() &&
          !op.payloadUsesValueFromOperand(op.getDpsInitOperand(0))) {
        getUsedValuesDefinedAbove(op->getRegions(), captured);
        SmallVector<Value> inputs;
        for (Value input : op.getDpsInputs())
          inputs.push_back(remake(input));
        if (llvm::all_of(inputs, [](Value i) { return bool(i); }) &&
            llvm::all_of(captured, [](Value c) { return c.getDefiningOp<arith::ConstantOp>(); })) {
          IRMapping map;
          map.map(op.getDpsInputs(), inputs);
          for (Value c : captured)
            map.map(c, b.clone(*c.getDefiningOp())->getResult(0));
          map.map(op.getDpsInits()[0], emptyOf(b, op.getLoc(), op.getDpsInits()[0].getType()));
          Value again = b.clone(*op, map)->getResult(0);
          inBackward.map(v, again);
          return again;
        }
      }
      // Kept: the residual's argument.
      std::optional<unsigned> r = residualOf(v);
      return r && !recomputed.contains(*r)
                 ? backwardArgument(shardc::kResidualRole, nameOf(forward.getResultAttrDict(*r)))
                 : nullptr;
    };
    // In the forward's order: a residual made from another finds it decided.
    for (Operation &op : forward.getBody().front().without_terminator()) {
      if (op.getNumResults() != 1)
        continue;
      std::optional<unsigned> r = residualOf(op.getResult(0));
      Value kept =
          r ? backwardArgument(shardc::kResidualRole, nameOf(forward.getResultAttrDict(*r)))
            : nullptr;
      if (!kept)
        continue;
      recomputed.insert(*r); // so that remake does not answer with `kept` itself
      Value again = remake(op.getResult(0));
      if (!again) {
        recomputed.erase(*r);
        continue;
      }
      kept.replaceAllUsesWith(again);
    }
    // The residual arguments it no longer reads.
    llvm::BitVector unread(backward.getNumArguments());
    for (unsigned j = 0; j < backward.getNumArguments(); ++j)
      unread[j] =
          roleOf(backward, j) == shardc::kResidualRole && backward.getArgument(j).use_empty();
    if (failed(backward.eraseArguments(unread)))
      signalPassFailure();
  }

  /// layer.backward's gradient sums: its arguments and its results, in the
  /// parameters' order; and per sum, whether the backward returns the gradient.
  SmallVector<unsigned> layerSums, layerSumResults;
  SmallVector<bool> gradientReturned;

  /// Each layer's gradient sum starts at zero in a slot of its own, so where
  /// the layer's backward returns `sum + gradient` it returns the gradient
  /// instead: no zero-filled stack, no adds.
  void returnGradients() {
    Operation *ret = layer.backward.getBody().front().getTerminator();
    for (unsigned i = 0; i < layer.backward.getNumArguments(); ++i)
      if (roleOf(layer.backward, i) == shardc::kGradientRole)
        layerSums.push_back(i);
    for (unsigned r = 0; r < layer.backward.getNumResults(); ++r)
      if (!summedParam(layer.backward.getResultAttrDict(r)).empty())
        layerSumResults.push_back(r);
    for (auto [i, r] : llvm::zip_equal(layerSums, layerSumResults)) {
      Value sum = layer.backward.getArgument(i);
      auto add = ret->getOperand(r).getDefiningOp<linalg::LinalgOp>();
      bool returned =
          add && shardc::isElementwiseAdd(add) && llvm::is_contained(add.getDpsInputs(), sum);
      if (returned) {
        ret->setOperand(r, add.getDpsInputs()[add.getDpsInputs()[0] == sum]);
        if (add->use_empty())
          add->erase();
      }
      gradientReturned.push_back(returned);
    }
  }

  /// Where the loops keep each layer's residuals and gradients when not in a
  /// stack each: one f32 workspace of layers + 1 slots, layer l's residuals in
  /// slot l, its gradients in slot l + 1 (the backward loop writes those after
  /// layer l + 1 has read its residuals there), so that gradients take the
  /// bytes of spent residuals, as the unrolled step reused a finished layer's
  /// buffers. Only where that takes less memory than the stacks (data
  /// parallelism: a layer's gradients about as large as its residuals), every
  /// value is a dense f32 tensor and every gradient is returned (not a sum).
  struct Workspace {
    int64_t slot = 0;                            // elements per slot
    SmallVector<int64_t> residualAt, gradientAt; // offsets in a slot
  };
  std::optional<Workspace> planWorkspace(ArrayRef<Type> residuals, ArrayRef<Type> gradients) {
    Workspace plan;
    auto place = [](ArrayRef<Type> types, SmallVectorImpl<int64_t> &at) -> std::optional<int64_t> {
      int64_t size = 0;
      for (Type t : types) {
        auto type = cast<RankedTensorType>(t);
        if (!type.getElementType().isF32() || type.getRank() == 0 || !type.hasStaticShape())
          return std::nullopt;
        at.push_back(size);
        size += type.getNumElements();
      }
      return size;
    };
    std::optional<int64_t> kept = place(residuals, plan.residualAt),
                           made = place(gradients, plan.gradientAt);
    if (!kept || !made || !llvm::all_of(gradientReturned, [](bool r) { return r; }))
      return std::nullopt;
    // One-shot bufferization cannot tell a value made in one slot's place from
    // the values set into other places of the workspace before or after it,
    // so each iteration makes its residuals and gradients in temporaries
    // copied in, which live beside the iteration's others: counted twice (GPT-2
    // small's planned arenas: under dp.rules 692 -> 404 MiB, under tp.rules,
    // where the rule without the factor 2 took it, 572 -> 606 MiB).
    plan.slot = std::max(*kept, *made);
    if ((layers + 1) * plan.slot + 2 * (*kept + *made) >= layers * (*kept + *made))
      return std::nullopt;
    return plan;
  }

  /// The whole of `type`, flattened, at `at` of slot `slot` of `workspace`.
  static Value readSlot(OpBuilder &b, Location loc, Value workspace, OpFoldResult slot, int64_t at,
                        RankedTensorType type) {
    return slots(b, loc, workspace, slot, 0, at, type);
  }
  static Value writeSlot(OpBuilder &b, Location loc, Value workspace, OpFoldResult slot, int64_t at,
                         Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    ReassociationIndices all = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
    Value flat = type.getRank() == 1
                     ? value
                     : tensor::CollapseShapeOp::create(b, loc, value, ArrayRef{all}).getResult();
    return tensor::InsertSliceOp::create(
        b, loc, flat, workspace, ArrayRef<OpFoldResult>{slot, b.getIndexAttr(at)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(type.getNumElements())},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  }
  /// `count` slots from `first` of `workspace`, each's `type` at `at`: a stack
  /// of `type` (count 0: one `type`, without the layer dim).
  static Value slots(OpBuilder &b, Location loc, Value workspace, OpFoldResult first, int64_t count,
                     int64_t at, RankedTensorType type) {
    const int64_t n = type.getNumElements();
    SmallVector<int64_t> flatShape{n}, shape(type.getShape());
    if (count > 0) {
      flatShape.insert(flatShape.begin(), count);
      shape.insert(shape.begin(), count);
    }
    auto flatType = RankedTensorType::get(flatShape, type.getElementType());
    Value flat = tensor::ExtractSliceOp::create(
        b, loc, flatType, workspace, ArrayRef<OpFoldResult>{first, b.getIndexAttr(at)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(std::max<int64_t>(count, 1)), b.getIndexAttr(n)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
    if (flatShape.size() == shape.size())
      return flat;
    SmallVector<ReassociationIndices> groups;
    if (count > 0)
      groups.push_back({0});
    groups.push_back(llvm::to_vector(llvm::seq<int64_t>(count > 0, shape.size())));
    return tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), flat, groups);
  }
  static Value emptyOf(OpBuilder &b, Location loc, Type t) {
    auto type = cast<RankedTensorType>(t);
    return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  }

  /// The epilogue's backward returns the loss, the metrics, cotangents, sums.
  unsigned countMetrics() const {
    func::FuncOp fn = epilogue.backward;
    return fn.getNumResults() - countTransfers(fn) - countSums(fn) - 1;
  }

  static unsigned countTransfers(func::FuncOp fn) {
    unsigned n = 0;
    for (unsigned r = 0; r < fn.getNumResults(); ++r)
      n += transferOf(fn.getResultAttrDict(r)) >= 0;
    return n;
  }
  static unsigned countSums(func::FuncOp fn) {
    unsigned n = 0;
    for (unsigned r = 0; r < fn.getNumResults(); ++r)
      n += !summedParam(fn.getResultAttrDict(r)).empty();
    return n;
  }
};

} // namespace
