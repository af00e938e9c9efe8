//===- PipelineSchedule.cpp - train_step as a pipeline's schedule ---------===//
//
// See shardc-pipeline-schedule in include/shardc/Shard/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "LayerStacks.h"
#include "MicrobatchLoops.h"
#include "shardc/IR/Attributes.h"
#include "shardc/Schedule/Passes.h"
#include "shardc/Schedule/PipelineSchedules.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/MapVector.h"

#include <map>

namespace shardc {
#define GEN_PASS_DEF_PIPELINESCHEDULEPASS
#include "shardc/Schedule/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc::layer_stacks;
using namespace shardc::microbatch_loops;

namespace {

struct PipelineSchedulePass : public shardc::impl::PipelineSchedulePassBase<PipelineSchedulePass> {
  ModuleOp module;
  DictionaryAttr pipeline;
  int16_t axis = 0;
  int64_t stages = 0, microbatches = 0;
  StringRef schedule;
  SmallVector<std::pair<int64_t, int64_t>> transfers; // from, to
  SmallVector<func::FuncOp> forwards, backwards;
  func::FuncOp apply;
  FlatSymbolRefAttr grid;

  // Where a parameter or input argument of a stage function comes from:
  // train_step's parameter or input `index`, or one layer of it stacked
  // (`localLayer` of this rank's stack, which stage `stage` holds). A stage
  // function reads only its own stage's layers; an input argument of another
  // stage's layer (a scanned dropout's numbers) is unused.
  struct Source {
    unsigned index = 0;
    int64_t localLayer = -1, stage = -1; // -1: the whole argument
  };
  SmallVector<SmallVector<Source>> stageParams; // per stage, each of its own
  SmallVector<Source> inputSources;             // the stage functions' inputs
  SmallVector<std::optional<Stack>> stacks;     // per train param
  SmallVector<unsigned> readingStages;          // per train param: how many take it
  /// Whether train param `p`'s gradient is reduced inside each stage's case as
  /// the stage's function reduced it: a stack's layers, and a parameter that
  /// several stages read (tied weights), come from functions partitioned apart.
  bool reducedInCase(unsigned p) const { return stacks[p] || readingStages[p] > 1; }
  // The reductions taken out of each backward function, by result (or null).
  SmallVector<SmallVector<Operation *>> deferred;
  llvm::StringMap<unsigned> stackedParam; // name -> train param
  unsigned numParams = 0, numState = 0, numInputs = 0, numMetrics = 0;
  SmallVector<Type> sumTypes, totalTypes;      // totals: loss, then metrics
  SmallVector<int64_t> keptBytesPerMicrobatch; // per stage, for the report

  void runOnOperation() override {
    module = getOperation();
    pipeline = module->getAttrOfType<DictionaryAttr>(shardc::kPipelineAttr);
    if (!pipeline)
      return;
    if (failed(readModule()))
      return signalPassFailure();
    for (StringRef name : {shardc::kEvalFunction, shardc::kGradFunction})
      if (auto fn = module.lookupSymbol<func::FuncOp>(name))
        takeStacks(fn);
    for (func::FuncOp backward : backwards)
      deferred.push_back(deferReductions(backward));
    func::FuncOp train = buildTrainStep();
    for (auto &ops : deferred)
      for (Operation *op : ops)
        if (op && op->use_empty())
          op->erase();
    SmallVector<func::CallOp> calls;
    train.walk([&](func::CallOp call) { calls.push_back(call); });
    for (func::CallOp call : calls)
      if (auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
          callee && !callee.isExternal())
        inlineCall(call, callee);
    for (func::FuncOp fn : forwards)
      fn.erase();
    for (func::FuncOp fn : backwards)
      fn.erase();
    apply.erase();
    train.walk([](scf::ForOp loop) { addInPlace(loop); });
    // The report's: the bytes a stage keeps per microbatch from forward to backward.
    NamedAttrList plan(pipeline);
    plan.set("kept_bytes", DenseI64ArrayAttr::get(module.getContext(), keptBytesPerMicrobatch));
    module->setAttr(shardc::kPipelineAttr, plan.getDictionary(module.getContext()));
  }

  LogicalResult readModule() {
    auto axisAttr = pipeline.getAs<IntegerAttr>("axis");
    auto stagesAttr = pipeline.getAs<IntegerAttr>("stages");
    auto scheduleAttr = pipeline.getAs<StringAttr>("schedule");
    auto transfersAttr = pipeline.getAs<ArrayAttr>("transfers");
    auto count = module->getAttrOfType<IntegerAttr>(shardc::kMicrobatchesAttr);
    apply = module.lookupSymbol<func::FuncOp>(shardc::kApplyFunction);
    auto gridOp = module.lookupSymbol<shard::GridOp>(shardc::kGridName);
    if (!axisAttr || !stagesAttr || !scheduleAttr || !transfersAttr || !count || !apply ||
        !gridOp || module.lookupSymbol(shardc::kTrainFunction))
      return module.emitError("shardc-pipeline-schedule needs the module's ")
             << shardc::kPipelineAttr << " {axis, stages, schedule, transfers}, "
             << shardc::kMicrobatchesAttr << ", @" << shardc::kApplyFunction << ", @"
             << shardc::kGridName << " and no @" << shardc::kTrainFunction;
    axis = int16_t(axisAttr.getInt());
    stages = stagesAttr.getInt();
    microbatches = count.getInt();
    schedule = scheduleAttr.getValue();
    grid = FlatSymbolRefAttr::get(gridOp.getSymNameAttr());
    for (Attribute t : transfersAttr) {
      ArrayRef<int64_t> fromTo = cast<DenseI64ArrayAttr>(t).asArrayRef();
      transfers.push_back({fromTo[0], fromTo[1]});
    }
    for (int64_t s = 0; s < stages; ++s) {
      std::string n = std::to_string(s);
      forwards.push_back(module.lookupSymbol<func::FuncOp>(shardc::kStageForwardFunction + n));
      backwards.push_back(module.lookupSymbol<func::FuncOp>(shardc::kStageBackwardFunction + n));
      if (!backwards.back() || !forwards.back())
        return module.emitError("shardc-pipeline-schedule: stage ")
               << s << "'s functions are missing";
    }
    std::map<std::pair<std::string, int64_t>, unsigned> paramIndex; // key -> train param
    for (unsigned i = 0; i < apply.getNumArguments(); ++i) {
      StringRef role = roleOf(apply, i);
      if (role == shardc::kParameterRole) {
        stacks.emplace_back();
        if (auto layers = apply.getArgAttrOfType<IntegerAttr>(i, shardc::kStackedAttr)) {
          auto type = cast<RankedTensorType>(apply.getArgumentTypes()[i]);
          stacks.back() = Stack{type, apply.getArgAttrDict(i), layers.getInt(), type.getDimSize(0)};
          stackedParam[nameAndLayer(apply, i).first] = numParams;
        }
        paramIndex[nameAndLayer(apply, i)] = numParams++;
      } else if (role == shardc::kOptimizerStateRole) {
        ++numState;
      } else if (role == shardc::kGradientRole) {
        sumTypes.push_back(apply.getArgumentTypes()[i]);
      }
    }
    for (auto [s, backward] : llvm::enumerate(backwards)) {
      stageParams.emplace_back();
      for (unsigned i = 0; i < backward.getNumArguments(); ++i) {
        if (roleOf(backward, i) != shardc::kParameterRole)
          continue;
        auto [name, layer] = nameAndLayer(backward, i);
        if (auto whole = paramIndex.find({name, layer}); whole != paramIndex.end()) {
          stageParams.back().push_back({whole->second});
          continue;
        }
        auto stacked = stackedParam.find(name);
        if (layer < 0 || stacked == stackedParam.end())
          return backward.emitError("shardc-pipeline-schedule: parameter '")
                 << name << "' is not an argument of @" << shardc::kApplyFunction;
        const Stack &stack = *stacks[stacked->second];
        if (stack.split() && stack.stageOf(layer) != int64_t(s))
          return backward.emitError("shardc-pipeline-schedule: layer ")
                 << layer << " of '" << name << "' is not on stage " << s;
        stageParams.back().push_back({stacked->second, stack.localIndex(layer), int64_t(s)});
      }
    }
    readingStages.assign(numParams, 0);
    for (const auto &own : stageParams) {
      llvm::SmallDenseSet<unsigned> taken; // a stack's layers once
      for (const Source &source : own)
        if (taken.insert(source.index).second)
          ++readingStages[source.index];
    }
    func::FuncOp last = backwards.back();
    llvm::StringMap<int64_t> layersOf = inputLayers(last);
    llvm::StringMap<unsigned> stackIndex;
    for (unsigned i = 0; i < last.getNumArguments(); ++i) {
      if (roleOf(last, i) != shardc::kInputRole)
        continue;
      auto [name, layer] = nameAndLayer(last, i);
      if (layer < 0) {
        inputSources.push_back({numInputs++});
        continue;
      }
      auto [it, first] = stackIndex.try_emplace(name, numInputs);
      numInputs += first;
      Stack stack = inputStack(name, layersOf.at(name), last.getArgumentTypes()[i]);
      inputSources.push_back({it->second, stack.localIndex(layer), stack.stageOf(layer)});
    }
    // The last stage's results: loss and metrics, cotangents, one sum per parameter.
    const unsigned numTotals =
        last.getNumResults() - cotangentResults(last) - stageParams.back().size();
    for (unsigned r = 0; r < numTotals; ++r)
      totalTypes.push_back(last.getResultTypes()[r]);
    numMetrics = numTotals - 1;
    return success();
  }

  /// The stack of scanned input `name` of `layers` layers, one of them `layerType`:
  /// split over the stages.
  Stack inputStack(StringRef name, int64_t layers, Type layerType) {
    auto type = cast<RankedTensorType>(layerType);
    SmallVector<int64_t> shape{layers / stages};
    llvm::append_range(shape, type.getShape());
    OpBuilder b(module.getContext());
    return {
        type.clone(shape),
        b.getDictionaryAttr({b.getNamedAttr(shardc::kNameAttr, b.getStringAttr(name)),
                             b.getNamedAttr(shardc::kRoleAttr, b.getStringAttr(shardc::kInputRole)),
                             b.getNamedAttr(shardc::kStackedAttr, b.getI64IntegerAttr(layers))}),
        layers, layers / stages};
  }

  /// eval_step and grad_step, built layer by layer, take a stacked parameter
  /// (and a scanned dropout's numbers) as train_step does, and grad_step
  /// returns a stacked parameter's gradient so: evaluation runs the whole
  /// model on every rank, each layer gathered from the stage that holds it
  /// where it is read (an all_gather over the stages of every stage's layer at
  /// that local index, kept apart from cse as shardc-regather-parameters keeps
  /// its copies: p layers live at a time, not the whole model, for p times
  /// the model's bytes sent); a gradient's stack is this rank's own layers of
  /// the whole one.
  void takeStacks(func::FuncOp fn) {
    llvm::StringMap<int64_t> inputs = inputLayers(fn);
    Block &body = fn.getBody().front();
    OpBuilder b(fn.getContext());
    Location loc = fn.getLoc();
    int64_t gathers = 0;
    auto stackArg = [&](StringRef role, StringRef name, Type layerType) -> std::optional<Stack> {
      if (role == shardc::kInputRole)
        return inputStack(name, inputs.lookup(name), layerType);
      if (role != shardc::kParameterRole || !stackedParam.count(name))
        return std::nullopt;
      return paramStack(name);
    };
    auto layerFor = [&](Value stack, int64_t layer, const Stack &stacked) -> Value {
      auto type = cast<RankedTensorType>(stack.getType());
      if (!stacked.split())
        return layerOf(b, loc, stack, layer);
      auto [offsets, sizes, strides] =
          layerSlice(b, type, b.getIndexAttr(stacked.localIndex(layer)));
      Value own = tensor::ExtractSliceOp::create(b, loc, stack, offsets, sizes, strides);
      SmallVector<int64_t> shape(type.getShape());
      shape[0] = stages;
      auto everyStage =
          shard::AllGatherOp::create(b, loc, RankedTensorType::get(shape, type.getElementType()),
                                     grid, b.getDenseI16ArrayAttr({axis}), own, b.getIndexAttr(0));
      everyStage->setAttr(shardc::kRegatherAttr, b.getI64IntegerAttr(gathers++));
      return layerOf(b, loc, everyStage, stacked.stageOf(layer));
    };
    auto gatherLayer = [&](Value old, StringRef, int64_t layer, Value stack, const Stack &stacked) {
      for (OpOperand &use : llvm::make_early_inc_range(old.getUses())) {
        b.setInsertionPoint(body.findAncestorOpInBlock(*use.getOwner()));
        use.set(layerFor(stack, layer, stacked));
      }
    };
    if (failed(stackArguments(fn, stackArg, gatherLayer)))
      return signalPassFailure();
    stackGradients(fn);
  }

  /// grad_step's gradients of a stacked parameter: this rank's layers of the stack.
  void stackGradients(func::FuncOp fn) {
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    OpBuilder b(ret);
    Location loc = fn.getLoc();
    SmallVector<Value> results;
    SmallVector<DictionaryAttr> resultAttrs;
    llvm::MapVector<StringRef, unsigned> stackResult; // name -> its result
    for (unsigned r = 0; r < fn.getNumResults(); ++r) {
      auto name = fn.getResultAttrOfType<StringAttr>(r, shardc::kNameAttr);
      auto layer = fn.getResultAttrOfType<IntegerAttr>(r, shardc::kLayerAttr);
      Value value = ret.getOperand(r);
      if (!name || !layer || !stackedParam.count(name.getValue())) {
        results.push_back(value);
        resultAttrs.push_back(fn.getResultAttrDict(r));
        continue;
      }
      auto [it, first] = stackResult.try_emplace(name.getValue(), results.size());
      if (first) {
        const Stack &stack = paramStack(name.getValue());
        auto stackType = cast<RankedTensorType>(stack.type);
        SmallVector<int64_t> shape(stackType.getShape());
        shape[0] = stack.layers;
        results.push_back(tensor::EmptyOp::create(b, loc, shape, stackType.getElementType()));
        resultAttrs.push_back(b.getDictionaryAttr(
            {b.getNamedAttr(shardc::kNameAttr, name),
             b.getNamedAttr(shardc::kStackedAttr, b.getI64IntegerAttr(stack.layers))}));
      }
      results[it->second] = setLayer(b, loc, results[it->second], layer.getInt(), value);
    }
    if (!stackResult.empty()) {
      auto coordinate = shard::ProcessMultiIndexOp::create(b, loc, TypeRange{b.getIndexType()},
                                                           grid, b.getDenseI16ArrayAttr({axis}));
      for (auto [name, r] : stackResult) {
        if (!paramStack(name).split())
          continue;
        const int64_t local = paramStack(name).local;
        Value first = arith::MulIOp::create(b, loc, coordinate->getResult(0),
                                            arith::ConstantIndexOp::create(b, loc, local));
        auto [offsets, sizes, strides] =
            layerSlice(b, cast<RankedTensorType>(results[r].getType()), first, local);
        results[r] = tensor::ExtractSliceOp::create(b, loc, results[r], offsets, sizes, strides);
      }
    }
    ret->setOperands(results);
    fn.setType(
        FunctionType::get(fn.getContext(), fn.getArgumentTypes(), ValueRange(results).getTypes()));
    fn.setAllResultAttrs(resultAttrs);
  }

  static unsigned cotangentResults(func::FuncOp fn) {
    unsigned n = 0;
    for (unsigned r = 0; r < fn.getNumResults(); ++r)
      n += bool(fn.getResultAttr(r, shardc::kTransferAttr));
    return n;
  }
  static std::string resultName(func::FuncOp fn, unsigned r) {
    auto name = fn.getResultAttrOfType<StringAttr>(r, shardc::kNameAttr);
    return name ? name.str() : "";
  }
  static int64_t transferOf(DictionaryAttr attrs) {
    auto t = attrs ? attrs.getAs<IntegerAttr>(shardc::kTransferAttr) : nullptr;
    return t ? t.getInt() : -1;
  }

  /// The MPI tag of transfer `k`'s activations (even) or cotangents (odd).
  static int64_t tagOf(int64_t k, bool cotangent) { return 2 * k + (cotangent ? 1 : 0); }

  /// A scalar travels as one element: shard.send and shard.recv take ranked tensors
  /// of rank 1 or more.
  static RankedTensorType messageType(RankedTensorType type) {
    return type.getRank() ? type : RankedTensorType::get({1}, type.getElementType());
  }

  Value receive(OpBuilder &b, Location loc, Type type, int64_t k, bool cotangent) {
    auto tensorType = cast<RankedTensorType>(type);
    RankedTensorType message = messageType(tensorType);
    Value empty = tensor::EmptyOp::create(b, loc, message.getShape(), message.getElementType());
    int64_t from = cotangent ? transfers[k].second : transfers[k].first;
    auto recv = shard::RecvOp::create(b, loc, message, grid, b.getDenseI16ArrayAttr({axis}), empty,
                                      b.getDenseI64ArrayAttr({from}), ValueRange());
    recv->setAttr(shardc::kTransferAttr, b.getI64IntegerAttr(tagOf(k, cotangent)));
    if (message == tensorType)
      return recv.getResult();
    return tensor::CollapseShapeOp::create(b, loc, tensorType, recv.getResult(),
                                           ArrayRef<ReassociationIndices>{});
  }

  void send(OpBuilder &b, Location loc, Value value, int64_t k, bool cotangent) {
    int64_t to = cotangent ? transfers[k].first : transfers[k].second;
    auto type = cast<RankedTensorType>(value.getType());
    RankedTensorType message = messageType(type);
    if (message != type)
      value =
          tensor::ExpandShapeOp::create(b, loc, message, value, ArrayRef<ReassociationIndices>{});
    auto op = shard::SendOp::create(b, loc, message, grid, b.getDenseI16ArrayAttr({axis}), value,
                                    b.getDenseI64ArrayAttr({to}), ValueRange());
    op->setAttr(shardc::kTransferAttr, b.getI64IntegerAttr(tagOf(k, cotangent)));
  }

  /// What one stage's loop carries: its gradients' sums, the loss and metrics'
  /// totals (the last stage's), and a buffer of slots per kept value.
  struct Carried {
    SmallVector<Value> sums, totals, buffers;
    SmallVector<Value> flat() const {
      SmallVector<Value> all(sums);
      llvm::append_range(all, totals);
      llvm::append_range(all, buffers);
      return all;
    }
    void assign(ValueRange all) {
      auto rest = all;
      sums.assign(rest.begin(), rest.begin() + sums.size());
      rest = rest.drop_front(sums.size());
      totals.assign(rest.begin(), rest.begin() + totals.size());
      rest = rest.drop_front(totals.size());
      buffers.assign(rest.begin(), rest.end());
    }
  };

  /// Stage `s`'s schedule inside its case of the switch; returns what it
  /// yields: every parameter's gradient sum (zeros for other stages'), the totals.
  SmallVector<Value> buildStage(OpBuilder &b, Location loc, int64_t s, ValueRange trainArgs) {
    func::FuncOp forward = forwards[s], backward = backwards[s];
    ValueRange params = trainArgs.take_front(numParams);
    ValueRange inputs = trainArgs.slice(numParams + numState, numInputs);
    const int64_t slots = shardc::pipelineSlots(schedule, s, stages, microbatches);

    ArrayRef<Source> ownSources = stageParams[s];
    SmallVector<Value> ownParams;
    for (const Source &source : ownSources)
      ownParams.push_back(source.localLayer < 0
                              ? params[source.index]
                              : layerOf(b, loc, params[source.index], source.localLayer));
    // What the backward pass reads of the forward pass's microbatch, each kept
    // in a buffer of slots: the activations received, the residuals.
    SmallVector<Type> keptTypes;
    std::map<int64_t, unsigned> keptActivation; // transfer -> kept
    llvm::StringMap<unsigned> keptResidual;     // name -> kept
    for (unsigned i = 0; i < backward.getNumArguments(); ++i) {
      StringRef role = roleOf(backward, i);
      if (role == shardc::kActivationRole)
        keptActivation[transferOf(backward.getArgAttrDict(i))] = keptTypes.size();
      else if (role == shardc::kResidualRole)
        keptResidual[nameAndLayer(backward, i).first] = keptTypes.size();
      if (role == shardc::kActivationRole || role == shardc::kResidualRole)
        keptTypes.push_back(backward.getArgumentTypes()[i]);
    }
    int64_t keptBytes = 0;
    for (Type t : keptTypes) {
      auto type = cast<RankedTensorType>(t);
      keptBytes += type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
    }
    keptBytesPerMicrobatch.push_back(keptBytes);
    Carried state;
    for (Value p : ownParams)
      state.sums.push_back(zerosOf(b, loc, cast<RankedTensorType>(p.getType())));
    if (s + 1 == stages)
      for (Type t : totalTypes)
        state.totals.push_back(zerosOf(b, loc, cast<RankedTensorType>(t)));
    for (Type t : keptTypes) {
      auto type = cast<RankedTensorType>(t);
      SmallVector<int64_t> shape{slots};
      llvm::append_range(shape, type.getShape());
      state.buffers.push_back(tensor::EmptyOp::create(b, loc, shape, type.getElementType()));
    }

    auto keep = [&](OpBuilder &nb, Location at, Carried &c, unsigned n, Value value, Value slot) {
      c.buffers[n] = setLayer(nb, at, c.buffers[n], slot, value);
    };
    auto kept = [&](OpBuilder &nb, Location at, Carried &c, unsigned n, Value slot) {
      return layerOf(nb, at, c.buffers[n], slot);
    };
    // Input `n` of the stage's functions (argument `i` of `fn`): microbatch j's
    // slice, of its layer's when it is a scanned dropout's numbers (a function
    // reads only its own stage's layers' of them).
    auto microbatchInput = [&](OpBuilder &nb, Location at, func::FuncOp fn, unsigned i, unsigned n,
                               Value j) -> Value {
      const Source &source = inputSources[n];
      auto type = cast<RankedTensorType>(fn.getArgumentTypes()[i]);
      Value input = inputs[source.index];
      if (source.localLayer >= 0) {
        if (source.stage != s) {
          if (!fn.getArgument(i).use_empty()) {
            fn.emitError("shardc-pipeline-schedule: stage ")
                << s << " reads another stage's layer of input '" << nameAndLayer(fn, i).first
                << "'";
            signalPassFailure();
          }
          return tensor::EmptyOp::create(nb, at, type.getShape(), type.getElementType());
        }
        input = layerOf(nb, at, input, source.localLayer);
      }
      auto dim = fn.getArgAttrOfType<IntegerAttr>(i, shardc::kMicrobatchDimAttr);
      return dim ? sliceMicrobatch(nb, at, input, type, dim.getInt(), j) : input;
    };
    auto slotOf = [&](OpBuilder &nb, Location at, Value j) -> Value {
      return arith::RemUIOp::create(nb, at, j, arith::ConstantIndexOp::create(nb, at, slots));
    };

    // F(j): receive and keep the activations, compute, send on, keep the residuals.
    auto runForward = [&](OpBuilder &nb, Location at, Value j, Carried &c) {
      Value slot = slotOf(nb, at, j);
      std::map<int64_t, Value> received;
      for (auto [k, n] : keptActivation) {
        received[k] = receive(nb, at, keptTypes[n], k, /*cotangent=*/false);
        keep(nb, at, c, n, received[k], slot);
      }
      SmallVector<Value> operands;
      unsigned nextParam = 0, nextInput = 0;
      for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
        StringRef role = roleOf(forward, i);
        if (role == shardc::kParameterRole)
          operands.push_back(ownParams[nextParam++]);
        else if (role == shardc::kInputRole)
          operands.push_back(microbatchInput(nb, at, forward, i, nextInput++, j));
        else
          operands.push_back(received.at(transferOf(forward.getArgAttrDict(i))));
      }
      auto call = func::CallOp::create(nb, at, forward, operands);
      for (unsigned r = 0; r < forward.getNumResults(); ++r) {
        int64_t k = transferOf(forward.getResultAttrDict(r));
        if (k >= 0)
          send(nb, at, call.getResult(r), k, /*cotangent=*/false);
        else
          keep(nb, at, c, keptResidual.at(resultName(forward, r)), call.getResult(r), slot);
      }
    };
    // B(j): the kept values, the cotangents of what F(j) sent; send back the
    // cotangents of what it received, add its gradients and totals.
    auto runBackward = [&](OpBuilder &nb, Location at, Value j, Carried &c) {
      Value slot = slotOf(nb, at, j);
      SmallVector<Value> operands;
      unsigned nextParam = 0, nextSum = 0, nextInput = 0;
      for (unsigned i = 0; i < backward.getNumArguments(); ++i) {
        StringRef role = roleOf(backward, i);
        if (role == shardc::kParameterRole)
          operands.push_back(ownParams[nextParam++]);
        else if (role == shardc::kGradientRole)
          operands.push_back(c.sums[nextSum++]);
        else if (role == shardc::kInputRole)
          operands.push_back(microbatchInput(nb, at, backward, i, nextInput++, j));
        else if (role == shardc::kActivationRole)
          operands.push_back(
              kept(nb, at, c, keptActivation.at(transferOf(backward.getArgAttrDict(i))), slot));
        else if (role == shardc::kResidualRole)
          operands.push_back(
              kept(nb, at, c, keptResidual.at(nameAndLayer(backward, i).first), slot));
        else
          operands.push_back(receive(nb, at, backward.getArgumentTypes()[i],
                                     transferOf(backward.getArgAttrDict(i)), /*cotangent=*/true));
      }
      auto call = func::CallOp::create(nb, at, backward, operands);
      const unsigned numTotals = c.totals.size();
      for (unsigned r = 0; r < numTotals; ++r)
        c.totals[r] = accumulate(nb, at, c.totals[r], call.getResult(r));
      unsigned r = numTotals;
      for (; r < call.getNumResults() - c.sums.size(); ++r)
        send(nb, at, call.getResult(r), transferOf(backward.getResultAttrDict(r)), true);
      for (unsigned n = 0; n < c.sums.size(); ++n)
        c.sums[n] = call.getResult(r + n);
    };

    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    for (const shardc::PipelineLoop &loop :
         shardc::pipelineSchedule(schedule, s, stages, microbatches)) {
      if (loop.count == 0)
        continue;
      Value upper = arith::ConstantIndexOp::create(b, loc, loop.count);
      auto forOp = scf::ForOp::create(
          b, loc, zero, upper, one, state.flat(),
          [&](OpBuilder &nb, Location at, Value i, ValueRange carried) {
            Carried c = state;
            c.assign(carried);
            for (const shardc::PipelineAction &action : loop.actions) {
              Value j = arith::AddIOp::create(
                  nb, at,
                  arith::MulIOp::create(nb, at, i,
                                        arith::ConstantIndexOp::create(nb, at, action.scale)),
                  arith::ConstantIndexOp::create(nb, at, action.offset));
              if (action.forward)
                runForward(nb, at, j, c);
              else
                runBackward(nb, at, j, c);
            }
            scf::YieldOp::create(nb, at, c.flat());
          });
      state.assign(forOp.getResults());
    }

    // Other stages' parameters get zeros; a stacked one gets its layers' sums.
    // Those reducedInCase are reduced here as this stage's function reduced
    // them (a collective in the case meets this stage's ranks alone).
    SmallVector<Value> yielded;
    for (unsigned p = 0; p < numParams; ++p)
      yielded.push_back(zerosOf(b, loc, cast<RankedTensorType>(sumTypes[p])));
    // (Every reduction before the first insertion: shardc-bucket-all-reduces
    // then gathers them.)
    const unsigned firstSum = backward.getNumResults() - ownSources.size();
    SmallVector<Value> reduced;
    for (auto [n, source, sum] : llvm::enumerate(ownSources, state.sums))
      reduced.push_back(reducedInCase(source.index)
                            ? reduce(b, loc, sum, deferred[s][firstSum + n], /*overStages=*/false)
                            : sum);
    for (auto [source, sum] : llvm::zip_equal(ownSources, reduced))
      yielded[source.index] = source.localLayer < 0
                                  ? sum
                                  : setLayer(b, loc, yielded[source.index], source.localLayer, sum);
    for (unsigned t = 0; t < totalTypes.size(); ++t)
      yielded.push_back(state.totals.empty()
                            ? zerosOf(b, loc, cast<RankedTensorType>(totalTypes[t]))
                            : state.totals[t]);
    return yielded;
  }

  /// The stack of stacked parameter `name`.
  const Stack &paramStack(StringRef name) const { return *stacks[stackedParam.at(name)]; }

  /// Whether train param `p` is a stack split over the stages: its gradient sum
  /// is then its own stage's alone.
  bool splitOverStages(unsigned p) const { return stacks[p] && stacks[p]->split(); }

  /// `value` summed over the stages (with `overStages`), and over the axes
  /// `deferred` (an all_reduce taken out of the stage's function, or null)
  /// reduced it.
  Value reduce(OpBuilder &b, Location loc, Value value, Operation *deferred, bool overStages) {
    SmallVector<int16_t> axes;
    if (overStages)
      axes.push_back(axis);
    if (auto reduce = dyn_cast_or_null<shard::AllReduceOp>(deferred))
      llvm::append_range(axes, reduce.getGridAxes());
    if (axes.empty())
      return value;
    llvm::sort(axes);
    auto reduced = shard::AllReduceOp::create(
        b, loc, value.getType(), grid, b.getDenseI16ArrayAttr(axes), value,
        shard::ReductionKindAttr::get(b.getContext(), shard::ReductionKind::Sum));
    if (deferred)
      for (NamedAttribute attr : deferred->getDiscardableAttrs())
        reduced->setAttr(attr.getName(), attr.getValue());
    return reduced.getResult();
  }

  func::FuncOp buildTrainStep() {
    func::FuncOp last = backwards.back();
    func::FuncOp train = declareTrainStep(apply, last, microbatches, numMetrics);
    // A scanned dropout's numbers come as one stack, split over the stages.
    llvm::StringMap<int64_t> scanned = inputLayers(train);
    auto inputsOnly = [&](StringRef role, StringRef name, Type layerType) -> std::optional<Stack> {
      if (role != shardc::kInputRole)
        return std::nullopt;
      return inputStack(name, scanned.lookup(name), layerType);
    };
    if (failed(stackArguments(train, inputsOnly,
                              [](Value, StringRef, int64_t, Value, const Stack &) {})))
      signalPassFailure();
    Block *entry = &train.getBody().front();
    OpBuilder b = OpBuilder::atBlockBegin(entry);
    Location loc = apply.getLoc();
    ValueRange args = entry->getArguments();
    const unsigned updated = numParams + numState;

    // Every rank runs its own stage's case: a collective inside one meets
    // only ranks of the same stage, whose communicators exist from the start.
    func::FuncOp prepare = runtimeFunction(b, "shardrt_make_communicators");
    func::CallOp::create(b, loc, prepare, ValueRange());
    auto coordinate = shard::ProcessMultiIndexOp::create(b, loc, TypeRange{b.getIndexType()}, grid,
                                                         b.getDenseI16ArrayAttr({axis}));
    SmallVector<Type> yieldedTypes(sumTypes);
    llvm::append_range(yieldedTypes, totalTypes);
    SmallVector<int64_t> cases;
    for (int64_t s = 0; s + 1 < stages; ++s)
      cases.push_back(s);
    // The cases write what they yield into buffers made before the switch: a
    // region that yielded its own allocations would need the deallocation's
    // runtime ownership checks, which the bare-pointer lowering lacks.
    SmallVector<Value> outs;
    for (Type t : yieldedTypes) {
      auto type = cast<RankedTensorType>(t);
      outs.push_back(
          memref::AllocOp::create(b, loc, MemRefType::get(type.getShape(), type.getElementType())));
    }
    auto switchOp = scf::IndexSwitchOp::create(b, loc, TypeRange(), coordinate->getResult(0), cases,
                                               cases.size());
    for (int64_t s = 0; s < stages; ++s) {
      Region &region = s + 1 < stages ? switchOp.getCaseRegions()[s] : switchOp.getDefaultRegion();
      Block *block = b.createBlock(&region);
      b.setInsertionPointToStart(block);
      for (auto [value, out] : llvm::zip_equal(buildStage(b, loc, s, args), outs))
        bufferization::MaterializeInDestinationOp::create(b, loc, TypeRange(), value, out,
                                                          /*restrict=*/false, /*writable=*/true);
      scf::YieldOp::create(b, loc);
    }
    b.setInsertionPointAfter(switchOp);
    SmallVector<Value> yielded;
    for (auto [t, out] : llvm::zip_equal(yieldedTypes, outs))
      yielded.push_back(bufferization::ToTensorOp::create(b, loc, t, out, /*restrict=*/true,
                                                          /*writable=*/true));
    func::FuncOp sendsDone = runtimeFunction(b, "shardrt_wait_sends");
    func::CallOp::create(b, loc, sendsDone, ValueRange());

    // Each gradient sum and total reduced over the stages (zeros but on its
    // own stage; a stack split over them is on its own stage's ranks alone) and
    // over what its stage's function reduced it (a stack's layers were), then
    // scaled.
    SmallVector<Value> sums, totals;
    std::map<unsigned, std::pair<unsigned, unsigned>> sumSource; // param -> (stage, result)
    for (auto [s, own] : llvm::enumerate(stageParams)) {
      // A backward function's sums are its last results, one per parameter
      // (a stack's first layer's scale stands for its layers').
      const unsigned firstSum = backwards[s].getNumResults() - own.size();
      for (auto [n, source] : llvm::enumerate(own))
        sumSource.insert({source.index, {unsigned(s), firstSum + unsigned(n)}});
    }
    auto scaled = [&](Value value, func::FuncOp fn, unsigned r) {
      if (auto factor = fn.getResultAttrOfType<FloatAttr>(r, shardc::kMicrobatchScaleAttr))
        return scale(b, loc, value, factor.getValueAsDouble());
      return value;
    };
    for (unsigned p = 0; p < numParams; ++p) {
      Value sum = yielded[p];
      auto source = sumSource.find(p);
      if (source == sumSource.end()) { // read by no stage: zeros on every rank
        sums.push_back(sum);
        continue;
      }
      auto [s, r] = source->second;
      sums.push_back(reduce(b, loc, scaled(sum, backwards[s], r),
                            reducedInCase(p) ? nullptr : deferred[s][r], !splitOverStages(p)));
    }
    for (unsigned t = 0; t < totalTypes.size(); ++t)
      totals.push_back(
          reduce(b, loc, scaled(yielded[numParams + t], last, t), deferred.back()[t], true));

    SmallVector<Value> applyOperands(args.take_front(updated));
    llvm::append_range(applyOperands, sums);
    applyOperands.push_back(totals.front());
    applyOperands.push_back(args.back());
    auto update = func::CallOp::create(b, loc, apply, applyOperands);
    SmallVector<Value> results(update.getResults().take_front(updated));
    results.push_back(update.getResults().back());
    llvm::append_range(results, ArrayRef(totals).drop_front());
    func::ReturnOp::create(b, loc, results);
    return train;
  }

  func::FuncOp runtimeFunction(OpBuilder &b, StringRef name) {
    if (auto fn = module.lookupSymbol<func::FuncOp>(name))
      return fn;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto fn = func::FuncOp::create(b, module.getLoc(), name, b.getFunctionType({}, {}));
    fn.setPrivate();
    return fn;
  }
};

} // namespace
