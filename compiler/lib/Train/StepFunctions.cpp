//===- StepFunctions.cpp - train_step, eval_step and grad_step ------------===//

#include "shardc/Train/StepFunctions.h"

using namespace shardc;

namespace {

class StepProgramBuilder {
public:
  StepProgramBuilder(const TypedProgram &program, DiagnosticEngine &diags)
      : program(program), diags(diags) {}

  std::optional<StepProgram> run(const TypedProgram *microbatch) {
    std::optional<Forward> forward = differentiate(program);
    if (!forward)
      return std::nullopt;
    sp.params = forward->params;

    sp.grad.name = "grad_step";
    sp.grad.args = sp.params;
    llvm::append_range(sp.grad.args, forward->inputs);
    sp.grad.results = {forward->lossAndMetrics.front()};
    for (size_t i = 0; i < sp.params.size(); ++i)
      sp.grad.results.push_back(like(sp.params[i], sp.params[i].name, forward->grads[i]));

    sp.eval.name = "eval_step";
    sp.eval.args = sp.grad.args;
    for (const Output &o : program.outputs)
      sp.eval.results.push_back(evalResult(o, forward->ids[o.node].eval));

    if (program.optimizer)
      buildTrain(*program.optimizer, forward->inputs, forward->grads, forward->lossAndMetrics);
    if (microbatch && !buildMicrobatches(*microbatch))
      return std::nullopt;
    return std::move(sp);
  }

private:
  const TypedProgram &program;
  DiagnosticEngine &diags;
  StepProgram sp;

  /// A program's training forward and gradient in the flat graph.
  struct Forward {
    std::vector<FlatNode> ids;
    std::vector<FunctionValue> params, inputs;
    std::vector<unsigned> grads;
    std::vector<FunctionValue> lossAndMetrics; // the loss, then the metrics
  };

  /// Appends `p`'s forwards and the gradient of its loss to the flat graph.
  std::optional<Forward> differentiate(const TypedProgram &p) {
    Forward forward;
    std::vector<RematGroup> remat;
    const unsigned begin = sp.graph.nodes.size();
    if (!flattenForwards(p, sp.graph, forward.ids, remat, diags))
      return std::nullopt;
    for (const Parameter &param : p.params)
      llvm::append_range(forward.params, layersOf(param, OpKind::param, begin));
    for (const Input &t : p.inputs)
      llvm::append_range(forward.inputs, layersOf(t, OpKind::input, begin));
    if (diags.hasErrors())
      return std::nullopt;

    unsigned loss = forward.ids[p.loss].train;
    auto grads = appendGradient(sp.graph, loss, nodesOf(forward.params), remat, diags);
    if (!grads)
      return std::nullopt;
    forward.grads = std::move(*grads);

    forward.lossAndMetrics.push_back(scalarResult("loss", loss));
    for (const auto &[name, id] : p.metrics) {
      // The runtime's train results are f32 (driver.h): an i32 metric is converted.
      unsigned metric = forward.ids[id].train;
      const Node &node = sp.graph.nodes[metric];
      if (node.type.dtype != DType::F32)
        metric = appendNode(sp.graph, OpKind::to_f32, {metric}, TensorType{DType::F32, {}}, node.loc);
      forward.lossAndMetrics.push_back(scalarResult(name, metric));
    }
    return forward;
  }

  /// A node without operands: an argument of the step functions.
  unsigned addNode(OpKind op, const std::string &name, const TensorType &type,
                   SMRange loc) {
    unsigned id = appendNode(sp.graph, op, {}, type, loc);
    sp.graph.nodes[id].name = name;
    return id;
  }

  /// A value shaped and sharded like parameter `p`.
  static FunctionValue like(const FunctionValue &p, const std::string &name, unsigned node) {
    FunctionValue v = p;
    v.name = name;
    v.node = node;
    return v;
  }

  /// An argument for a gradient of parameter `p` (a sum of them), sharded like it.
  FunctionValue gradientArgument(const FunctionValue &p) {
    std::string name = "grad/" + p.name;
    FunctionValue v = like(p, name, addNode(OpKind::input, name, sp.graph.nodes[p.node].type, p.loc));
    v.role = ArgRole::gradient;
    return v;
  }

  FunctionValue scalarResult(const std::string &name, unsigned node) {
    FunctionValue v;
    v.name = name;
    v.node = node;
    v.loc = sp.graph.nodes[node].loc;
    return v;
  }

  /// The arguments of a parameter or input (`op` is its node's): the tensor,
  /// or a stacked one layer by layer, each sharded without its layer dim.
  std::vector<FunctionValue> layersOf(const ShardedTensor &t, OpKind op, unsigned begin) {
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

  /// The sharding of `dim` wherever an input has the same logical axis (the
  /// rules place an axis the same way in every tensor).
  Sharding shardingOfAxis(const std::string &axis) {
    Sharding s;
    s.dims.emplace_back();
    for (const ShardedTensor &t : program.inputs)
      for (size_t d = 0; d < t.type.dims.size(); ++d)
        if (t.type.dims[d].axis == axis && d < t.sharding.dims.size())
          s.dims.front() = t.sharding.dims[d];
    return s;
  }

  /// A loss or metric that is the mean of one value per example (the first
  /// dim of an input) is returned per example, as f32.
  FunctionValue evalResult(const Output &o, unsigned node) {
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
        diags.warning(o.loc, "'" + o.path + "' is not the mean over the batch of one value "
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

  /// Optimizer state arguments shaped like `params`, appended to `args`: the
  /// state nodes, kind major.
  std::vector<std::vector<unsigned>> addState(const Optimizer &optimizer,
                                              const std::vector<FunctionValue> &params,
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

  FunctionValue stepArgument(const Optimizer &optimizer) {
    FunctionValue step = scalarResult(
        "step", addNode(OpKind::step, "step", TensorType{DType::F32, {}}, optimizer.loc));
    step.role = ArgRole::step;
    return step;
  }

  static std::vector<unsigned> nodesOf(const std::vector<FunctionValue> &values) {
    std::vector<unsigned> nodes;
    for (const FunctionValue &v : values)
      nodes.push_back(v.node);
    return nodes;
  }

  /// The update's results, mirroring the arguments: parameters, then state.
  static void addUpdateResults(StepFunction &fn, const UpdateNodes &updated) {
    for (size_t i = 0; i < updated.values.size(); ++i) {
      const FunctionValue &arg = fn.args[i];
      fn.results.push_back(like(arg, arg.name, updated.values[i]));
    }
  }

  void buildTrain(const Optimizer &optimizer, const std::vector<FunctionValue> &inputs,
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

  //===--------------------------------------------------------------------===//
  // Microbatches
  //===--------------------------------------------------------------------===//

  static bool hasAxis(const TensorType &type, llvm::StringRef axis) {
    return llvm::any_of(type.dims, [&](const Dim &d) { return d.axis == axis; });
  }

  /// Whether `node` mixes the examples of the microbatch axis: it reduces over
  /// it (a batch norm's statistics, a contraction over the batch), normalises
  /// over it (a softmax whose last axis it is) or depends on a row's position in
  /// it (a causal mask over it). One microbatch would compute its own.
  static bool mixesExamples(const Graph &graph, const Node &node, llvm::StringRef axis) {
    auto operandHas = [&](unsigned operand) {
      return hasAxis(graph.nodes[operand].type, axis);
    };
    switch (node.op) {
    case OpKind::reshape:
    case OpKind::flatten:
    case OpKind::rename:
      return false;
    case OpKind::softmax:
    case OpKind::log_softmax:
      return !node.type.dims.empty() && node.type.dims.back().axis == axis;
    case OpKind::causal_mask:
      return std::get<std::string>(node.attrs.at("query")) == axis ||
             std::get<std::string>(node.attrs.at("key")) == axis;
    default:
      return !hasAxis(node.type, axis) && llvm::any_of(node.operands, operandHas);
    }
  }

  /// Only the loss and the metrics may mix the microbatch axis's examples (as
  /// their outermost mean or sum).
  bool checkBatchReductions(const TypedProgram &micro) {
    const std::string &axis = micro.microbatchAxis;
    for (const Node &node : micro.graph.nodes) {
      if (node.id == micro.loss ||
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

  /// The factor of the sum over microbatches of a loss or metric (`id` in
  /// `micro`'s graph) that gives the batch's value: 1/N for a mean over the
  /// microbatch axis, 1 for a sum.
  std::optional<double> microbatchScale(const TypedProgram &micro, unsigned id,
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

  /// microbatch_step and apply_step, from the program at one microbatch's size.
  bool buildMicrobatches(const TypedProgram &micro) {
    if (micro.microbatchAxis.empty()) {
      diags.error(program.microbatches.loc,
                  "microbatches split the inputs' first axis, and model '" +
                      program.modelName + "' has no input with an axis");
      return false;
    }
    if (!checkBatchReductions(micro))
      return false;
    std::optional<Forward> forward = differentiate(micro);
    if (!forward)
      return false;
    MicrobatchSteps steps;

    steps.grads.name = "microbatch_step";
    // The gradients are added to their sums in the function, as train_step's
    // update reads them: sharding propagation then reduces each where the sum
    // needs it (a reduce-scatter under FSDP); a gradient returned as it is made
    // would ask its contraction for the parameter's sharding (all-to-alls of
    // its operands, every rank computing it from the whole batch).
    steps.grads.args = forward->params;
    std::vector<FunctionValue> sums;
    for (const FunctionValue &param : forward->params)
      sums.push_back(gradientArgument(param));
    llvm::append_range(steps.grads.args, sums);
    for (FunctionValue input : forward->inputs) {
      const std::vector<Dim> &dims = sp.graph.nodes[input.node].type.dims;
      auto at = llvm::find_if(dims, [&](const Dim &d) { return d.axis == micro.microbatchAxis; });
      input.microbatchDim = at == dims.end() ? -1 : at - dims.begin();
      steps.grads.args.push_back(input);
    }
    for (auto [i, value] : llvm::enumerate(forward->lossAndMetrics)) {
      unsigned root = i ? micro.metrics[i - 1].second : micro.loss;
      auto scale = microbatchScale(micro, root, i ? "metric '" + value.name + "'" : "the loss");
      if (!scale)
        return false;
      steps.grads.results.push_back(value);
      steps.grads.results.back().microbatchScale = *scale;
    }
    const double lossScale = steps.grads.results.front().microbatchScale;
    for (auto [sum, grad] : llvm::zip_equal(sums, forward->grads)) {
      // A parameter the loss does not read (a zero gradient) keeps its sum.
      const Node &node = sp.graph.nodes[sum.node];
      const Node &g = sp.graph.nodes[grad];
      auto value = g.attrs.find("value");
      const bool zero = g.op == OpKind::constant && value != g.attrs.end() &&
                        std::get<double>(value->second) == 0.0;
      unsigned next = zero ? sum.node
                           : appendNode(sp.graph, OpKind::add, {sum.node, grad}, node.type, node.loc);
      steps.grads.results.push_back(like(sum, sum.name, next));
      steps.grads.results.back().microbatchScale = lossScale;
      steps.grads.gradients.push_back(grad);
    }

    // apply_step: the sums over the microbatches are its arguments.
    const Optimizer &optimizer = *program.optimizer;
    steps.apply.name = "apply_step";
    steps.apply.args = forward->params;
    std::vector<std::vector<unsigned>> state = addState(optimizer, forward->params, steps.apply.args);
    std::vector<unsigned> grads;
    for (const FunctionValue &param : forward->params) {
      steps.apply.args.push_back(gradientArgument(param));
      grads.push_back(steps.apply.args.back().node);
    }
    FunctionValue loss = forward->lossAndMetrics.front();
    loss.node = addNode(OpKind::input, "loss", sp.graph.nodes[loss.node].type, loss.loc);
    loss.role = ArgRole::loss;
    steps.apply.args.push_back(loss);
    FunctionValue step = stepArgument(optimizer);
    steps.apply.args.push_back(step);
    UpdateNodes updated = appendOptimizerUpdate(sp.graph, optimizer, loss.node,
                                                nodesOf(forward->params), grads, state, step.node);
    addUpdateResults(steps.apply, updated);
    steps.apply.results.push_back(like(loss, "loss", updated.loss));
    sp.microbatches = std::move(steps);
    return true;
  }
};

} // namespace

std::optional<StepProgram> shardc::buildStepProgram(const TypedProgram &program,
                                                    DiagnosticEngine &diags,
                                                    const TypedProgram *microbatch) {
  return StepProgramBuilder(program, diags).run(microbatch);
}
