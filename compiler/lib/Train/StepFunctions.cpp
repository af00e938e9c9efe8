//===- StepFunctions.cpp - train_step, eval_step and grad_step ------------===//

#include "shardc/Train/StepFunctions.h"

using namespace shardc;

namespace {

class StepProgramBuilder {
public:
  StepProgramBuilder(const TypedProgram &program, DiagnosticEngine &diags)
      : program(program), diags(diags) {}

  std::optional<StepProgram> run() {
    std::vector<FlatNode> ids;
    std::vector<RematGroup> remat;
    if (!flattenForwards(program, sp.graph, ids, remat, diags))
      return std::nullopt;
    for (const Parameter &p : program.params)
      llvm::append_range(sp.params, layersOf(p, OpKind::param));
    std::vector<FunctionValue> inputs;
    for (const Input &t : program.inputs)
      llvm::append_range(inputs, layersOf(t, OpKind::input));
    if (diags.hasErrors())
      return std::nullopt;

    std::vector<unsigned> paramNodes;
    for (const FunctionValue &p : sp.params)
      paramNodes.push_back(p.node);
    unsigned loss = ids[program.loss].train;
    auto grads = appendGradient(sp.graph, loss, paramNodes, remat, diags);
    if (!grads)
      return std::nullopt;

    // The training results of train_step and grad_step: the loss, then the
    // metrics.
    std::vector<FunctionValue> lossAndMetrics{scalarResult("loss", loss)};
    for (const auto &[name, id] : program.metrics) {
      // The runtime's train results are f32 (driver.h): an i32 metric is converted.
      unsigned metric = ids[id].train;
      const Node &node = sp.graph.nodes[metric];
      if (node.type.dtype != DType::F32)
        metric = appendNode(sp.graph, OpKind::to_f32, {metric}, TensorType{DType::F32, {}}, node.loc);
      lossAndMetrics.push_back(scalarResult(name, metric));
    }

    sp.grad.name = "grad_step";
    sp.grad.args = sp.params;
    llvm::append_range(sp.grad.args, inputs);
    sp.grad.results = {lossAndMetrics.front()};
    for (size_t i = 0; i < sp.params.size(); ++i)
      sp.grad.results.push_back(like(sp.params[i], sp.params[i].name, (*grads)[i]));

    sp.eval.name = "eval_step";
    sp.eval.args = sp.grad.args;
    for (const Output &o : program.outputs)
      sp.eval.results.push_back(evalResult(o, ids[o.node].eval));

    if (program.optimizer)
      buildTrain(*program.optimizer, inputs, *grads, lossAndMetrics);
    return std::move(sp);
  }

private:
  const TypedProgram &program;
  DiagnosticEngine &diags;
  StepProgram sp;

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

  FunctionValue scalarResult(const std::string &name, unsigned node) {
    FunctionValue v;
    v.name = name;
    v.node = node;
    v.loc = sp.graph.nodes[node].loc;
    return v;
  }

  /// The arguments of a parameter or input (`op` is its node's): the tensor,
  /// or a stacked one layer by layer, each sharded without its layer dim.
  std::vector<FunctionValue> layersOf(const ShardedTensor &t, OpKind op) {
    std::vector<const Node *> layers;
    const Node *whole = nullptr;
    for (const Node &node : sp.graph.nodes) {
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

  void buildTrain(const Optimizer &optimizer, const std::vector<FunctionValue> &inputs,
                  const std::vector<unsigned> &grads,
                  const std::vector<FunctionValue> &lossAndMetrics) {
    StepFunction train;
    train.name = "train_step";
    train.args = sp.params;
    std::vector<unsigned> paramNodes;
    std::vector<std::vector<unsigned>> state;
    for (const FunctionValue &p : sp.params)
      paramNodes.push_back(p.node);
    for (llvm::StringRef kind : optimizerState(optimizer.kind)) {
      state.emplace_back();
      for (const FunctionValue &p : sp.params) {
        std::string name = (kind + "/" + p.name).str();
        unsigned node = addNode(OpKind::optimizer_state, name, sp.graph.nodes[p.node].type, p.loc);
        state.back().push_back(node);
        train.args.push_back(like(p, name, node));
      }
    }
    llvm::append_range(train.args, inputs);
    FunctionValue step = scalarResult("step", addNode(OpKind::step, "step", TensorType{DType::F32, {}},
                                                      optimizer.loc));
    train.args.push_back(step);

    UpdateNodes updated = appendOptimizerUpdate(sp.graph, optimizer, lossAndMetrics.front().node,
                                                paramNodes, grads, state, step.node);
    // The results mirror the arguments: parameters, then state.
    for (size_t i = 0; i < updated.values.size(); ++i) {
      const FunctionValue &arg = train.args[i];
      train.results.push_back(like(arg, arg.name, updated.values[i]));
    }
    train.results.push_back(like(lossAndMetrics.front(), "loss", updated.loss));
    llvm::append_range(train.results, llvm::ArrayRef(lossAndMetrics).drop_front());
    sp.train = std::move(train);
  }
};

} // namespace

std::optional<StepProgram> shardc::buildStepProgram(const TypedProgram &program,
                                                    DiagnosticEngine &diags) {
  return StepProgramBuilder(program, diags).run();
}
