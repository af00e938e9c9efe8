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
//
// The optimizer's state is one tensor per parameter per name (Builtins.def),
// shaped and sharded like the parameter.
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

std::vector<unsigned> shardc::appendOptimizerUpdate(Graph &graph, const Optimizer &optimizer,
                                                    const std::vector<unsigned> &params,
                                                    const std::vector<unsigned> &grads,
                                                    const std::vector<std::vector<unsigned>> &state,
                                                    unsigned step) {
  SMRange at = optimizer.loc;
  double lr = hyperparameter(optimizer, "lr");
  std::vector<unsigned> newParams;
  std::vector<std::vector<unsigned>> newState(state.size()); // [state name][parameter]
  std::vector<unsigned> corrections;
  if (optimizer.kind == OptimizerKind::adam)
    for (const char *beta : {"b1", "b2"})
      corrections.push_back(appendNode(graph, OpKind::adam_bias_correction, {step},
                                       TensorType{DType::F32, {}}, at,
                                       {{"beta", hyperparameter(optimizer, beta)}}));

  for (size_t i = 0; i < params.size(); ++i) {
    unsigned p = params[i], g = grads[i];
    const TensorType &type = graph.nodes[p].type;
    switch (optimizer.kind) {
    case OptimizerKind::sgd:
      newParams.push_back(appendNode(graph, OpKind::sgd_update, {p, g}, type, at, {{"lr", lr}}));
      break;
    case OptimizerKind::momentum: {
      unsigned trace = appendNode(graph, OpKind::momentum_trace, {state[0][i], g}, type, at,
                                  {{"beta", hyperparameter(optimizer, "beta")}});
      newState[0].push_back(trace);
      newParams.push_back(
          appendNode(graph, OpKind::sgd_update, {p, trace}, type, at, {{"lr", lr}}));
      break;
    }
    case OptimizerKind::adam: {
      unsigned mu = appendNode(graph, OpKind::adam_mu, {state[0][i], g}, type, at,
                               {{"beta", hyperparameter(optimizer, "b1")}});
      unsigned nu = appendNode(graph, OpKind::adam_nu, {state[1][i], g}, type, at,
                               {{"beta", hyperparameter(optimizer, "b2")}});
      newState[0].push_back(mu);
      newState[1].push_back(nu);
      newParams.push_back(appendNode(graph, OpKind::adam_update,
                                     {p, mu, nu, corrections[0], corrections[1]}, type, at,
                                     {{"lr", lr}, {"eps", hyperparameter(optimizer, "eps")}}));
      break;
    }
    }
  }
  for (const std::vector<unsigned> &tensors : newState)
    newParams.insert(newParams.end(), tensors.begin(), tensors.end());
  return newParams;
}
