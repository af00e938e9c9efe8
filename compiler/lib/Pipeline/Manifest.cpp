//===- Manifest.cpp - the program description the runtime driver reads ---===//
//
// The compiled program's parameters, optimizer, inputs and the results of
// its steps, in the order of the entry points' buffers, as JSON (format:
// runtime/README.md), from the step program: shapes, splits over mesh axes
// (the shardings MLIRGen annotated), initialisers, how to fill each input
// and which dataset field feeds it.
//
//===----------------------------------------------------------------------===//

#include "shardc/MLIRGen/MLIRGen.h"
#include "shardc/Pipeline/Pipeline.h"

#include <nlohmann/json.hpp>

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
    if (node.op == OpKind::one_hot && g.nodes[node.operands[0]].op == OpKind::input &&
        g.nodes[node.operands[0]].name == input)
      return node.type.dims.back().size;
  return 2;
}

} // namespace

std::string shardc::buildManifest(const TypedProgram &program, const StepProgram &steps,
                                  bool reference, const MemoryPerRank &memory) {
  const Graph &graph = steps.graph;
  auto describe = [&](const FunctionValue &v) {
    const TensorType &type = graph.nodes[v.node].type;
    return json{{"name", v.name},
                {"dtype", dtypeName(type.dtype).str()},
                {"shape", shapeOf(type.dims)},
                {"split", splitOf(v.sharding, program.mesh, type.dims.size(), reference)}};
  };

  json manifest;
  manifest["model"] = program.modelName;
  json axes = json::array(), sizes = json::array();
  if (!reference)
    for (const auto &[name, size] : program.mesh.axes) {
      axes.push_back(name);
      sizes.push_back(size);
    }
  manifest["mesh"] = {{"axes", axes}, {"sizes", sizes}};

  json params = json::array();
  for (const FunctionValue &v : steps.params) {
    const Parameter &p = *llvm::find_if(program.params,
                                        [&](const Parameter &p) { return p.path == v.name; });
    json param = describe(v);
    if (v.layer >= 0)
      param["layer"] = v.layer;
    json initArgs = json::object();
    for (const auto &[key, value] : p.init.args)
      initArgs[key] = value;
    param["global_shape"] = shapeOf(p.type.dims);
    param["init"] = {{"name", p.init.name}, {"args", initArgs}};
    params.push_back(param);
  }
  manifest["params"] = params;

  if (program.optimizer) {
    json args = json::object();
    for (const auto &[key, value] : program.optimizer->hyperparameters)
      args[key] = value;
    manifest["optimizer"] = {
        {"name", program.optimizer->name().str()}, {"args", args}, {"state", steps.stateNames}};
  } else {
    manifest["optimizer"] = nullptr;
  }

  json inputs = json::array();
  for (const FunctionValue &v : llvm::drop_begin(steps.eval.args, steps.params.size())) {
    const Input &t =
        *llvm::find_if(program.inputs, [&](const Input &t) { return t.path == v.name; });
    json input = describe(v);
    if (v.layer >= 0) { // a scanned dropout's numbers for one layer
      input["layer"] = v.layer;
      input["global_shape"] = shapeOf(t.type.dims);
    }
    bool isInt = graph.nodes[v.node].type.dtype == DType::I32;
    input["fill"] = t.dropoutUniforms ? json{{"kind", "uniform"}}
                    : isInt ? json{{"kind", "integers"}, {"high", integerRange(program, v.name)}}
                            : json{{"kind", "normal"}};
    if (std::string field = datasetField(v.name, graph.nodes[v.node].type); !field.empty())
      input["data"] = field;
    inputs.push_back(input);
  }
  manifest["inputs"] = inputs;

  auto results = [&](llvm::ArrayRef<FunctionValue> values) {
    json list = json::array();
    for (const FunctionValue &v : values) {
      json result = describe(v);
      if (v.perExample)
        result["per_example"] = true;
      list.push_back(result);
    }
    return json{{"results", list}};
  };
  if (steps.train)
    manifest["train"] = results(llvm::ArrayRef(steps.train->results)
                                    .drop_front(steps.params.size() *
                                                (1 + steps.stateNames.size())));
  manifest["eval"] = results(steps.eval.results);
  manifest["memory_per_rank"] = {{"parameters", memory.parameters},
                                 {"optimizer_state", memory.optimizerState},
                                 {"inputs", memory.inputs},
                                 {"activations", memory.activations},
                                 {"total", memory.total()}};
  return manifest.dump();
}
