//===- Optimizer.cpp - optax's update rules as graph nodes ----------------===//
//
// Each rule is a few fused elementwise internal ops (one pass over a
// parameter each) that MLIRGen lowers to linalg.generic:
//
//   sgd       p - lr g                                  (sgd_update)
//   momentum  t = g + beta t;  p - lr t                 (momentum_trace, sgd_update)
//   adam      mu = b1 mu + (1 - b1) g                   (adam_mu)
//             nu = b2 nu + (1 - b2) g^2                 (adam_nu)
//             p - lr (mu / c1) / (sqrt(nu / c2) + eps)  (adam_update)
//             with c = 1 - b^step, once per step        (adam_bias_correction)
//   adamw     adam's, with `+ weight_decay p` inside the bracket
//
// lr is a scalar node: the constant, or optax's warmup_cosine_decay_schedule of the
// step (learning_rate). With `clip`, every gradient is first scaled by
// clip / max(norm, clip), norm = sqrt of the sum of every gradient's squares
// (clip_scale). Each gradient's squares are summed as contract(g, g) over all its
// axes, one pass and no squared copy; a sharded gradient's partial sums are
// all-reduced by the partitioner (shardc-combine-all-reduces makes them one), so
// the norm is the global one on every layout.
//
// The optimizer's state is one tensor per parameter per name (Builtins.def),
// shaped and sharded like the parameter.
//
// The update is kept only where the step is healthy: h = loss + the sum over every
// gradient of g * 0 (finite_zero) is finite exactly when the loss and every
// gradient are (g * 0 is NaN for an infinite or NaN g, 0 otherwise; g * g would
// overflow for large finite g). Each new parameter and state is select(h - h == 0, new, old)
// (keep_if_finite, fused into the update's pass), and the loss the step returns
// is loss + (h - h): NaN on such a step. So the runtime can update its one set of
// parameters and state in place: a step it stops at or skips has changed nothing.
//
//===----------------------------------------------------------------------===//

#include "shardc/Train/StepFunctions.h"

using namespace shardc;

namespace {

double hyperparameter(const Optimizer &optimizer, llvm::StringRef name) {
  for (const auto &[key, value] : optimizer.hyperparameters)
    if (key == name)
      return value;
  llvm_unreachable("sema fills in every hyperparameter");
}

} // namespace

unsigned shardc::appendNode(Graph &graph, OpKind op, std::vector<unsigned> operands,
                            const TensorType &type, SMRange loc,
                            std::map<std::string, Attribute> attrs) {
  Node node;
  node.op = op;
  node.operands = std::move(operands);
  node.type = type;
  node.loc = loc;
  node.attrs = std::move(attrs);
  return graph.add(std::move(node));
}

namespace {

const TensorType kScalar{DType::F32, {}};

/// The scan layer `param` is a slice of, if a scan stacks it (Flatten.cpp).
std::optional<int64_t> scanLayerOf(const Graph &graph, unsigned param) {
  const auto &attrs = graph.nodes[param].attrs;
  auto layer = attrs.find("layer");
  if (layer == attrs.end())
    return std::nullopt;
  return std::get<int64_t>(layer->second);
}

/// Marks the nodes from `begin` on as part `stage` of the scan layer that
/// `param` is a slice of (nothing for a parameter that no scan stacks).
void markLayer(Graph &graph, unsigned param, size_t begin, LayerStage stage) {
  std::optional<int64_t> layer = scanLayerOf(graph, param);
  if (!layer)
    return;
  for (size_t id = begin; id < graph.nodes.size(); ++id) {
    graph.nodes[id].layer = *layer;
    graph.nodes[id].stage = stage;
  }
}

/// The learning rate of this step: a constant, or the warmup-cosine schedule of it.
unsigned learningRate(Graph &graph, const Optimizer &optimizer, unsigned step) {
  SMRange at = optimizer.loc;
  double lr = hyperparameter(optimizer, "lr"), warmup = hyperparameter(optimizer, "warmup"),
         decaySteps = hyperparameter(optimizer, "decay_steps");
  if (warmup == 0 && decaySteps == 0)
    return appendNode(graph, OpKind::constant, {}, kScalar, at, {{"value", lr}});
  return appendNode(graph, OpKind::learning_rate, {step}, kScalar, at,
                    {{"peak", lr},
                     {"warmup", warmup},
                     {"decay_steps", decaySteps},
                     {"end", hyperparameter(optimizer, "end_lr")}});
}

/// `start` plus one scalar term per parameter. A scanned layer's terms are
/// summed within its `check` part first, and the step adds one partial sum per
/// layer: the unrolled step then holds no chain as long as the parameters.
unsigned sumOverParameters(Graph &graph, const std::vector<unsigned> &params,
                           const std::vector<unsigned> &terms, std::optional<unsigned> start,
                           SMRange at) {
  auto add = [&](std::optional<unsigned> &sum, unsigned term) {
    sum = sum ? appendNode(graph, OpKind::add, {*sum, term}, kScalar, at) : term;
  };
  std::map<int64_t, std::optional<unsigned>> perLayer;
  for (auto [p, term] : llvm::zip(params, terms)) {
    std::optional<int64_t> layer = scanLayerOf(graph, p);
    if (!layer) {
      add(start, term);
      continue;
    }
    size_t begin = graph.nodes.size();
    add(perLayer[*layer], term);
    markLayer(graph, p, begin, LayerStage::check);
  }
  for (auto &[layer, partial] : perLayer)
    add(start, *partial);
  return *start;
}

/// The gradients of `params` scaled to a global norm of at most `clip`.
std::vector<unsigned> clipByGlobalNorm(Graph &graph, const Optimizer &optimizer,
                                       const std::vector<unsigned> &params,
                                       std::vector<unsigned> grads) {
  SMRange at = optimizer.loc;
  if (grads.empty())
    return grads;
  std::vector<unsigned> squares;
  for (auto [p, g] : llvm::zip(params, grads)) {
    std::vector<std::string> every;
    for (const Dim &d : graph.nodes[g].type.dims)
      every.push_back(d.axis);
    squares.push_back(appendNode(graph, OpKind::contract, {g, g}, kScalar, at, {{"over", every}}));
    markLayer(graph, p, squares.back(), LayerStage::check);
  }
  unsigned sum = sumOverParameters(graph, params, squares, std::nullopt, at);
  unsigned scale = appendNode(graph, OpKind::clip_scale, {sum}, kScalar, at,
                              {{"clip", hyperparameter(optimizer, "clip")}});
  for (auto [p, g] : llvm::zip(params, grads)) {
    const TensorType type = graph.nodes[g].type;
    g = appendNode(graph, OpKind::mul, {g, scale}, type, at);
    markLayer(graph, p, g, LayerStage::update);
  }
  return grads;
}

} // namespace

UpdateNodes shardc::appendOptimizerUpdate(Graph &graph, const Optimizer &optimizer, unsigned loss,
                                          const std::vector<unsigned> &params,
                                          std::vector<unsigned> grads,
                                          const std::vector<std::vector<unsigned>> &state,
                                          unsigned step) {
  SMRange at = optimizer.loc;
  // The step's health: loss + the sum of every gradient times 0, finite exactly when
  // the loss and every gradient are (a sum of squares would overflow on large finite
  // gradients). One read of each gradient.
  std::vector<unsigned> zeros;
  for (auto [p, g] : llvm::zip(params, grads)) {
    zeros.push_back(appendNode(graph, OpKind::finite_zero, {g}, kScalar, at));
    markLayer(graph, p, zeros.back(), LayerStage::check);
  }
  unsigned health = sumOverParameters(graph, params, zeros, loss, at);
  if (hyperparameter(optimizer, "clip") > 0)
    grads = clipByGlobalNorm(graph, optimizer, params, std::move(grads));
  unsigned lr = learningRate(graph, optimizer, step);
  std::vector<unsigned> newParams;
  std::vector<std::vector<unsigned>> newState(state.size()); // [state name][parameter]
  std::vector<unsigned> corrections;
  if (optimizer.kind == OptimizerKind::adam || optimizer.kind == OptimizerKind::adamw)
    for (const char *beta : {"b1", "b2"})
      corrections.push_back(appendNode(graph, OpKind::adam_bias_correction, {step}, kScalar, at,
                                       {{"beta", hyperparameter(optimizer, beta)}}));

  for (size_t i = 0; i < params.size(); ++i) {
    unsigned p = params[i], g = grads[i];
    const TensorType type = graph.nodes[p].type;
    size_t begin = graph.nodes.size();
    switch (optimizer.kind) {
    case OptimizerKind::sgd:
      newParams.push_back(appendNode(graph, OpKind::sgd_update, {p, g, lr}, type, at));
      break;
    case OptimizerKind::momentum: {
      unsigned trace = appendNode(graph, OpKind::momentum_trace, {state[0][i], g}, type, at,
                                  {{"beta", hyperparameter(optimizer, "beta")}});
      newState[0].push_back(trace);
      newParams.push_back(appendNode(graph, OpKind::sgd_update, {p, trace, lr}, type, at));
      break;
    }
    case OptimizerKind::adam:
    case OptimizerKind::adamw: {
      unsigned mu = appendNode(graph, OpKind::adam_mu, {state[0][i], g}, type, at,
                               {{"beta", hyperparameter(optimizer, "b1")}});
      unsigned nu = appendNode(graph, OpKind::adam_nu, {state[1][i], g}, type, at,
                               {{"beta", hyperparameter(optimizer, "b2")}});
      newState[0].push_back(mu);
      newState[1].push_back(nu);
      double decay =
          optimizer.kind == OptimizerKind::adamw ? hyperparameter(optimizer, "weight_decay") : 0;
      newParams.push_back(appendNode(
          graph, OpKind::adam_update, {p, mu, nu, corrections[0], corrections[1], lr}, type, at,
          {{"eps", hyperparameter(optimizer, "eps")}, {"weight_decay", decay}}));
      break;
    }
    }
    markLayer(graph, p, begin, LayerStage::update);
  }
  for (const std::vector<unsigned> &tensors : newState)
    newParams.insert(newParams.end(), tensors.begin(), tensors.end());

  // Where the health is not finite, every parameter and state keeps its value, and
  // the loss the step returns is NaN, for the runtime to see.
  UpdateNodes update;
  std::vector<unsigned> old = params;
  for (const std::vector<unsigned> &tensors : state)
    old.insert(old.end(), tensors.begin(), tensors.end());
  for (size_t i = 0; i < newParams.size(); ++i) {
    update.values.push_back(appendNode(graph, OpKind::keep_if_finite,
                                       {newParams[i], old[i], health}, graph.nodes[old[i]].type,
                                       at));
    markLayer(graph, params[i % params.size()], update.values.back(), LayerStage::update);
  }
  unsigned nothing = appendNode(graph, OpKind::sub, {health, health}, kScalar, at);
  update.loss = appendNode(graph, OpKind::add, {loss, nothing}, kScalar, at);
  return update;
}
