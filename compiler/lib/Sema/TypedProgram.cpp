//===- TypedProgram.cpp ---------------------------------------------------===//

#include "shardc/Sema/TypedProgram.h"
#include "shardc/AST/RulesAST.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace shardc;

int64_t TensorType::numElements() const {
  int64_t n = 1;
  for (const Dim &d : dims) {
    std::optional<int64_t> product = llvm::checkedMul(n, d.size);
    if (!product)
      return INT64_MAX;
    n = *product;
  }
  return n;
}

std::string TensorType::str() const {
  std::string out = dtypeName(dtype).str() + "[";
  for (size_t i = 0; i < dims.size(); ++i)
    out += (i ? ", " : "") + dims[i].axis + "=" + std::to_string(dims[i].size);
  return out + "]";
}

std::string Sharding::str() const {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    out += (i ? ", " : "") + formatMeshAxes(dims[i].meshAxes);
  return out + "]";
}

std::vector<int> shardc::decideDims(
    const std::vector<Dim> &dims, const std::vector<AxisRule> &rules,
    llvm::function_ref<bool(size_t rule, size_t dim)> admits,
    llvm::function_ref<void(size_t rule, size_t dim, const std::string &taken)> skipped) {
  std::map<std::string, size_t> takenBy; // mesh axis -> the dimension that has it
  std::vector<int> decided(dims.size(), -1);
  for (size_t r = 0; r < rules.size(); ++r) {
    const AxisRule &rule = rules[r];
    auto dim = llvm::find_if(dims, [&](const Dim &d) { return d.axis == rule.logicalAxis; });
    if (dim == dims.end())
      continue;
    size_t i = dim - dims.begin();
    if (decided[i] >= 0 || (admits && !admits(r, i)))
      continue;
    std::string taken;
    for (const std::string &axis : rule.meshAxes)
      if (auto it = takenBy.find(axis); it != takenBy.end())
        taken += (taken.empty() ? "" : ", ") + axis + " taken by " + dims[it->second].axis;
    if (!taken.empty()) {
      if (skipped)
        skipped(r, i, taken);
      continue;
    }
    decided[i] = int(r);
    for (const std::string &axis : rule.meshAxes)
      takenBy.emplace(axis, i);
  }
  return decided;
}

Sharding Pipeline::shardingOf(const TensorType &type, const Mesh &mesh) const {
  std::vector<int> decided = decideDims(type.dims, axisRules, [&](size_t r, size_t i) {
    int64_t parts = 1;
    for (const std::string &axis : axisRules[r].meshAxes)
      parts *= mesh.size(axis);
    return type.dims[i].size % parts == 0;
  });
  Sharding sharding;
  sharding.dims.resize(type.dims.size());
  for (auto [d, rule] : llvm::zip_equal(sharding.dims, decided))
    if (rule >= 0)
      d.meshAxes = axisRules[rule].meshAxes;
  return sharding;
}

unsigned Graph::add(Node node) {
  assert((!opArity(node.op) || node.operands.size() == *opArity(node.op)) &&
         llvm::all_of(opAttributes(node.op),
                      [&](llvm::StringRef a) { return node.attrs.count(a.str()); }) &&
         "a node of an internal op or operator has its operands and attributes");
  node.id = nodes.size();
  nodes.push_back(std::move(node));
  return nodes.back().id;
}

std::string Initializer::str() const {
  if (args.empty())
    return name;
  std::string out = name + "(";
  for (size_t i = 0; i < args.size(); ++i) {
    std::string value;
    llvm::raw_string_ostream(value) << llvm::format("%g", args[i].second);
    out += (i ? ", " : "") + args[i].first + " = " + value;
  }
  return out + ")";
}

std::vector<int64_t> ShardedTensor::localShape(const Mesh &mesh) const {
  std::vector<int64_t> shape;
  for (size_t i = 0; i < type.dims.size(); ++i) {
    int64_t parts = 1;
    if (i < sharding.dims.size())
      for (const auto &axis : sharding.dims[i].meshAxes)
        parts *= mesh.size(axis);
    shape.push_back(type.dims[i].size / parts);
  }
  return shape;
}

int64_t ShardedTensor::localBytes(const Mesh &mesh) const {
  int64_t n = type.elementBytes();
  for (int64_t s : localShape(mesh))
    n *= s;
  return n;
}

const Input *shardc::batchInput(const TypedProgram &program) {
  auto input = llvm::find_if(program.inputs, [](const Input &t) { return !t.type.dims.empty(); });
  return input == program.inputs.end() ? nullptr : &*input;
}

std::vector<const BlockTerm *> shardc::blockTerms(const TypedProgram &program) {
  std::vector<const BlockTerm *> terms;
  for (const BlockTerm &term : program.graph.terms)
    terms.push_back(&term);
  for (const Node &node : program.graph.nodes)
    if (node.body)
      for (const BlockTerm &term : node.body->terms)
        terms.push_back(&term);
  return terms;
}

void shardc::collectOutputs(TypedProgram &program) {
  auto add = [&](const std::string &name, unsigned id) {
    const Node &node = program.graph.nodes[id];
    Output output;
    output.path = name;
    output.type = node.type;
    output.loc = node.loc;
    output.node = id;
    program.outputs.push_back(output);
  };
  add("loss", program.loss);
  for (const auto &[name, id] : program.metrics)
    add(name, id);
  // Named values of the model itself (block-internal ones have dotted paths);
  // numbers only, the runtime reports no booleans.
  for (const Node &node : program.graph.nodes)
    if (!node.name.empty() && node.name.find('.') == std::string::npos &&
        node.op != OpKind::input && node.op != OpKind::param && node.op != OpKind::constant &&
        node.type.dtype != DType::Bool &&
        llvm::none_of(program.outputs, [&](const Output &o) { return o.node == node.id; }))
      add(node.name, node.id);
}
