//===- Flatten.cpp - the training and evaluation forwards, flat -----------===//
//
// The gradient and the optimizer work on a graph without nested bodies: each
// layer of a scan is a copy of its body, reading that layer's slice of every
// stacked parameter or dropout input as a node of its own (upstream has no
// sharding model for scf.for or tensor.extract_slice, so the layers are
// unrolled anyway).
//
// The forward is copied twice into the one graph: for training, where each
// `dropout(x, u)` becomes x * ((u >= rate) / (1 - rate)) in elementwise nodes
// (so the gradient, MLIRGen and sharding need nothing new, and the gradient
// is the mask times the cotangent), and for evaluation, where it is x. The
// two share every node that no dropout feeds: without dropout they are one.
//
// A block's loss terms and metrics are collected by path as their graphs are
// copied: a scanned block's once per layer.
//
//===----------------------------------------------------------------------===//

#include "shardc/Train/StepFunctions.h"

#include <set>

using namespace shardc;

namespace {

class Flattener {
public:
  Flattener(const TypedProgram &program, Graph &out, std::vector<RematGroup> &remat,
            std::vector<FlatTerm> &terms, DiagnosticEngine &diags)
      : out(out), remat(remat), terms(terms), diags(diags) {
    for (const Node &node : program.graph.nodes)
      if (node.op == OpKind::scan)
        for (size_t i = 1; i < node.operands.size(); ++i)
          stacked.insert(node.operands[i]);
  }

  /// Copies `graph`; `ids` holds the copies of the body's arguments on entry.
  bool copy(const Graph &graph, std::vector<FlatNode> &ids, bool outer) {
    for (const Node &node : graph.nodes) {
      if (node.op == OpKind::arg)
        continue;
      if (outer && stacked.count(node.id)) {
        for (const Node &user : graph.nodes)
          if (user.op != OpKind::scan && llvm::is_contained(user.operands, node.id)) {
            diags.error(user.loc,
                        "'" + node.name + "' is stacked by a scan and can only be used inside it");
            return false;
          }
        continue;
      }
      if (node.op == OpKind::scan) {
        if (!outer) {
          diags.error(node.loc, "a scan inside a scanned block is not supported yet");
          return false;
        }
        if (!unroll(graph, node, ids))
          return false;
        continue;
      }
      if (node.op == OpKind::dropout) {
        const FlatNode &x = ids[node.operands[0]];
        ids[node.id] = {applyDropout(node, x.train, ids[node.operands[1]].train), x.eval};
        continue;
      }
      ids[node.id] = copyNode(node, ids);
    }
    for (const BlockTerm &term : graph.terms) {
      auto same = llvm::find_if(terms, [&](const FlatTerm &t) { return t.path == term.path; });
      if (same == terms.end())
        same = terms.insert(terms.end(), {term.path, term.isLoss, {}, term.loc});
      same->values.push_back(ids[term.node]);
    }
    return true;
  }

private:
  /// One copy while both forwards feed the node the same operands, two once
  /// a dropout's output reaches it.
  FlatNode copyNode(const Node &node, const std::vector<FlatNode> &ids) {
    Node train = node, eval = node;
    for (size_t i = 0; i < node.operands.size(); ++i) {
      train.operands[i] = ids[node.operands[i]].train;
      eval.operands[i] = ids[node.operands[i]].eval;
    }
    bool shared = train.operands == eval.operands;
    unsigned trainId = out.add(std::move(train));
    return {trainId, shared ? trainId : out.add(std::move(eval))};
  }

  /// Flax's nn.Dropout in training: x * mask with mask = (u >= rate) /
  /// (1 - rate), u the uniform numbers the runtime draws for this dropout.
  unsigned applyDropout(const Node &dropout, unsigned x, unsigned uniforms) {
    double rate = std::get<double>(dropout.attrs.at("rate"));
    const TensorType &type = dropout.type;
    SMRange at = dropout.loc;
    auto scalar = [&](double value) {
      return appendNode(out, OpKind::constant, {}, TensorType{DType::F32, {}}, at,
                        {{"value", value}});
    };
    unsigned kept = appendNode(out, OpKind::ge, {uniforms, scalar(rate)},
                               TensorType{DType::Bool, type.dims}, at);
    unsigned keptAsF32 = appendNode(out, OpKind::to_f32, {kept}, type, at);
    unsigned mask = appendNode(out, OpKind::mul, {keptAsF32, scalar(1 / (1 - rate))}, type, at);
    unsigned y = appendNode(out, OpKind::mul, {x, mask}, type, at);
    out.nodes[y].name = dropout.name;
    return y;
  }

  bool unroll(const Graph &graph, const Node &scan, std::vector<FlatNode> &ids) {
    const Graph &body = *scan.body;
    int64_t length = std::get<int64_t>(scan.attrs.at("length"));
    FlatNode carry = ids[scan.operands[0]];
    auto policy = scan.attrs.find("remat");
    for (int64_t layer = 0; layer < length; ++layer) {
      std::vector<FlatNode> inner(body.nodes.size());
      inner[body.args[0]] = carry;
      for (size_t i = 1; i < scan.operands.size(); ++i) {
        unsigned slice = layerSlice(graph.nodes[scan.operands[i]], layer);
        inner[body.args[i]] = {slice, slice};
      }
      unsigned begin = out.nodes.size();
      if (!copy(body, inner, /*outer=*/false))
        return false;
      for (unsigned id = begin; id < out.nodes.size(); ++id)
        out.nodes[id].layer = layer;
      if (policy != scan.attrs.end() && std::get<std::string>(policy->second) != "everything")
        remat.push_back({std::get<std::string>(policy->second), begin,
                         static_cast<unsigned>(out.nodes.size())});
      carry = inner[body.result];
    }
    ids[scan.id] = carry;
    return true;
  }

  /// The `param` or `input` node of one layer of a stacked tensor.
  unsigned layerSlice(const Node &stack, int64_t layer) {
    Node slice = stack;
    slice.type.dims.erase(slice.type.dims.begin());
    slice.attrs["layer"] = layer;
    return out.add(std::move(slice));
  }

  Graph &out;
  std::vector<RematGroup> &remat;
  std::vector<FlatTerm> &terms;
  DiagnosticEngine &diags;
  std::set<unsigned> stacked;
};

} // namespace

bool shardc::flattenForwards(const TypedProgram &program, Graph &out, std::vector<FlatNode> &newIds,
                             std::vector<RematGroup> &remat, std::vector<FlatTerm> &terms,
                             DiagnosticEngine &diags) {
  newIds.assign(program.graph.nodes.size(), FlatNode());
  return Flattener(program, out, remat, terms, diags).copy(program.graph, newIds, /*outer=*/true);
}
