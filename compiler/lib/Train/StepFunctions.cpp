//===- StepFunctions.cpp - train_step, eval_step and grad_step ------------===//

#include "StepFunctionsImpl.h"

using namespace shardc;

std::optional<StepProgram> StepProgramBuilder::run(const TypedProgram *microbatch, bool loopScans) {
  std::optional<Forward> forward = differentiate(program);
  if (!forward)
    return std::nullopt;
  sp.params = forward->params;
  sp.inputs = forward->inputs;

  sp.grad.name = "grad_step";
  sp.grad.args = sp.params;
  llvm::append_range(sp.grad.args, forward->inputs);
  sp.grad.results = {forward->lossAndMetrics.front()};
  for (size_t i = 0; i < sp.params.size(); ++i)
    sp.grad.results.push_back(like(sp.params[i], sp.params[i].name, forward->grads[i]));

  sp.eval.name = "eval_step";
  sp.eval.args = sp.grad.args;
  for (const Output &o : program.outputs) {
    FunctionValue result = evalResult(o, forward->ids[o.node].eval);
    if (o.path == "loss" && forward->auxLoss) // per example where the model's loss is
      result.node = appendNode(sp.graph, OpKind::add, {result.node, forward->auxLoss->eval},
                               sp.graph.nodes[result.node].type, o.loc);
    sp.eval.results.push_back(result);
  }
  for (const auto &[path, mean] : forward->termMeans)
    sp.eval.results.push_back(termEvalResult(path, mean.eval));

  buildDecode(*forward);
  if (program.optimizer)
    buildTrain(*program.optimizer, forward->inputs, forward->grads, forward->lossAndMetrics);
  if (microbatch && !(microbatch->pipeline.axis.empty() ? buildMicrobatches(*microbatch)
                                                        : buildPipeline(*microbatch)))
    return std::nullopt;
  if (!microbatch && loopScans)
    buildLayerLoop(*forward);
  if (diags.hasErrors())
    return std::nullopt;
  return std::move(sp);
}

std::optional<StepProgramBuilder::Forward> StepProgramBuilder::differentiate(const TypedProgram &p,
                                                                             double auxLossWeight) {
  std::optional<Forward> forward = flatten(p, auxLossWeight);
  if (!forward)
    return std::nullopt;
  auto grads = appendGradient(sp.graph, forward->lossAndMetrics.front().node,
                              nodesOf(forward->params), forward->remat, diags);
  if (!grads)
    return std::nullopt;
  forward->grads = std::move(*grads);
  return forward;
}

std::optional<StepProgramBuilder::Forward> StepProgramBuilder::flatten(const TypedProgram &p,
                                                                       double auxLossWeight) {
  Forward forward;
  const unsigned begin = sp.graph.nodes.size();
  std::vector<FlatTerm> terms;
  if (!flattenForwards(p, sp.graph, forward.ids, forward.remat, terms, diags))
    return std::nullopt;
  for (const Parameter &param : p.params)
    llvm::append_range(forward.params, layersOf(param, OpKind::param, begin));
  for (const Input &t : p.inputs)
    llvm::append_range(forward.inputs, layersOf(t, OpKind::input, begin));
  if (diags.hasErrors())
    return std::nullopt;

  addBlockTerms(forward, terms, auxLossWeight);
  FlatNode loss = forward.ids[p.loss];
  if (forward.auxLoss)
    loss = scalarOp(OpKind::add, loss, *forward.auxLoss, sp.graph.nodes[loss.train].loc);
  forward.lossAndMetrics.push_back(scalarResult("loss", loss.train));
  for (const auto &[name, id] : p.metrics) {
    // The runtime's train results are f32 (driver.h): an i32 metric is converted.
    unsigned metric = forward.ids[id].train;
    const Node &node = sp.graph.nodes[metric];
    if (node.type.dtype != DType::F32)
      metric = appendNode(sp.graph, OpKind::to_f32, {metric}, TensorType{DType::F32, {}}, node.loc);
    forward.lossAndMetrics.push_back(scalarResult(name, metric));
  }
  for (const auto &[path, mean] : forward.termMeans)
    forward.lossAndMetrics.push_back(scalarResult(path, mean.train));
  return forward;
}

FlatNode StepProgramBuilder::scalarOp(OpKind op, FlatNode lhs, FlatNode rhs, SMRange loc) {
  const TensorType scalar{DType::F32, {}};
  unsigned train = appendNode(sp.graph, op, {lhs.train, rhs.train}, scalar, loc);
  bool shared = lhs.train == lhs.eval && rhs.train == rhs.eval;
  return {train, shared ? train : appendNode(sp.graph, op, {lhs.eval, rhs.eval}, scalar, loc)};
}

FlatNode StepProgramBuilder::scalarConstant(double value, SMRange loc) {
  unsigned id = appendNode(sp.graph, OpKind::constant, {}, TensorType{DType::F32, {}}, loc,
                           {{"value", value}});
  return {id, id};
}

void StepProgramBuilder::addBlockTerms(Forward &forward, const std::vector<FlatTerm> &terms,
                                       double auxLossWeight) {
  for (const FlatTerm &term : terms) {
    FlatNode sum = term.values.front();
    for (const FlatNode &value : llvm::drop_begin(term.values))
      sum = scalarOp(OpKind::add, sum, value, term.loc);
    if (term.isLoss)
      forward.auxLoss =
          forward.auxLoss ? scalarOp(OpKind::add, *forward.auxLoss, sum, term.loc) : sum;
    const double count = double(term.values.size());
    forward.termMeans.emplace_back(
        term.path, count == 1
                       ? sum
                       : scalarOp(OpKind::mul, sum, scalarConstant(1 / count, term.loc), term.loc));
  }
  if (forward.auxLoss && auxLossWeight != 1) {
    SMRange at = sp.graph.nodes[forward.auxLoss->train].loc;
    forward.auxLoss =
        scalarOp(OpKind::mul, *forward.auxLoss, scalarConstant(auxLossWeight, at), at);
  }
}

unsigned StepProgramBuilder::addNode(OpKind op, const std::string &name, const TensorType &type,
                                     SMRange loc) {
  unsigned id = appendNode(sp.graph, op, {}, type, loc);
  sp.graph.nodes[id].name = name;
  return id;
}

FunctionValue StepProgramBuilder::like(const FunctionValue &p, const std::string &name,
                                       unsigned node) {
  FunctionValue v = p;
  v.name = name;
  v.node = node;
  return v;
}

FunctionValue StepProgramBuilder::gradientArgument(const FunctionValue &p) {
  std::string name = "grad/" + p.name;
  FunctionValue v = like(p, name, addNode(OpKind::input, name, sp.graph.nodes[p.node].type, p.loc));
  v.role = ArgRole::gradient;
  return v;
}

FunctionValue StepProgramBuilder::scalarResult(const std::string &name, unsigned node) {
  FunctionValue v;
  v.name = name;
  v.node = node;
  v.loc = sp.graph.nodes[node].loc;
  return v;
}

std::vector<FunctionValue> StepProgramBuilder::layersOf(const ShardedTensor &t, OpKind op,
                                                        unsigned begin) {
  std::vector<const Node *> layers;
  const Node *whole = nullptr;
  for (const Node &node : llvm::drop_begin(sp.graph.nodes, begin)) {
    if (node.op != op || node.name != t.path)
      continue;
    if (node.attrs.count("layer"))
      layers.push_back(&node);
    else
      whole = &node;
  }
  FunctionValue v;
  v.name = t.path;
  v.loc = t.loc;
  v.sharding = t.sharding;
  v.role = op == OpKind::param ? ArgRole::parameter : ArgRole::input;
  if (layers.empty()) {
    v.node = whole ? whole->id : addNode(op, t.path, t.type, t.loc);
    return {v};
  }
  // Each layer is one tensor; sema rejected a split layer axis.
  if (!v.sharding.dims.empty())
    v.sharding.dims.erase(v.sharding.dims.begin());
  std::vector<FunctionValue> values;
  for (const Node *layer : layers) {
    v.node = layer->id;
    v.layer = std::get<int64_t>(layer->attrs.at("layer"));
    values.push_back(v);
  }
  return values;
}

Sharding StepProgramBuilder::shardingOfAxis(const std::string &axis) {
  Sharding s;
  s.dims.emplace_back();
  for (const ShardedTensor &t : program.inputs)
    for (size_t d = 0; d < t.type.dims.size(); ++d)
      if (t.type.dims[d].axis == axis && d < t.sharding.dims.size())
        s.dims.front() = t.sharding.dims[d];
  return s;
}

FunctionValue StepProgramBuilder::evalResult(const Output &o, unsigned node) {
  FunctionValue v = scalarResult(o.path, node);
  v.sharding = o.sharding;
  bool metric = llvm::any_of(program.metrics, [&](const auto &m) { return m.first == o.path; });
  bool lossOrMetric = o.path == "loss" || metric;
  if (!lossOrMetric)
    return v;
  const Node &mean = sp.graph.nodes[node];
  const Node *values = mean.op == OpKind::mean ? &sp.graph.nodes[mean.operands[0]] : nullptr;
  if (!values || values->type.dims.size() != 1 ||
      llvm::none_of(program.inputs, [&](const ShardedTensor &t) {
        return !t.type.dims.empty() && t.type.dims.front() == values->type.dims.front();
      })) {
    // Evaluation averages one value per example over the whole split; a metric is
    // computed for evaluation alone (a loss like W1's sum(h) still trains).
    if (metric)
      diags.warning(o.loc, "'" + o.path +
                               "' is not the mean over the batch of one value "
                               "per example, so evaluation leaves it out; write it as mean(x) "
                               "with x [batch] (a mean over the other axes first: "
                               "mean(e, over = [seq]))");
    return v;
  }
  v.node = values->id;
  if (values->type.dtype != DType::F32)
    v.node = appendNode(sp.graph, OpKind::to_f32, {values->id},
                        TensorType{DType::F32, values->type.dims}, values->loc);
  v.sharding = shardingOfAxis(values->type.dims.front().axis);
  v.perExample = true;
  return v;
}

FunctionValue StepProgramBuilder::termEvalResult(const std::string &path, unsigned node) {
  FunctionValue v = scalarResult(path, node);
  const Input *batched = batchInput(program);
  if (!batched)
    return v;
  const Dim &batch = batched->type.dims.front();
  v.node = appendNode(sp.graph, OpKind::broadcast_over, {node}, TensorType{DType::F32, {batch}},
                      v.loc, {{"over", std::vector<std::string>{batch.axis}}, {"scale", 1.0}});
  v.sharding = shardingOfAxis(batch.axis);
  v.perExample = true;
  return v;
}

std::vector<std::vector<unsigned>>
StepProgramBuilder::addState(const Optimizer &optimizer, const std::vector<FunctionValue> &params,
                             std::vector<FunctionValue> &args) {
  std::vector<std::vector<unsigned>> state;
  for (llvm::StringRef kind : optimizerState(optimizer.kind)) {
    state.emplace_back();
    for (const FunctionValue &p : params) {
      std::string name = (kind + "/" + p.name).str();
      unsigned node = addNode(OpKind::optimizer_state, name, sp.graph.nodes[p.node].type, p.loc);
      state.back().push_back(node);
      args.push_back(like(p, name, node));
      args.back().role = ArgRole::optimizer_state;
    }
  }
  return state;
}

FunctionValue StepProgramBuilder::stepArgument(const Optimizer &optimizer) {
  FunctionValue step = scalarResult(
      "step", addNode(OpKind::step, "step", TensorType{DType::F32, {}}, optimizer.loc));
  step.role = ArgRole::step;
  return step;
}

std::vector<unsigned> StepProgramBuilder::nodesOf(const std::vector<FunctionValue> &values) {
  std::vector<unsigned> nodes;
  for (const FunctionValue &v : values)
    nodes.push_back(v.node);
  return nodes;
}

void StepProgramBuilder::addUpdateResults(StepFunction &fn, const UpdateNodes &updated) {
  for (size_t i = 0; i < updated.values.size(); ++i) {
    const FunctionValue &arg = fn.args[i];
    fn.results.push_back(like(arg, arg.name, updated.values[i]));
  }
}

void StepProgramBuilder::buildTrain(const Optimizer &optimizer,
                                    const std::vector<FunctionValue> &inputs,
                                    const std::vector<unsigned> &grads,
                                    const std::vector<FunctionValue> &lossAndMetrics) {
  StepFunction train;
  train.name = "train_step";
  train.args = sp.params;
  std::vector<std::vector<unsigned>> state = addState(optimizer, sp.params, train.args);
  llvm::append_range(train.args, inputs);
  FunctionValue step = stepArgument(optimizer);
  train.args.push_back(step);

  UpdateNodes updated = appendOptimizerUpdate(sp.graph, optimizer, lossAndMetrics.front().node,
                                              nodesOf(sp.params), grads, state, step.node);
  addUpdateResults(train, updated);
  train.gradients = grads;
  train.results.push_back(like(lossAndMetrics.front(), "loss", updated.loss));
  llvm::append_range(train.results, llvm::ArrayRef(lossAndMetrics).drop_front());
  sp.train = std::move(train);
}

std::optional<StepProgram> shardc::buildStepProgram(const TypedProgram &program,
                                                    DiagnosticEngine &diags,
                                                    const TypedProgram *microbatch,
                                                    bool loopScans) {
  return StepProgramBuilder(program, diags).run(microbatch, loopScans);
}
