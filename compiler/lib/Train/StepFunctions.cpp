//===- StepFunctions.cpp - train_step, eval_step and grad_step ------------===//

#include "shardc/Train/StepFunctions.h"

#include <map>
#include <set>

using namespace shardc;

namespace {

class StepProgramBuilder {
public:
  StepProgramBuilder(const TypedProgram &program, DiagnosticEngine &diags)
      : program(program), diags(diags) {}

  std::optional<StepProgram> run(const TypedProgram *microbatch, bool loopScans) {
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
    for (const Output &o : program.outputs)
      sp.eval.results.push_back(evalResult(o, forward->ids[o.node].eval));

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
    std::vector<RematGroup> remat;
  };

  /// Appends `p`'s forwards and the gradient of its loss to the flat graph.
  std::optional<Forward> differentiate(const TypedProgram &p) {
    std::optional<Forward> forward = flatten(p);
    if (!forward)
      return std::nullopt;
    auto grads = appendGradient(sp.graph, forward->lossAndMetrics.front().node,
                                nodesOf(forward->params), forward->remat, diags);
    if (!grads)
      return std::nullopt;
    forward->grads = std::move(*grads);
    return forward;
  }

  /// Appends `p`'s forwards to the flat graph (no gradient yet).
  std::optional<Forward> flatten(const TypedProgram &p) {
    Forward forward;
    const unsigned begin = sp.graph.nodes.size();
    if (!flattenForwards(p, sp.graph, forward.ids, forward.remat, diags))
      return std::nullopt;
    for (const Parameter &param : p.params)
      llvm::append_range(forward.params, layersOf(param, OpKind::param, begin));
    for (const Input &t : p.inputs)
      llvm::append_range(forward.inputs, layersOf(t, OpKind::input, begin));
    if (diags.hasErrors())
      return std::nullopt;

    unsigned loss = forward.ids[p.loss].train;
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

  /// The checks every step at one microbatch's size needs.
  bool checkMicrobatchProgram(const TypedProgram &micro) {
    if (micro.microbatchAxis.empty()) {
      diags.error(program.microbatches.loc,
                  "microbatches split the inputs' first axis, and model '" +
                      program.modelName + "' has no input with an axis");
      return false;
    }
    return checkBatchReductions(micro);
  }

  /// The inputs, each with the dim that the microbatches split.
  std::vector<FunctionValue> microbatchInputs(const Forward &forward, const TypedProgram &micro) {
    std::vector<FunctionValue> inputs;
    for (FunctionValue input : forward.inputs) {
      const std::vector<Dim> &dims = sp.graph.nodes[input.node].type.dims;
      auto at = llvm::find_if(dims, [&](const Dim &d) { return d.axis == micro.microbatchAxis; });
      input.microbatchDim = at == dims.end() ? -1 : at - dims.begin();
      inputs.push_back(input);
    }
    return inputs;
  }

  /// The loss and the metrics, each with the factor of its sum over microbatches.
  std::optional<std::vector<FunctionValue>> scaledLossAndMetrics(const Forward &forward,
                                                                 const TypedProgram &micro) {
    std::vector<FunctionValue> results;
    for (auto [i, value] : llvm::enumerate(forward.lossAndMetrics)) {
      unsigned root = i ? micro.metrics[i - 1].second : micro.loss;
      auto scale = microbatchScale(micro, root, i ? "metric '" + value.name + "'" : "the loss");
      if (!scale)
        return std::nullopt;
      results.push_back(value);
      results.back().microbatchScale = *scale;
    }
    return results;
  }

  /// The gradients are added to their sums in the function that makes them,
  /// as train_step's update reads them: sharding propagation then reduces each
  /// where the sum needs it (a reduce-scatter under FSDP); a gradient returned
  /// as it is made would ask its contraction for the parameter's sharding
  /// (all-to-alls of its operands, every rank computing it from the whole
  /// batch). Appends the sums' arguments and results to `fn`.
  void addGradientSums(StepFunction &fn, const std::vector<FunctionValue> &params,
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
      unsigned next = zero ? sum.node
                           : appendNode(sp.graph, OpKind::add, {sum.node, grad}, node.type, node.loc);
      fn.results.push_back(like(sum, sum.name, next));
      fn.results.back().microbatchScale = scale;
      fn.gradients.push_back(grad);
    }
  }

  /// apply_step: the sums over the microbatches are its arguments.
  StepFunction buildApply(const std::vector<FunctionValue> &params, const FunctionValue &total) {
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

  /// microbatch_step and apply_step, from the program at one microbatch's size.
  bool buildMicrobatches(const TypedProgram &micro) {
    if (!checkMicrobatchProgram(micro))
      return false;
    std::optional<Forward> forward = differentiate(micro);
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

  //===--------------------------------------------------------------------===//
  // Pipeline stages
  //===--------------------------------------------------------------------===//

  /// The stage of each node the `roots` (the loss and the metrics, or
  /// evaluation's results) need (-1: a value any stage computes for itself,
  /// from inputs and constants alone). A scanned layer's nodes are its stage's
  /// (`stageOf`); any other node is on the latest stage of its operands (the
  /// first if none has one), or on `epilogue` (>= 0) where that is a layer's,
  /// and a parameter outside the scan on the stage of the nodes that read it; a
  /// root nothing else reads is on `last`. What
  /// crosses between stages is then what flows from one layer to the next. A
  /// parameter outside the scan read on several stages (tied weights: an
  /// embedding's table as the head) is on each of them, as Megatron-LM keeps
  /// the tied embedding on the first and the last stage: its stage is
  /// kEveryReader, `shared` says which.
  static constexpr int kEveryReader = -2;
  std::vector<int> assignStages(const Forward &forward, const std::vector<unsigned> &roots,
                                const std::vector<bool> &needed,
                                llvm::function_ref<int(int64_t)> stageOf, int epilogue, int last,
                                std::map<unsigned, std::set<int>> &shared) {
    std::vector<int> stage(sp.graph.nodes.size(), -1);
    std::vector<bool> isParam(sp.graph.nodes.size(), false);
    for (const FunctionValue &p : forward.params)
      isParam[p.node] = true;
    for (const Node &node : sp.graph.nodes) {
      if (!needed[node.id])
        continue;
      if (auto layer = node.attrs.find("layer"); layer != node.attrs.end() &&
                                                 node.operands.empty()) {
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

  static unsigned countScans(const TypedProgram &p) {
    return llvm::count_if(p.graph.nodes, [](const Node &n) { return n.op == OpKind::scan; });
  }

  /// How many layers the flat graph's scans have.
  int64_t flatLayers() const {
    int64_t layers = 0;
    for (const Node &node : sp.graph.nodes)
      if (auto layer = node.attrs.find("layer"); layer != node.attrs.end())
        layers = std::max(layers, std::get<int64_t>(layer->second) + 1);
    return layers;
  }

  /// What `backward` reads of its stage's forward values (nodes before
  /// `backwardBegin` on stage `s`) becomes a result of `forward` and an argument
  /// of `backward` (ArgRole::residual): kept from the forward pass, each
  /// microbatch's until its backward pass, rather than recomputed. Under a
  /// `remat` policy the gradient reads its own recomputed copies instead, and
  /// the stage keeps what the policy keeps.
  void keepResiduals(StepFunction &forward, StepFunction &backward, unsigned backwardBegin,
                     const std::vector<int> &stage, int s, const TypedProgram &p) {
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

  /// `values` (a scanned tensor's once per layer) as the runtime holds `tensors`
  /// under a pipeline: a scanned one stacked in one argument (`op`'s node), split
  /// over the stage axis by sema, so that each stage holds its own layers'
  /// parameters and optimizer state (updated by apply_step where they live) and
  /// draws its own layers' dropout numbers; the others as `values` has them.
  template <typename Tensor>
  std::vector<FunctionValue> stackLayers(const std::vector<Tensor> &tensors,
                                         const std::vector<FunctionValue> &values, OpKind op) {
    std::vector<FunctionValue> stacked;
    for (const Tensor &t : tensors) {
      if (!t.stacked) {
        stacked.push_back(*llvm::find_if(values, [&](const FunctionValue &v) { return v.name == t.path; }));
        continue;
      }
      FunctionValue v;
      v.name = t.path;
      v.loc = t.loc;
      v.sharding = t.sharding;
      v.role = op == OpKind::param ? ArgRole::parameter : ArgRole::input;
      v.stacked = true;
      v.node = addNode(op, t.path, t.type, t.loc);
      stacked.push_back(v);
    }
    return stacked;
  }

  /// A program split into stages (a pipeline's, or the layer loop's): the nodes
  /// of each, and what crosses from one to a later one (once per reading stage).
  struct Stages {
    std::vector<int> of;
    std::map<unsigned, std::set<int>> shared;
    std::vector<PipelineTransfer> transfers;
  };

  Stages splitStages(const TypedProgram &p, const Forward &forward,
                     const std::vector<unsigned> &roots, llvm::function_ref<int(int64_t)> stageOf,
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
        if (from < 0 || from >= to || value.op == OpKind::param ||
            !seen.insert({operand, to}).second)
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
      stages.transfers.push_back(
          {root, from, last, p.pipeline.shardingOf(value.type, p.mesh)});
    }
    return stages;
  }

  FunctionValue transferValue(const Stages &stages, size_t k, ArgRole role, unsigned node) {
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

  /// The parameters stage `s` reads.
  static std::vector<FunctionValue> stageParams(const Forward &forward, const Stages &stages, int s) {
    std::vector<FunctionValue> params;
    for (const FunctionValue &param : forward.params)
      if (stages.of[param.node] == s ||
          (stages.shared.count(param.node) && stages.shared.at(param.node).count(s)))
        params.push_back(param);
    return params;
  }

  /// Stage `s`'s forward: its parameters, `inputs` and what it receives -> what
  /// it sends.
  StepFunction stageForward(const Forward &forward, const Stages &stages, int s,
                            const std::vector<FunctionValue> &inputs, const std::string &name) {
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

  /// Stage `s`'s functions: forward sends the values later stages read and
  /// returns what its backward pass reads (keepResiduals: on the last stage also
  /// the loss and metrics); backward differentiates the pseudo-loss sum(sent *
  /// its cotangent), or the loss on the last stage, and returns the cotangents of
  /// what the stage received. `inputs` are those the stage's functions take.
  /// Without `keep`, backward computes the forward values it reads itself.
  std::optional<PipelineStage> buildStage(const TypedProgram &p, const Forward &forward,
                                          const Stages &stages, int s, int last,
                                          const std::vector<FunctionValue> &lossAndMetrics,
                                          const std::vector<FunctionValue> &inputs,
                                          const std::string &forwardName,
                                          const std::string &backwardName, bool keep = true) {
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
        total = total ? appendNode(sp.graph, OpKind::add, {*total, sum},
                                   TensorType{DType::F32, {}}, value.loc)
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
      backward.results.push_back(
          transferValue(stages, size_t(r.transfer), ArgRole::cotangent, grad));
    addGradientSums(backward, params,
                    std::vector<unsigned>(grads->begin(), grads->begin() + params.size()),
                    lossScale, sums);
    llvm::append_range(backward.args, sums);
    llvm::append_range(backward.args, inputs);
    llvm::append_range(backward.args, received);
    llvm::append_range(backward.args, cotangents);
    if (keep)
      keepResiduals(st.forward, backward, backwardBegin, stages.of, s, p);
    return st;
  }

  /// The functions each stage runs per microbatch (buildStage), the layers
  /// split in order over the pipeline's stages.
  bool buildPipeline(const TypedProgram &micro) {
    if (!checkMicrobatchProgram(micro))
      return false;
    std::optional<Forward> forward = flatten(micro);
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
      diags.error(pipeline.loc, scans != 1 ? "a pipeline's stages split one scan's layers, and "
                                             "model '" + program.modelName + "' has " +
                                                 std::to_string(scans) + " scans"
                                           : "the " + std::to_string(layers) +
                                                 " layers do not divide into " +
                                                 std::to_string(pipeline.stages) + " stages");
      return false;
    }
    auto stageOf = [&](int64_t layer) { return int(layer * pipeline.stages / layers); };
    Stages stages = splitStages(micro, *forward, nodesOf(forward->lossAndMetrics), stageOf,
                                /*epilogue=*/-1, last);

    PipelineSteps steps;
    const std::vector<FunctionValue> inputs = microbatchInputs(*forward, micro);
    for (int s = 0; s <= last; ++s) {
      auto stage = buildStage(micro, *forward, stages, s, last, *lossAndMetrics, inputs,
                              "stage_forward_" + std::to_string(s),
                              "stage_backward_" + std::to_string(s));
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

  //===--------------------------------------------------------------------===//
  // The scan as a loop
  //===--------------------------------------------------------------------===//

  /// A program with one scan, without a pipeline or microbatches, trains and
  /// evaluates with its scan as a loop: its flat graph (`forward`) split into
  /// stages as a pipeline's would be, the prologue (0), each layer (1 .. L) and
  /// the epilogue (L + 1), all on every rank in turn; only the prologue's, the
  /// first layer's and the epilogue's functions are built, and train_step,
  /// grad_step and eval_step (shardc-layer-loop) call the first layer's for each
  /// layer on that layer's slices. A program whose layers pass more than the
  /// carry on (the prologue anything but to the epilogue) stays unrolled.
  void buildLayerLoop(const Forward &forward) {
    if (!program.optimizer || !program.pipeline.axis.empty() || program.microbatches.count > 1 ||
        countScans(program) != 1)
      return;
    const int64_t layers = flatLayers();
    const int epilogue = int(layers) + 1;
    auto stageOf = [](int64_t layer) { return int(layer) + 1; };
    Stages train = splitStages(program, forward, nodesOf(forward.lossAndMetrics), stageOf,
                               epilogue, epilogue);
    Stages eval = splitStages(program, forward, nodesOf(sp.eval.results), stageOf, epilogue,
                              epilogue);
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
      auto stage = buildStage(program, forward, train, part.stage, epilogue,
                              forward.lossAndMetrics, part.inputs, name + "_forward",
                              name + (last ? "_step" : "_backward"), /*keep=*/!last);
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

  /// Whether the layers pass on the carry alone (one value from each to the
  /// next), and the prologue nothing else but to the epilogue.
  static bool passesCarryOnly(const Stages &stages, int epilogue) {
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
};

} // namespace

std::optional<StepProgram> shardc::buildStepProgram(const TypedProgram &program,
                                                    DiagnosticEngine &diags,
                                                    const TypedProgram *microbatch,
                                                    bool loopScans) {
  return StepProgramBuilder(program, diags).run(microbatch, loopScans);
}
