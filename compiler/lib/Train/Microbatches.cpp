//===- Microbatches.cpp - microbatch_step and apply_step ------------------===//

#include "StepFunctionsImpl.h"

using namespace shardc;

bool StepProgramBuilder::hasAxis(const TensorType &type, llvm::StringRef axis) {
  return llvm::any_of(type.dims, [&](const Dim &d) { return d.axis == axis; });
}

bool StepProgramBuilder::mixesExamples(const Graph &graph, const Node &node, llvm::StringRef axis) {
  auto operandHas = [&](unsigned operand) { return hasAxis(graph.nodes[operand].type, axis); };
  switch (node.op) {
  case OpKind::reshape:
  case OpKind::flatten:
  case OpKind::rename:
    return false;
  case OpKind::softmax:
  case OpKind::log_softmax:
    return llvm::is_contained(std::get<std::vector<std::string>>(node.attrs.at("over")), axis);
  case OpKind::cumsum:
    return std::get<std::string>(node.attrs.at("over")) == axis;
  case OpKind::causal_mask:
    return std::get<std::string>(node.attrs.at("query")) == axis ||
           std::get<std::string>(node.attrs.at("key")) == axis;
  default:
    return !hasAxis(node.type, axis) && llvm::any_of(node.operands, operandHas);
  }
}

/// The nodes that only the graph's block terms read, the terms among them: each
/// microbatch computes its own terms, averaged over them as the loss is (as
/// MaxText averages its MoE load-balancing loss over accumulation steps).
static std::vector<bool> termsOnly(const Graph &graph) {
  std::vector<bool> only(graph.nodes.size(), false), term(graph.nodes.size(), false);
  std::vector<std::vector<unsigned>> readers(graph.nodes.size());
  for (const Node &node : graph.nodes)
    for (unsigned operand : node.operands)
      readers[operand].push_back(node.id);
  for (const BlockTerm &t : graph.terms)
    term[t.node] = true;
  for (size_t id = graph.nodes.size(); id-- > 0;)
    only[id] = (term[id] || !readers[id].empty()) &&
               llvm::all_of(readers[id], [&](unsigned reader) { return only[reader]; });
  return only;
}

bool StepProgramBuilder::checkBatchReductions(const TypedProgram &micro) {
  const std::string &axis = micro.microbatchAxis;
  const std::vector<bool> forTermsOnly = termsOnly(micro.graph);
  for (const Node &node : micro.graph.nodes) {
    if (node.id == micro.loss || forTermsOnly[node.id] ||
        llvm::any_of(micro.metrics, [&](const auto &m) { return m.second == node.id; }) ||
        !mixesExamples(micro.graph, node, axis))
      continue;
    diags.error(node.loc, "this mixes the examples of the batch ('" + axis +
                              "'), so microbatches would change what it computes; only "
                              "the loss and the metrics may, as a mean or a sum over it");
    diags.note(program.microbatches.loc, "microbatches asked for here");
    return false;
  }
  return true;
}

std::optional<double> StepProgramBuilder::microbatchScale(const TypedProgram &micro, unsigned id,
                                                          const std::string &what) {
  const Node &node = micro.graph.nodes[id];
  if ((node.op == OpKind::mean || node.op == OpKind::sum) &&
      hasAxis(micro.graph.nodes[node.operands[0]].type, micro.microbatchAxis))
    return node.op == OpKind::mean ? 1.0 / double(program.microbatches.count) : 1.0;
  diags.error(node.loc, what + " must be a mean or a sum over '" + micro.microbatchAxis +
                            "' to be accumulated over microbatches");
  diags.note(program.microbatches.loc, "microbatches asked for here");
  return std::nullopt;
}

bool StepProgramBuilder::checkMicrobatchProgram(const TypedProgram &micro) {
  if (micro.microbatchAxis.empty()) {
    diags.error(program.microbatches.loc, "microbatches split the inputs' first axis, and model '" +
                                              program.modelName + "' has no input with an axis");
    return false;
  }
  return checkBatchReductions(micro);
}

std::vector<FunctionValue> StepProgramBuilder::microbatchInputs(const Forward &forward,
                                                                const TypedProgram &micro) {
  std::vector<FunctionValue> inputs;
  for (FunctionValue input : forward.inputs) {
    const std::vector<Dim> &dims = sp.graph.nodes[input.node].type.dims;
    auto at = llvm::find_if(dims, [&](const Dim &d) { return d.axis == micro.microbatchAxis; });
    input.microbatchDim = at == dims.end() ? -1 : at - dims.begin();
    inputs.push_back(input);
  }
  return inputs;
}

std::optional<std::vector<FunctionValue>>
StepProgramBuilder::scaledLossAndMetrics(const Forward &forward, const TypedProgram &micro) {
  std::vector<FunctionValue> results;
  const size_t metrics = micro.metrics.size();
  for (auto [i, value] : llvm::enumerate(forward.lossAndMetrics)) {
    // A block term is averaged over the microbatches; the loss is scaled as the
    // model's own loss is (flatten weighted its block terms to match).
    std::optional<double> scale = 1.0 / double(program.microbatches.count);
    if (i <= metrics) {
      unsigned root = i ? micro.metrics[i - 1].second : micro.loss;
      scale = microbatchScale(micro, root, i ? "metric '" + value.name + "'" : "the loss");
    }
    if (!scale)
      return std::nullopt;
    results.push_back(value);
    results.back().microbatchScale = *scale;
  }
  return results;
}

void StepProgramBuilder::addGradientSums(StepFunction &fn, const std::vector<FunctionValue> &params,
                                         const std::vector<unsigned> &grads, double scale,
                                         std::vector<FunctionValue> &sumArgs) {
  for (auto [param, grad] : llvm::zip_equal(params, grads)) {
    FunctionValue sum = gradientArgument(param);
    sumArgs.push_back(sum);
    // A parameter the loss does not read (a zero gradient) keeps its sum.
    const Node &node = sp.graph.nodes[sum.node];
    const Node &g = sp.graph.nodes[grad];
    auto value = g.attrs.find("value");
    const bool zero = g.op == OpKind::constant && value != g.attrs.end() &&
                      std::get<double>(value->second) == 0.0;
    unsigned next =
        zero ? sum.node : appendNode(sp.graph, OpKind::add, {sum.node, grad}, node.type, node.loc);
    fn.results.push_back(like(sum, sum.name, next));
    fn.results.back().microbatchScale = scale;
    fn.gradients.push_back(grad);
  }
}

StepFunction StepProgramBuilder::buildApply(const std::vector<FunctionValue> &params,
                                            const FunctionValue &total) {
  const Optimizer &optimizer = *program.optimizer;
  StepFunction apply;
  apply.name = "apply_step";
  apply.args = params;
  std::vector<std::vector<unsigned>> state = addState(optimizer, params, apply.args);
  std::vector<unsigned> grads;
  for (const FunctionValue &param : params) {
    apply.args.push_back(gradientArgument(param));
    grads.push_back(apply.args.back().node);
  }
  FunctionValue loss = total;
  loss.node = addNode(OpKind::input, "loss", sp.graph.nodes[loss.node].type, loss.loc);
  loss.role = ArgRole::loss;
  apply.args.push_back(loss);
  FunctionValue step = stepArgument(optimizer);
  apply.args.push_back(step);
  UpdateNodes updated = appendOptimizerUpdate(sp.graph, optimizer, loss.node, nodesOf(params),
                                              grads, state, step.node);
  addUpdateResults(apply, updated);
  apply.results.push_back(like(loss, "loss", updated.loss));
  return apply;
}

bool StepProgramBuilder::buildMicrobatches(const TypedProgram &micro) {
  if (!checkMicrobatchProgram(micro))
    return false;
  // The step's loss sums the microbatches' losses times the model's loss's scale
  // (1/N for a mean), and its block loss terms are averaged over them.
  std::optional<double> lossScale = microbatchScale(micro, micro.loss, "the loss");
  if (!lossScale)
    return false;
  std::optional<Forward> forward =
      differentiate(micro, 1.0 / double(program.microbatches.count) / *lossScale);
  if (!forward)
    return false;
  auto lossAndMetrics = scaledLossAndMetrics(*forward, micro);
  if (!lossAndMetrics)
    return false;
  MicrobatchSteps steps;
  steps.grads.name = "microbatch_step";
  steps.grads.args = forward->params;
  std::vector<FunctionValue> sums;
  steps.grads.results = *lossAndMetrics;
  addGradientSums(steps.grads, forward->params, forward->grads,
                  lossAndMetrics->front().microbatchScale, sums);
  llvm::append_range(steps.grads.args, sums);
  llvm::append_range(steps.grads.args, microbatchInputs(*forward, micro));
  steps.apply = buildApply(forward->params, forward->lossAndMetrics.front());
  sp.microbatches = std::move(steps);
  return true;
}
