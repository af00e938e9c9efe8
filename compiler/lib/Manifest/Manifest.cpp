//===- Manifest.cpp - the program description the runtime driver reads ---===//
//
// The compiled program's parameters, optimizer, inputs and the results of
// its steps, in the order of the entry points' buffers, as JSON (format:
// runtime/README.md, keys: shardrt/manifest_keys.h), from the step program:
// shapes, splits over mesh axes (the shardings MLIRGen annotated),
// initialisers, how to fill each input with synthetic numbers and the class
// count of labels. Which data an input reads is the run's to say, not the
// program's (runtime/lib/driver/driver_bindings.h).
//
//===----------------------------------------------------------------------===//

#include "shardc/Manifest/Manifest.h"

#include "shardrt/manifest_keys.h"

#include <nlohmann/json.hpp>

using namespace shardc;
using namespace shardrt::manifest_keys;
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

/// The class count of the one_hot that the i32 input `input` feeds, or the vocabulary
/// of the embedding it indexes; 0 for neither.
int64_t classesOf(const TypedProgram &program, const std::string &input) {
  const Graph &g = program.graph;
  for (const Node &node : g.nodes) {
    if ((node.op != OpKind::one_hot && node.op != OpKind::embedding) ||
        g.nodes[node.operands[0]].op != OpKind::input || g.nodes[node.operands[0]].name != input)
      continue;
    return node.op == OpKind::one_hot ? node.type.dims.back().size
                                      : g.nodes[node.operands[1]].type.dims.front().size;
  }
  return 0;
}

/// How the driver fills the input `v` with synthetic numbers (random numbers of its
/// dtype, labels below their class count), and the class count the labels it reads
/// from a file must respect.
void describeFill(json &input, const TypedProgram &program, const Input &declared,
                  const FunctionValue &v, const TensorType &type) {
  const int64_t classes = type.dtype == DType::I32 ? classesOf(program, v.name) : 0;
  input[kFill] = declared.dropoutUniforms ? json{{kKind, kFillUniform}}
                 : type.dtype == DType::I32
                     ? json{{kKind, kFillIntegers}, {kHigh, classes ? classes : 2}}
                     : json{{kKind, kFillNormal}};
  if (classes)
    input[kClasses] = classes;
}

} // namespace

std::string shardc::buildManifest(const TypedProgram &program, const StepProgram &steps,
                                  bool reference, const MemoryPerRank &memory,
                                  const std::string &plan, const std::string &targetCpu,
                                  const std::vector<std::string> &targetFeatures) {
  const Graph &graph = steps.graph;
  auto describe = [&](const FunctionValue &v) {
    const TensorType &type = graph.nodes[v.node].type;
    return json{{kName, v.name},
                {kDtype, dtypeName(type.dtype).str()},
                {kShape, shapeOf(type.dims)},
                {kSplit, splitOf(v.sharding, program.mesh, type.dims.size(), reference)}};
  };

  json manifest;
  manifest[kModel] = program.modelName;
  json axes = json::array(), sizes = json::array();
  if (!reference)
    for (const auto &[name, size] : program.mesh.axes) {
      axes.push_back(name);
      sizes.push_back(size);
    }
  manifest[kMesh] = {{kAxes, axes}, {kSizes, sizes}};
  if (program.gradientsInBf16 && !reference)
    manifest[kSettings] = {{"reduce_precision", "bf16"}};

  json params = json::array();
  for (const FunctionValue &v : steps.params) {
    const Parameter &p =
        *llvm::find_if(program.params, [&](const Parameter &p) { return p.path == v.name; });
    json param = describe(v);
    if (v.layer >= 0)
      param[kLayer] = v.layer;
    if (v.stacked)
      param[kStacked] = true;
    json initArgs = json::object();
    for (const auto &[key, value] : p.init.args)
      initArgs[key] = value;
    param[kGlobalShape] = shapeOf(p.type.dims);
    param[kInit] = {{kName, p.init.name}, {kArgs, initArgs}};
    params.push_back(param);
  }
  manifest[kParams] = params;

  if (program.optimizer) {
    json args = json::object();
    for (const auto &[key, value] : program.optimizer->hyperparameters)
      args[key] = value;
    manifest[kOptimizer] = {
        {kName, program.optimizer->name().str()},
        {kArgs, args},
        {kState, llvm::to_vector(llvm::map_range(optimizerState(program.optimizer->kind),
                                                 [](llvm::StringRef s) { return s.str(); }))}};
  } else {
    manifest[kOptimizer] = nullptr;
  }

  json inputs = json::array();
  for (const FunctionValue &v : steps.inputs) {
    const Input &t =
        *llvm::find_if(program.inputs, [&](const Input &t) { return t.path == v.name; });
    json input = describe(v);
    if (v.layer >= 0) { // a scanned dropout's numbers for one layer
      input[kLayer] = v.layer;
      input[kGlobalShape] = shapeOf(t.type.dims);
    }
    describeFill(input, program, t, v, graph.nodes[v.node].type);
    inputs.push_back(input);
  }
  manifest[kInputs] = inputs;

  auto results = [&](llvm::ArrayRef<FunctionValue> values) {
    json list = json::array();
    for (const FunctionValue &v : values) {
      json result = describe(v);
      if (v.perExample)
        result[kPerExample] = true;
      list.push_back(result);
    }
    return json{{kResults, list}};
  };
  if (steps.train) // after the updated parameters and state: the loss and metrics
    manifest[kTrain] =
        results(llvm::ArrayRef(steps.train->results)
                    .drop_front(llvm::count_if(steps.train->args, [](const auto &a) {
                      return a.role == ArgRole::parameter || a.role == ArgRole::optimizer_state;
                    })));
  manifest[kEval] = results(steps.eval.results);
  manifest[kGenerate] = program.generate ? json{{kInput, program.generate->input},
                                                {kLogits, program.generate->logits}}
                                         : json(nullptr);
  if (steps.generation) {
    auto described = [&](llvm::ArrayRef<FunctionValue> values) {
      json list = json::array();
      for (const FunctionValue &v : values) {
        json value = describe(v);
        if (v.layer >= 0)
          value[kLayer] = v.layer;
        if (v.role == ArgRole::cache)
          value[kCache] = true;
        list.push_back(value);
      }
      return list;
    };
    for (const auto &[key, fn] : {std::pair(kPrefill, &steps.generation->prefill),
                                  std::pair(kDecode, &steps.generation->decode)})
      manifest[key] = {{kArgs, described(fn->args)}, {kResults, described(fn->results)}};
  }
  manifest[kMemoryPerRank] = {{kParameters, memory.parameters},
                              {kOptimizerState, memory.optimizerState},
                              {kInputs, memory.inputs},
                              {kActivations, memory.activations},
                              {kActivationsAtPeak, memory.activationsAtPeak},
                              {kScratch, memory.scratch()},
                              {kTotal, memory.total()}};
  for (const auto &[role, bytes] : memory.arenas)
    manifest[kMemoryPerRank][role + "_arena"] = bytes;
  manifest[kPlan] = json::parse(plan);
  manifest[kTarget] = {{kCpu, targetCpu}, {kFeatures, targetFeatures}};
  return manifest.dump();
}
