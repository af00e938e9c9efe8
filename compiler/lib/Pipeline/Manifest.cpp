//===- Manifest.cpp - the program description the runtime driver reads ---===//
//
// The compiled program's arguments and results in the order of the entry
// point's buffers, as JSON (format: runtime/README.md). Argument order comes
// from the forward function's `shardc.name` / `shardc.layer` attributes, the
// rest from the typed program: shapes, splits over mesh axes (the shardings
// MLIRGen annotated), initialisers, and how to fill each input.
//
//===----------------------------------------------------------------------===//

#include "shardc/MLIRGen/MLIRGen.h"
#include "shardc/Pipeline/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <nlohmann/json.hpp>

using namespace mlir;
using namespace shardc;
using json = nlohmann::json;

namespace {

json shapeOf(const std::vector<Dim> &dims) {
  json shape = json::array();
  for (const Dim &d : dims)
    shape.push_back(d.size);
  return shape;
}

/// Mesh axis indices per dimension; all empty for the reference build.
json splitOf(const Sharding &sharding, const Mesh &mesh, size_t rank, bool reference) {
  json split = json::array();
  for (size_t d = 0; d < rank; ++d) {
    json axes = json::array();
    if (!reference && d < sharding.dims.size())
      for (const std::string &axis : sharding.dims[d].meshAxes)
        axes.push_back(mesh.indexOf(axis));
    split.push_back(axes);
  }
  return split;
}

/// Labels for an i32 input: below the class count of the one_hot it feeds.
int64_t integerRange(const TypedProgram &program, const std::string &input) {
  const Graph &g = program.graph;
  for (const Node &node : g.nodes)
    if (node.op == "one_hot" && g.nodes[node.operands[0]].op == "input" &&
        g.nodes[node.operands[0]].name == input)
      return node.type.dims.back().size;
  return 2;
}

} // namespace

std::string shardc::buildManifest(ModuleOp module, const TypedProgram &program, bool reference) {
  json manifest;
  manifest["model"] = program.modelName;
  manifest["mode"] = "forward";
  json axes = json::array(), sizes = json::array();
  if (!reference)
    for (const auto &[name, size] : program.mesh.axes) {
      axes.push_back(name);
      sizes.push_back(size);
    }
  manifest["mesh"] = {{"axes", axes}, {"sizes", sizes}};

  auto fn = module.lookupSymbol<func::FuncOp>(kForwardFunction);
  json args = json::array();
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    std::string name = fn.getArgAttrOfType<StringAttr>(i, kNameAttr).str();
    auto layer = fn.getArgAttrOfType<IntegerAttr>(i, kLayerAttr);
    json arg;
    arg["name"] = name;
    if (auto p = llvm::find_if(program.params, [&](const Parameter &p) { return p.path == name; });
        p != program.params.end()) {
      std::vector<Dim> dims = p->type.dims;
      Sharding sharding = p->sharding;
      if (layer) {
        arg["layer"] = layer.getInt();
        dims.erase(dims.begin());
        if (!sharding.dims.empty())
          sharding.dims.erase(sharding.dims.begin());
      }
      json initArgs = json::object();
      for (const auto &[key, value] : p->init.args)
        initArgs[key] = value;
      arg.update({{"role", "param"},
                  {"dtype", dtypeName(p->type.dtype).str()},
                  {"global_shape", shapeOf(p->type.dims)},
                  {"shape", shapeOf(dims)},
                  {"split", splitOf(sharding, program.mesh, dims.size(), reference)},
                  {"init", {{"name", p->init.name}, {"args", initArgs}}}});
    } else {
      const ShardedTensor &t = *llvm::find_if(
          program.inputs, [&](const ShardedTensor &t) { return t.path == name; });
      json fill = t.type.dtype == DType::I32
                      ? json{{"kind", "integers"}, {"high", integerRange(program, name)}}
                      : json{{"kind", "normal"}};
      arg.update({{"role", "input"},
                  {"dtype", dtypeName(t.type.dtype).str()},
                  {"shape", shapeOf(t.type.dims)},
                  {"split", splitOf(t.sharding, program.mesh, t.type.dims.size(), reference)},
                  {"fill", fill}});
    }
    args.push_back(arg);
  }
  manifest["args"] = args;

  json results = json::array();
  for (const Output &o : program.outputs)
    results.push_back({{"name", o.path},
                       {"dtype", dtypeName(o.type.dtype).str()},
                       {"shape", shapeOf(o.type.dims)},
                       {"split", splitOf(o.sharding, program.mesh, o.type.dims.size(), reference)}});
  manifest["results"] = results;
  return manifest.dump();
}
