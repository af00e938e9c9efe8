//===- Gradient.cpp - reverse-mode differentiation of the flat graph ------===//
//
// Walks the graph backwards from the loss and appends, for every node the
// loss depends on through f32 values, the vector-Jacobian product of each of
// its operands that depends on a parameter. The products are nodes like the
// forward ones, so the gradient is lowered, sharded and partitioned by the
// same code; the few that have no forward counterpart are internal ops that
// MLIRGen lowers (MLIRGenGradients.cpp):
//
//   broadcast_over(dy)              sum/mean's gradient: dy repeated over `over`
//   relu_grad(x, dy)                dy where x > 0
//   gelu_grad(x, dy)                dy * gelu'(x)
//   embedding_grad(ids, dy)         dy's rows added into the table rows ids pick
//   matmul_grad_lhs(dy, b)          dy @ b^T over b's free dims
//   matmul_grad_rhs(a, dy)          a^T @ dy over a's free dims
//   log_softmax_grad(y, dy)         dy - exp(y) * sum(dy)        (sums over `over`)
//   softmax_grad(y, dy)             y * (dy - sum(dy * y))
//   top_k_mask(x)                   1 where an element is the c-th largest along
//                                   `over`, on a new last axis `into` (c)
//   softmax_cross_entropy_grad(z, labels, dy)
//   conv2d_input_grad(dy, w)        conv2d_filter_grad(x, dy)
//   avg_pool_grad(dy)
//
// A sharding constraint's gradient is the same constraint on the cotangent,
// as JAX transposes with_sharding_constraint.
//
// Remat (jax.checkpoint): the backward walk reaches a remat group (one layer of
// a scanned block, Flatten.cpp) at its last node. There it first appends a copy
// of each of the group's nodes its policy does not keep (`nothing`: all; `dots`:
// all but matmuls and contractions), reading the copies of the others and the
// originals of what the group takes in (its input, the layer's parameters), and
// every gradient node from then on reads a copy where there is one. The copies
// come right before the layer's gradient in the graph's order, which is the
// order MLIRGen emits, so a layer's forward values are live in the forward pass
// only until the next layer has used them. Each copy carries `remat` (its
// group): MLIRGen stamps it on the ops it emits, so that cse keeps them apart
// from the forward's.
//
//===----------------------------------------------------------------------===//

#include "shardc/Train/StepFunctions.h"

using namespace shardc;

namespace {

class GradientBuilder {
public:
  GradientBuilder(Graph &graph, const std::vector<RematGroup> &remat, DiagnosticEngine &diags)
      : graph(graph), remat(remat), diags(diags) {}

  std::optional<std::vector<unsigned>> run(unsigned loss, const std::vector<unsigned> &wrt,
                                           const std::vector<bool> *within) {
    // A node outside `within` is a constant to this gradient: nothing flows through it.
    auto differentiates = [&](unsigned id) {
      return !within || id >= within->size() || (*within)[id];
    };
    size_t forwardSize = graph.nodes.size();
    std::vector<int> groupOf(forwardSize, -1);
    for (auto [g, group] : llvm::enumerate(remat))
      for (unsigned id = group.begin; id < group.end; ++id)
        groupOf[id] = static_cast<int>(g);
    std::vector<bool> recomputed(remat.size(), false);
    active.assign(forwardSize, false);
    for (unsigned id : wrt)
      active[id] = true;
    for (const Node &node : graph.nodes)
      if (node.type.dtype == DType::F32 && differentiates(node.id))
        for (unsigned operand : node.operands)
          if (active[operand])
            active[node.id] = true;

    adjoint.assign(forwardSize, -1);
    if (active[loss])
      adjoint[loss] = static_cast<int>(constant(1.0, graph.nodes[loss].loc));
    for (size_t id = loss + 1; id-- > 0;) {
      if (adjoint[id] < 0 || graph.nodes[id].operands.empty() || !differentiates(id))
        continue;
      size_t begin = graph.nodes.size();
      if (groupOf[id] >= 0 && !recomputed[groupOf[id]]) {
        recompute(static_cast<unsigned>(groupOf[id]));
        recomputed[groupOf[id]] = true;
      }
      const Node &node = graph.nodes[id];
      if (!backward(node, static_cast<unsigned>(adjoint[id])))
        return std::nullopt;
      // What the walk appended for a layer's node is that layer's backward.
      for (size_t made = begin; made < graph.nodes.size(); ++made) {
        graph.nodes[made].layer = node.layer;
        graph.nodes[made].stage = LayerStage::backward;
      }
    }

    std::vector<unsigned> grads;
    for (unsigned id : wrt) {
      if (adjoint[id] >= 0) {
        grads.push_back(static_cast<unsigned>(adjoint[id]));
        continue;
      }
      grads.push_back(
          make(OpKind::constant, {}, graph.nodes[id].type, graph.nodes[id].loc, {{"value", 0.0}}));
    }
    return grads;
  }

private:
  Graph &graph;
  const std::vector<RematGroup> &remat;
  DiagnosticEngine &diags;
  std::vector<bool> active;
  std::vector<int> adjoint;                  // gradient node of each forward node, -1 for none yet
  std::map<unsigned, unsigned> recomputedAs; // forward node -> its remat copy

  const TensorType &typeOf(unsigned id) const { return graph.nodes[id].type; }

  /// Each operand that has a remat copy reads the copy instead.
  void readCopies(std::vector<unsigned> &operands) const {
    for (unsigned &operand : operands)
      if (auto copy = recomputedAs.find(operand); copy != recomputedAs.end())
        operand = copy->second;
  }

  /// A gradient node: it reads the remat copy of a forward value where there is one.
  unsigned make(OpKind op, std::vector<unsigned> operands, const TensorType &type, SMRange loc,
                std::map<std::string, Attribute> attrs = {}) {
    readCopies(operands);
    return appendNode(graph, op, std::move(operands), type, loc, std::move(attrs));
  }

  /// Appends the copies of group `g`'s nodes that its policy does not keep.
  void recompute(unsigned g) {
    const RematGroup &group = remat[g];
    for (unsigned id = group.begin; id < group.end; ++id) {
      const Node &node = graph.nodes[id];
      bool dot = node.op == OpKind::matmul || node.op == OpKind::contract;
      if (node.operands.empty() || (group.policy == "dots" && dot))
        continue;
      Node copy = node;
      readCopies(copy.operands);
      copy.attrs["remat"] = static_cast<int64_t>(g);
      recomputedAs[id] = graph.add(std::move(copy));
    }
  }

  unsigned constant(double value, SMRange loc) {
    return make(OpKind::constant, {}, TensorType{DType::F32, {}}, loc, {{"value", value}});
  }

  /// Adds `grad` to the gradient of `id`, if `id` depends on a parameter.
  void accumulate(unsigned id, unsigned grad) {
    if (!active[id])
      return;
    if (adjoint[id] < 0) {
      adjoint[id] = static_cast<int>(grad);
      return;
    }
    adjoint[id] = static_cast<int>(make(OpKind::add, {static_cast<unsigned>(adjoint[id]), grad},
                                        typeOf(id), graph.nodes[id].loc));
  }

  /// Elementwise operands broadcast by axis name: the gradient of a smaller
  /// operand is summed over the axes it lacks.
  void accumulateUnbroadcast(unsigned id, unsigned grad, SMRange loc) {
    if (!active[id])
      return;
    std::vector<std::string> lacking;
    for (const Dim &d : typeOf(grad).dims)
      if (typeOf(id).axisIndex(d.axis) < 0)
        lacking.push_back(d.axis);
    if (!lacking.empty())
      grad = make(OpKind::sum, {grad}, typeOf(id), loc, {{"over", lacking}});
    accumulate(id, grad);
  }

  /// contract(a, b) into `type`, summing over the axes of a and b it lacks.
  unsigned contractTo(unsigned a, unsigned b, const TensorType &type, SMRange loc) {
    std::vector<std::string> over;
    for (unsigned operand : {a, b})
      for (const Dim &d : typeOf(operand).dims)
        if (type.axisIndex(d.axis) < 0 && !llvm::is_contained(over, d.axis))
          over.push_back(d.axis);
    return make(OpKind::contract, {a, b}, type, loc, {{"over", over}});
  }

  bool backward(const Node &node, unsigned dy) {
    const TensorType &type = node.type;
    SMRange at = node.loc;
    auto x = [&](unsigned i) { return node.operands[i]; };
    auto unaryTimes = [&](unsigned factor) {
      accumulate(x(0), make(OpKind::mul, {dy, factor}, type, at));
      return true;
    };

    switch (node.op) {
    case OpKind::add:
    case OpKind::sub:
      accumulateUnbroadcast(x(0), dy, at);
      if (active[x(1)])
        accumulateUnbroadcast(x(1), node.op == OpKind::add ? dy : make(OpKind::neg, {dy}, type, at),
                              at);
      return true;
    case OpKind::mul:
      if (active[x(0)])
        accumulateUnbroadcast(x(0), make(OpKind::mul, {dy, x(1)}, type, at), at);
      if (active[x(1)])
        accumulateUnbroadcast(x(1), make(OpKind::mul, {dy, x(0)}, type, at), at);
      return true;
    case OpKind::div:
      if (active[x(0)])
        accumulateUnbroadcast(x(0), make(OpKind::div, {dy, x(1)}, type, at), at);
      if (active[x(1)]) { // d(a/b)/db = -(a/b)/b
        unsigned quotient =
            make(OpKind::div, {make(OpKind::mul, {dy, node.id}, type, at), x(1)}, type, at);
        accumulateUnbroadcast(x(1), make(OpKind::neg, {quotient}, type, at), at);
      }
      return true;
    case OpKind::neg:
      accumulate(x(0), make(OpKind::neg, {dy}, type, at));
      return true;
    case OpKind::relu:
      accumulate(x(0), make(OpKind::relu_grad, {x(0), dy}, type, at));
      return true;
    case OpKind::exp:
      return unaryTimes(node.id);
    case OpKind::log:
      accumulate(x(0), make(OpKind::div, {dy, x(0)}, type, at));
      return true;
    case OpKind::tanh: // 1 - y^2
      return unaryTimes(make(OpKind::sub,
                             {constant(1.0, at), make(OpKind::mul, {node.id, node.id}, type, at)},
                             type, at));
    case OpKind::sigmoid: // y (1 - y)
      return unaryTimes(make(OpKind::mul,
                             {node.id, make(OpKind::sub, {constant(1.0, at), node.id}, type, at)},
                             type, at));
    case OpKind::sqrt: // 1 / (2 y)
      accumulate(x(0),
                 make(OpKind::div, {dy, make(OpKind::mul, {constant(2.0, at), node.id}, type, at)},
                      type, at));
      return true;
    case OpKind::rsqrt: // -y^3 / 2
      return unaryTimes(make(
          OpKind::mul,
          {constant(-0.5, at),
           make(OpKind::mul, {node.id, make(OpKind::mul, {node.id, node.id}, type, at)}, type, at)},
          type, at));
    case OpKind::gelu:
      accumulate(x(0), make(OpKind::gelu_grad, {x(0), dy}, type, at));
      return true;
    case OpKind::contract: // each operand's gradient contracts dy with the other
      if (active[x(0)])
        accumulate(x(0), contractTo(dy, x(1), typeOf(x(0)), at));
      if (active[x(1)])
        accumulate(x(1), contractTo(x(0), dy, typeOf(x(1)), at));
      return true;
    case OpKind::embedding: // the rows of dy summed into the rows their ids pick
      accumulate(x(1), make(OpKind::embedding_grad, {x(0), dy}, typeOf(x(1)), at));
      return true;
    case OpKind::rename: {
      std::map<std::string, Attribute> back{{"from", node.attrs.at("to")},
                                            {"to", node.attrs.at("from")}};
      accumulate(x(0), make(OpKind::rename, {dy}, typeOf(x(0)), at, back));
      return true;
    }
    case OpKind::causal_mask: { // dy where kept, 0 elsewhere
      std::map<std::string, Attribute> attrs = node.attrs;
      attrs["fill"] = 0.0;
      accumulate(x(0), make(OpKind::causal_mask, {dy}, type, at, attrs));
      return true;
    }
    case OpKind::matmul:
      if (active[x(0)])
        accumulate(x(0), make(OpKind::matmul_grad_lhs, {dy, x(1)}, typeOf(x(0)), at));
      if (active[x(1)])
        accumulate(x(1), make(OpKind::matmul_grad_rhs, {x(0), dy}, typeOf(x(1)), at));
      return true;
    case OpKind::sum:
    case OpKind::mean: {
      const TensorType &in = typeOf(x(0));
      const auto &over = std::get<std::vector<std::string>>(node.attrs.at("over"));
      double count = 1;
      for (const Dim &d : in.dims)
        if (llvm::is_contained(over, d.axis))
          count *= static_cast<double>(d.size);
      double scale = node.op == OpKind::mean ? 1.0 / count : 1.0;
      accumulate(x(0),
                 make(OpKind::broadcast_over, {dy}, in, at, {{"over", over}, {"scale", scale}}));
      return true;
    }
    case OpKind::log_softmax:
    case OpKind::softmax: {
      OpKind grad = node.op == OpKind::softmax ? OpKind::softmax_grad : OpKind::log_softmax_grad;
      accumulate(x(0), make(grad, {node.id, dy}, type, at, {{"over", node.attrs.at("over")}}));
      return true;
    }
    case OpKind::max:
    case OpKind::min: { // dy shared equally among the elements equal to the result
      const TensorType &in = typeOf(x(0));
      TensorType flags = in;
      flags.dtype = DType::Bool;
      unsigned hits = make(OpKind::to_f32, {make(OpKind::eq, {x(0), node.id}, flags, at)}, in, at);
      unsigned count = make(OpKind::sum, {hits}, type, at, {{"over", node.attrs.at("over")}});
      accumulate(x(0), make(OpKind::mul, {hits, make(OpKind::div, {dy, count}, type, at)}, in, at));
      return true;
    }
    case OpKind::cumsum: { // the running sum of dy the other way
      std::map<std::string, Attribute> attrs = node.attrs;
      attrs["reverse"] = int64_t(!std::get<int64_t>(attrs.at("reverse")));
      accumulate(x(0), make(OpKind::cumsum, {dy}, type, at, attrs));
      return true;
    }
    case OpKind::top_k: { // dy back to the elements chosen: a contraction with their mask
      const TensorType &in = typeOf(x(0));
      TensorType maskType = in;
      maskType.dims.push_back(
          Dim{std::get<std::string>(node.attrs.at("into")), std::get<int64_t>(node.attrs.at("k"))});
      unsigned mask = make(OpKind::top_k_mask, {x(0)}, maskType, at, node.attrs);
      accumulate(x(0), contractTo(dy, mask, in, at));
      return true;
    }
    case OpKind::where: {
      unsigned zero = constant(0.0, at);
      if (active[x(1)])
        accumulateUnbroadcast(x(1), make(OpKind::where, {x(0), dy, zero}, type, at), at);
      if (active[x(2)])
        accumulateUnbroadcast(x(2), make(OpKind::where, {x(0), zero, dy}, type, at), at);
      return true;
    }
    case OpKind::transpose:
      accumulate(x(0), make(OpKind::transpose, {dy}, typeOf(x(0)), at));
      return true;
    case OpKind::softmax_cross_entropy: {
      const TensorType &logits = typeOf(x(0));
      if (active[x(0)])
        accumulate(x(0), make(OpKind::softmax_cross_entropy_grad, {x(0), x(1), dy}, logits, at));
      if (active[x(1)]) { // -dy * log_softmax(logits)
        unsigned logProbs = make(OpKind::log_softmax, {x(0)}, logits, at);
        std::vector<std::string> classes{logits.dims.back().axis};
        unsigned spread =
            make(OpKind::broadcast_over, {dy}, logits, at, {{"over", classes}, {"scale", -1.0}});
        accumulate(x(1), make(OpKind::mul, {spread, logProbs}, logits, at));
      }
      return true;
    }
    case OpKind::conv2d: {
      std::map<std::string, Attribute> attrs{{"stride", node.attrs.at("stride")},
                                             {"padding", node.attrs.at("padding")}};
      if (active[x(0)])
        accumulate(x(0), make(OpKind::conv2d_input_grad, {dy, x(1)}, typeOf(x(0)), at, attrs));
      if (active[x(1)])
        accumulate(x(1), make(OpKind::conv2d_filter_grad, {x(0), dy}, typeOf(x(1)), at, attrs));
      return true;
    }
    case OpKind::avg_pool:
      accumulate(x(0), make(OpKind::avg_pool_grad, {dy}, typeOf(x(0)), at, node.attrs));
      return true;
    case OpKind::flatten:
    case OpKind::reshape:
      accumulate(x(0), make(OpKind::reshape, {dy}, typeOf(x(0)), at));
      return true;
    case OpKind::sharding_constraint: {
      unsigned constrained = make(OpKind::sharding_constraint, {dy}, type, at);
      graph.nodes[constrained].constraint = node.constraint;
      accumulate(x(0), constrained);
      return true;
    }
    // No f32 operand of these reaches the loss through them (integer and
    // boolean results, values), or they exist only after flattening or only
    // in gradients and updates.
    case OpKind::one_hot:
    case OpKind::argmax:
    case OpKind::top_k_indices:
    case OpKind::eq:
    case OpKind::ne:
    case OpKind::lt:
    case OpKind::le:
    case OpKind::gt:
    case OpKind::ge:
    case OpKind::to_f32:
    case OpKind::cache: // a rename node (TensorExpr.cpp)
    case OpKind::dropout:
    case OpKind::scan:
#define SHARDC_VALUE_OP(NAME, ATTRIBUTES) case OpKind::NAME:
#define SHARDC_GRADIENT_OP(NAME, ARITY, ATTRIBUTES) case OpKind::NAME:
#define SHARDC_UPDATE_OP(NAME, ARITY, ATTRIBUTES) case OpKind::NAME:
#include "shardc/Sema/Builtins.def"
      break;
    }
    diags.error(at, "cannot differentiate '" + opName(node.op) + "' yet");
    return false;
  }
};

} // namespace

std::optional<std::vector<unsigned>> shardc::appendGradient(Graph &graph, unsigned loss,
                                                            const std::vector<unsigned> &wrt,
                                                            const std::vector<RematGroup> &remat,
                                                            DiagnosticEngine &diags,
                                                            const std::vector<bool> *within) {
  return GradientBuilder(graph, remat, diags).run(loss, wrt, within);
}
