//===- LayerLoop.cpp - the scan as a loop ---------------------------------===//

#include "StepFunctionsImpl.h"

using namespace shardc;

void StepProgramBuilder::buildLayerLoop(const Forward &forward) {
  if (!program.optimizer || !program.pipeline.axis.empty() || program.microbatches.count > 1 ||
      countScans(program) != 1)
    return;
  const int64_t layers = flatLayers();
  const int epilogue = int(layers) + 1;
  auto stageOf = [](int64_t layer) { return int(layer) + 1; };
  Stages train =
      splitStages(program, forward, nodesOf(forward.lossAndMetrics), stageOf, epilogue, epilogue);
  Stages eval =
      splitStages(program, forward, nodesOf(sp.eval.results), stageOf, epilogue, epilogue);
  if (!passesCarryOnly(train, epilogue) || !passesCarryOnly(eval, epilogue))
    return;
  sp.params = stackLayers(program.params, forward.params, OpKind::param);
  sp.inputs = stackLayers(program.inputs, sp.inputs, OpKind::input);
  // The prologue takes the runtime's inputs (scanned dropout numbers stacked),
  // the layer the unscanned ones and its own (the first layer's) dropout
  // numbers, the epilogue the unscanned ones.
  std::vector<FunctionValue> outer, firstLayer;
  for (const FunctionValue &input : forward.inputs) {
    if (input.layer < 0)
      outer.push_back(input);
    if (input.layer <= 0)
      firstLayer.push_back(input);
  }
  LayerLoopSteps loop;
  loop.layers = layers;
  struct Part {
    int stage;
    const char *name;
    const std::vector<FunctionValue> &inputs;
  };
  for (const Part &part : {Part{0, "prologue", sp.inputs}, Part{1, "layer", firstLayer},
                           Part{epilogue, "epilogue", outer}}) {
    const std::string name = part.name;
    // The epilogue's backward follows its forward at once: one function,
    // which computes what it reads of the forward itself.
    const bool last = part.stage == epilogue;
    auto stage = buildStage(program, forward, train, part.stage, epilogue, forward.lossAndMetrics,
                            part.inputs, name + "_forward", name + (last ? "_step" : "_backward"),
                            /*keep=*/!last);
    if (!stage)
      return;
    if (last)
      loop.epilogue = std::move(stage->backward);
    else
      loop.parts.push_back(std::move(*stage));
    loop.evalParts.push_back(stageForward(forward, eval, part.stage, part.inputs, name + "_eval"));
  }
  llvm::append_range(loop.evalParts.back().results, sp.eval.results);
  loop.transfers = std::move(train.transfers);
  loop.evalTransfers = std::move(eval.transfers);
  loop.apply = buildApply(sp.params, forward.lossAndMetrics.front());
  sp.loop = std::move(loop);
}

bool StepProgramBuilder::passesCarryOnly(const Stages &stages, int epilogue) {
  std::map<std::pair<int, int>, unsigned> crossing;
  for (const PipelineTransfer &t : stages.transfers)
    ++crossing[{t.from, t.to}];
  for (const auto &[fromTo, count] : crossing) {
    auto [from, to] = fromTo;
    bool carry = to == from + 1 && from < epilogue;
    if ((carry && count != 1) || (!carry && !(from == 0 && to == epilogue)))
      return false;
  }
  return crossing.count({0, 1});
}
