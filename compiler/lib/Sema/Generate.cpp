//===- Generate.cpp - the model's `generate INPUT ~ LOGITS` ----------------===//
//
// --generate fills an i32 input one position at a time along its last axis
// (the others are the samples), each position drawn from the model's value
// at the position before: [samples..., positions, vocabulary]. The value is
// computed by the eval step, so it must depend on no other input: generation
// has none to give it.
//
//===----------------------------------------------------------------------===//

#include "ElaborateImpl.h"

using namespace shardc;
using namespace shardc::sema;

namespace {

/// The inputs `node` is computed from (a scan's body reads its operands only).
std::set<std::string> inputsBehind(const Graph &graph, unsigned node) {
  std::set<std::string> inputs;
  std::vector<bool> seen(graph.nodes.size());
  std::vector<unsigned> work{node};
  while (!work.empty()) {
    const Node &n = graph.nodes[work.back()];
    work.pop_back();
    if (seen[n.id])
      continue;
    seen[n.id] = true;
    if (n.op == OpKind::input)
      inputs.insert(n.name);
    llvm::append_range(work, n.operands);
  }
  return inputs;
}

} // namespace

void Elaborator::elaborateGenerate(const ModelAST &model, const Scope &scope) {
  for (size_t i = 1; i < model.generates.size(); ++i) {
    diags.error(model.generates[i].range, "duplicate definition of `generate`");
    diags.note(model.generates[0].range, "first `generate` here");
  }
  if (model.generates.empty())
    return;
  const GenerateAST &gen = model.generates.front();
  auto tensorNamed = [&](const std::string &name) -> const Node * {
    auto it = scope.names.find(name);
    if (it == scope.names.end() || it->second.kind != Value::Tensor)
      return nullptr;
    return &program.graph.nodes[it->second.node];
  };

  const Node *input = tensorNamed(gen.input);
  if (!input || input->op != OpKind::input) {
    diags.error(gen.inputRange, "`generate` fills an input of model '" + model.name + "'; '" +
                                    gen.input + "' is not one");
    return;
  }
  if (input->type.dtype != DType::I32 || input->type.dims.empty()) {
    diags.error(gen.inputRange,
                "`generate` fills token ids along the last axis of an i32 input; '" + gen.input +
                    "' is " + input->type.str());
    return;
  }

  const Node *logits = tensorNamed(gen.logits);
  if (!logits || logits->op == OpKind::input || logits->op == OpKind::param) {
    diags.error(gen.logitsRange, "`generate` draws from a value of model '" + model.name +
                                     "' (a `let`); '" + gen.logits + "' is not one");
    return;
  }
  const std::vector<Dim> &positions = input->type.dims;
  const TensorType &scores = logits->type;
  if (scores.dtype != DType::F32 || scores.dims.size() != positions.size() + 1 ||
      !std::equal(positions.begin(), positions.end(), scores.dims.begin())) {
    std::string axes;
    for (const Dim &d : positions)
      axes += d.axis + ", ";
    diags.error(gen.logitsRange, "`generate` draws each position of '" + gen.input + "' from '" +
                                     gen.logits + "', which must be f32[" + axes +
                                     "vocab] (the input's axes, then the scores of each token); "
                                     "it is " +
                                     scores.str());
    return;
  }

  for (const std::string &other : inputsBehind(program.graph, logits->id)) {
    auto declared = llvm::find_if(program.inputs, [&](const Input &t) { return t.path == other; });
    if (other == gen.input || (declared != program.inputs.end() && declared->dropoutUniforms))
      continue;
    diags.error(gen.logitsRange, "'" + gen.logits + "' depends on input '" + other +
                                     "', which generation does not have: it fills '" + gen.input +
                                     "' alone");
    return;
  }
  program.generate = Generate{gen.input, gen.logits, gen.range};
}
