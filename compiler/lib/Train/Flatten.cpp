//===- Flatten.cpp - scans unrolled into one flat graph -------------------===//
//
// The gradient and the optimizer work on a graph without nested bodies: each
// layer of a scan is a copy of its body, reading that layer's slice of every
// stacked parameter as a `param` node of its own (upstream has no sharding
// model for scf.for or tensor.extract_slice, so the layers are unrolled
// anyway).
//
//===----------------------------------------------------------------------===//

#include "shardc/Train/StepFunctions.h"

#include <set>

using namespace shardc;

namespace {

class Flattener {
public:
  Flattener(const TypedProgram &program, Graph &out, DiagnosticEngine &diags)
      : out(out), diags(diags) {
    for (const Node &node : program.graph.nodes)
      if (node.op == "scan")
        for (size_t i = 1; i < node.operands.size(); ++i)
          stacked.insert(node.operands[i]);
  }

  /// Copies `graph`; `ids` holds the new ids of the body's arguments on entry.
  bool copy(const Graph &graph, std::vector<unsigned> &ids, bool outer) {
    for (const Node &node : graph.nodes) {
      if (node.op == "arg")
        continue;
      if (outer && stacked.count(node.id)) {
        for (const Node &user : graph.nodes)
          if (user.op != "scan" && llvm::is_contained(user.operands, node.id)) {
            diags.error(user.loc, "'" + node.name +
                                      "' is stacked by a scan and can only be used inside it");
            return false;
          }
        continue;
      }
      if (node.op == "scan") {
        if (!outer) {
          diags.error(node.loc, "a scan inside a scanned block is not supported yet");
          return false;
        }
        if (!unroll(graph, node, ids))
          return false;
        continue;
      }
      Node copy = node;
      for (unsigned &operand : copy.operands)
        operand = ids[operand];
      ids[node.id] = out.add(std::move(copy));
    }
    return true;
  }

private:
  bool unroll(const Graph &graph, const Node &scan, std::vector<unsigned> &ids) {
    const Graph &body = *scan.body;
    int64_t length = std::get<int64_t>(scan.attrs.at("length"));
    unsigned carry = ids[scan.operands[0]];
    for (int64_t layer = 0; layer < length; ++layer) {
      std::vector<unsigned> inner(body.nodes.size());
      inner[body.args[0]] = carry;
      for (size_t i = 1; i < scan.operands.size(); ++i)
        inner[body.args[i]] = layerSlice(graph.nodes[scan.operands[i]], layer);
      if (!copy(body, inner, /*outer=*/false))
        return false;
      carry = inner[body.result];
    }
    ids[scan.id] = carry;
    return true;
  }

  /// The `param` node of one layer of a stacked parameter.
  unsigned layerSlice(const Node &stack, int64_t layer) {
    Node slice = stack;
    slice.type.dims.erase(slice.type.dims.begin());
    slice.attrs["layer"] = layer;
    return out.add(std::move(slice));
  }

  Graph &out;
  DiagnosticEngine &diags;
  std::set<unsigned> stacked;
};

} // namespace

bool shardc::flattenScans(const TypedProgram &program, Graph &out, std::vector<unsigned> &newIds,
                          DiagnosticEngine &diags) {
  newIds.assign(program.graph.nodes.size(), 0);
  return Flattener(program, out, diags).copy(program.graph, newIds, /*outer=*/true);
}
