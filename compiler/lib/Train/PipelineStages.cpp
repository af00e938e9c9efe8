//===- PipelineStages.cpp - a pipeline's stages ---------------------------===//

#include "StepFunctionsImpl.h"

using namespace shardc;

std::vector<int> StepProgramBuilder::assignStages(const Forward &forward,
                                                  const std::vector<unsigned> &roots,
                                                  const std::vector<bool> &needed,
                                                  llvm::function_ref<int(int64_t)> stageOf,
                                                  int epilogue, int last,
                                                  std::map<unsigned, std::set<int>> &shared) {
  std::vector<int> stage(sp.graph.nodes.size(), -1);
  std::vector<bool> isParam(sp.graph.nodes.size(), false);
  for (const FunctionValue &p : forward.params)
    isParam[p.node] = true;
  for (const Node &node : sp.graph.nodes) {
    if (!needed[node.id])
      continue;
    if (auto layer = node.attrs.find("layer"); layer != node.attrs.end() && node.operands.empty()) {
      stage[node.id] = stageOf(std::get<int64_t>(layer->second));
      continue;
    }
    // The layer loop's first layer receives its carry from the prologue even
    // where it is an input, as every later layer receives it from the one before.
    if (epilogue >= 0 && node.layer >= 0)
      for (unsigned operand : node.operands)
        if (const Node &value = sp.graph.nodes[operand];
            value.op == OpKind::input && !value.attrs.count("layer"))
          stage[operand] = 0;
    bool computed = false; // from a parameter, somewhere before
    for (unsigned operand : node.operands) {
      stage[node.id] = std::max(stage[node.id], stage[operand]);
      computed = computed || isParam[operand] || stage[operand] >= 0;
    }
    if (!computed)
      continue;
    if (node.layer >= 0)
      stage[node.id] = std::max(stage[node.id], stageOf(node.layer));
    else if (epilogue >= 0 && stage[node.id] > 0)
      stage[node.id] = epilogue;
    else
      stage[node.id] = std::max(stage[node.id], 0);
  }
  // A root that other nodes read (an output that the loss depends on) or that a
  // layer computes (an output inside the scan) stays where it is, and is sent to
  // the last stage (splitStages); any other is the last stage's.
  std::set<unsigned> read;
  for (const Node &node : sp.graph.nodes)
    if (needed[node.id])
      read.insert(node.operands.begin(), node.operands.end());
  for (unsigned root : roots)
    if (sp.graph.nodes[root].layer < 0 && !read.count(root))
      stage[root] = last;
  // A parameter outside the scan: the stages that read it.
  std::map<unsigned, std::set<int>> readers;
  for (const Node &node : sp.graph.nodes)
    if (needed[node.id])
      for (unsigned operand : node.operands)
        if (isParam[operand])
          readers[operand].insert(stage[node.id]);
  // One the loss does not read: a scanned layer's on its stage (the stage holds
  // it), any other on the first.
  for (const FunctionValue &p : forward.params) {
    const std::set<int> &read = readers[p.node]; // none: the loss does not read it
    if (p.layer >= 0) {
      stage[p.node] = stageOf(p.layer);
    } else if (read.size() > 1) {
      stage[p.node] = kEveryReader;
      shared[p.node] = read;
    } else {
      stage[p.node] = read.empty() ? 0 : *read.begin();
    }
  }
  return stage;
}

unsigned StepProgramBuilder::countScans(const TypedProgram &p) {
  return llvm::count_if(p.graph.nodes, [](const Node &n) { return n.op == OpKind::scan; });
}

int64_t StepProgramBuilder::flatLayers() const {
  int64_t layers = 0;
  for (const Node &node : sp.graph.nodes)
    if (auto layer = node.attrs.find("layer"); layer != node.attrs.end())
      layers = std::max(layers, std::get<int64_t>(layer->second) + 1);
  return layers;
}

void StepProgramBuilder::keepResiduals(StepFunction &forward, StepFunction &backward,
                                       unsigned backwardBegin, const std::vector<int> &stage, int s,
                                       const TypedProgram &p) {
  std::vector<bool> given(sp.graph.nodes.size(), false), needed(sp.graph.nodes.size(), false);
  for (const FunctionValue &a : backward.args)
    given[a.node] = true;
  for (const FunctionValue &r : backward.results)
    needed[r.node] = true;
  std::vector<unsigned> kept;
  // The loss and metrics the last stage's backward returns, made by its forward.
  for (const FunctionValue &r : backward.results)
    if (r.node < backwardBegin && !given[r.node] && stage[r.node] == s) {
      given[r.node] = true;
      kept.push_back(r.node);
    }
  for (size_t id = needed.size(); id-- > backwardBegin;) {
    if (!needed[id] || given[id])
      continue;
    for (unsigned operand : sp.graph.nodes[id].operands) {
      if (operand >= backwardBegin || given[operand] || stage[operand] != s) {
        needed[operand] = true;
        continue;
      }
      given[operand] = true;
      kept.push_back(operand);
    }
  }
  llvm::sort(kept);
  for (unsigned node : kept) {
    FunctionValue v;
    v.name = "residual/" + std::to_string(forward.results.size());
    v.node = node;
    v.sharding = p.pipeline.shardingOf(sp.graph.nodes[node].type, p.mesh);
    v.loc = sp.graph.nodes[node].loc;
    v.role = ArgRole::residual;
    forward.results.push_back(v);
    backward.args.push_back(v);
  }
}

StepProgramBuilder::Stages StepProgramBuilder::splitStages(const TypedProgram &p,
                                                           const Forward &forward,
                                                           const std::vector<unsigned> &roots,
                                                           llvm::function_ref<int(int64_t)> stageOf,
                                                           int epilogue, int last) {
  std::vector<bool> needed(sp.graph.nodes.size(), false);
  for (unsigned root : roots)
    needed[root] = true;
  for (size_t id = needed.size(); id-- > 0;)
    if (needed[id])
      for (unsigned operand : sp.graph.nodes[id].operands)
        needed[operand] = true;
  Stages stages;
  stages.of = assignStages(forward, roots, needed, stageOf, epilogue, last, stages.shared);
  std::set<std::pair<unsigned, int>> seen;
  for (const Node &node : sp.graph.nodes) {
    if (!needed[node.id])
      continue;
    for (unsigned operand : node.operands) {
      const Node &value = sp.graph.nodes[operand];
      int from = stages.of[operand], to = stages.of[node.id];
      if (from < 0 || from >= to || value.op == OpKind::param || !seen.insert({operand, to}).second)
        continue;
      PipelineTransfer transfer;
      transfer.node = operand;
      transfer.from = from;
      transfer.to = to;
      transfer.sharding = p.pipeline.shardingOf(value.type, p.mesh);
      stages.transfers.push_back(transfer);
    }
  }
  for (unsigned root : roots) {
    int from = stages.of[root];
    if (from < 0 || from == last || !seen.insert({root, last}).second)
      continue;
    const Node &value = sp.graph.nodes[root];
    stages.transfers.push_back({root, from, last, p.pipeline.shardingOf(value.type, p.mesh)});
  }
  return stages;
}

FunctionValue StepProgramBuilder::transferValue(const Stages &stages, size_t k, ArgRole role,
                                                unsigned node) {
  const PipelineTransfer &t = stages.transfers[k];
  FunctionValue v;
  v.name = (role == ArgRole::cotangent ? "cotangent/" : "activation/") + std::to_string(k);
  v.node = node;
  v.sharding = t.sharding;
  v.loc = sp.graph.nodes[t.node].loc;
  v.role = role;
  v.transfer = int64_t(k);
  return v;
}

std::vector<FunctionValue> StepProgramBuilder::stageParams(const Forward &forward,
                                                           const Stages &stages, int s) {
  std::vector<FunctionValue> params;
  for (const FunctionValue &param : forward.params)
    if (stages.of[param.node] == s ||
        (stages.shared.count(param.node) && stages.shared.at(param.node).count(s)))
      params.push_back(param);
  return params;
}

StepFunction StepProgramBuilder::stageForward(const Forward &forward, const Stages &stages, int s,
                                              const std::vector<FunctionValue> &inputs,
                                              const std::string &name) {
  StepFunction fn;
  fn.name = name;
  fn.args = stageParams(forward, stages, s);
  llvm::append_range(fn.args, inputs);
  for (size_t k = 0; k < stages.transfers.size(); ++k) {
    if (stages.transfers[k].to == s)
      fn.args.push_back(transferValue(stages, k, ArgRole::activation, stages.transfers[k].node));
    if (stages.transfers[k].from == s)
      fn.results.push_back(transferValue(stages, k, ArgRole::activation, stages.transfers[k].node));
  }
  return fn;
}

std::optional<PipelineStage> StepProgramBuilder::buildStage(
    const TypedProgram &p, const Forward &forward, const Stages &stages, int s, int last,
    const std::vector<FunctionValue> &lossAndMetrics, const std::vector<FunctionValue> &inputs,
    const std::string &forwardName, const std::string &backwardName, bool keep) {
  const double lossScale = lossAndMetrics.front().microbatchScale;
  auto differentiable = [&](size_t k) {
    return sp.graph.nodes[stages.transfers[k].node].type.dtype == DType::F32;
  };
  PipelineStage st;
  st.forward = stageForward(forward, stages, s, inputs, forwardName);
  const std::vector<FunctionValue> params = stageParams(forward, stages, s);
  std::vector<FunctionValue> received;
  for (const FunctionValue &a : st.forward.args)
    if (a.role == ArgRole::activation)
      received.push_back(a);
  std::vector<size_t> sent;
  for (const FunctionValue &r : st.forward.results)
    sent.push_back(size_t(r.transfer));

  StepFunction &backward = st.backward;
  backward.name = backwardName;
  const unsigned backwardBegin = sp.graph.nodes.size();
  unsigned loss = lossAndMetrics.front().node;
  std::vector<FunctionValue> cotangents;
  if (s < last) {
    // sum over the sent values of sum(value * cotangent)
    std::optional<unsigned> total;
    for (size_t k : sent) {
      if (!differentiable(k))
        continue;
      const Node &value = sp.graph.nodes[stages.transfers[k].node];
      std::string name = "cotangent/" + std::to_string(k);
      cotangents.push_back(transferValue(stages, k, ArgRole::cotangent,
                                         addNode(OpKind::input, name, value.type, value.loc)));
      std::vector<std::string> all;
      for (const Dim &d : value.type.dims)
        all.push_back(d.axis);
      unsigned product = appendNode(sp.graph, OpKind::mul, {value.id, cotangents.back().node},
                                    value.type, value.loc);
      unsigned sum = appendNode(sp.graph, OpKind::sum, {product}, TensorType{DType::F32, {}},
                                value.loc, {{"over", all}});
      total = total ? appendNode(sp.graph, OpKind::add, {*total, sum}, TensorType{DType::F32, {}},
                                 value.loc)
                    : sum;
    }
    // A stage whose values no later stage reads (a loss that does not depend on
    // them) gets zero gradients.
    loss = total ? *total
                 : appendNode(sp.graph, OpKind::constant, {}, TensorType{DType::F32, {}},
                              sp.graph.nodes[loss].loc, {{"value", 0.0}});
  }
  std::vector<unsigned> wrt = nodesOf(params);
  std::vector<FunctionValue> receivedF32;
  for (const FunctionValue &r : received)
    if (differentiable(size_t(r.transfer))) {
      wrt.push_back(r.node);
      receivedF32.push_back(r);
    }
  std::vector<bool> within(stages.of.size());
  for (size_t id = 0; id < within.size(); ++id)
    within[id] = stages.of[id] == s || stages.of[id] < 0;
  auto grads = appendGradient(sp.graph, loss, wrt, forward.remat, diags, &within);
  if (!grads)
    return std::nullopt;
  backward.args = params;
  std::vector<FunctionValue> sums;
  if (s == last)
    backward.results = lossAndMetrics;
  for (auto [r, grad] : llvm::zip(receivedF32, llvm::drop_begin(*grads, params.size())))
    backward.results.push_back(transferValue(stages, size_t(r.transfer), ArgRole::cotangent, grad));
  addGradientSums(backward, params,
                  std::vector<unsigned>(grads->begin(), grads->begin() + params.size()), lossScale,
                  sums);
  llvm::append_range(backward.args, sums);
  llvm::append_range(backward.args, inputs);
  llvm::append_range(backward.args, received);
  llvm::append_range(backward.args, cotangents);
  if (keep)
    keepResiduals(st.forward, backward, backwardBegin, stages.of, s, p);
  return st;
}

bool StepProgramBuilder::buildPipeline(const TypedProgram &micro) {
  if (std::vector<const BlockTerm *> terms = blockTerms(micro); !terms.empty()) {
    diags.error(terms.front()->loc,
                "block losses and metrics are not supported with pipeline stages yet");
    diags.note(micro.pipeline.loc, "the pipeline is asked for here");
    return false;
  }
  if (!checkMicrobatchProgram(micro))
    return false;
  std::optional<Forward> forward = flatten(micro, /*auxLossWeight=*/1);
  if (!forward)
    return false;
  auto lossAndMetrics = scaledLossAndMetrics(*forward, micro);
  if (!lossAndMetrics)
    return false;
  const Pipeline &pipeline = micro.pipeline;
  const int last = int(pipeline.stages) - 1;
  const int64_t layers = flatLayers();
  const unsigned scans = countScans(micro);
  if (scans != 1 || layers % pipeline.stages != 0) {
    diags.error(pipeline.loc,
                scans != 1 ? "a pipeline's stages split one scan's layers, and "
                             "model '" +
                                 program.modelName + "' has " + std::to_string(scans) + " scans"
                           : "the " + std::to_string(layers) + " layers do not divide into " +
                                 std::to_string(pipeline.stages) + " stages");
    return false;
  }
  auto stageOf = [&](int64_t layer) { return int(layer * pipeline.stages / layers); };
  Stages stages = splitStages(micro, *forward, nodesOf(forward->lossAndMetrics), stageOf,
                              /*epilogue=*/-1, last);

  PipelineSteps steps;
  const std::vector<FunctionValue> inputs = microbatchInputs(*forward, micro);
  for (int s = 0; s <= last; ++s) {
    auto stage =
        buildStage(micro, *forward, stages, s, last, *lossAndMetrics, inputs,
                   "stage_forward_" + std::to_string(s), "stage_backward_" + std::to_string(s));
    if (!stage)
      return false;
    steps.stages.push_back(std::move(*stage));
  }
  steps.transfers = std::move(stages.transfers);
  sp.params = stackLayers(program.params, forward->params, OpKind::param);
  sp.inputs = stackLayers(program.inputs, sp.inputs, OpKind::input);
  steps.apply = buildApply(sp.params, forward->lossAndMetrics.front());
  steps.schedule = pipeline.schedule;
  steps.axis = pipeline.axis;
  sp.pipeline = std::move(steps);
  return true;
}
