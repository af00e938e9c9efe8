//===- Candidates.cpp - the layouts a layout search tries ------------------===//

#include "shardc/Tune/Candidates.h"

#include "llvm/ADT/STLExtras.h"

#include <map>
#include <set>

using namespace shardc;

namespace {

/// The parameters that each node of a graph reads (a `param` node, or in a scan
/// body the argument a stacked parameter's slice arrives by), and what the
/// contractions make of them.
class AxisRoles {
public:
  explicit AxisRoles(const TypedProgram &program) { visit(program.graph, {}); }

  std::set<std::string> made, contracted, carry;

private:
  using Params = std::map<unsigned, const TensorType *>;

  void visit(const Graph &graph, Params params) {
    for (const Node &node : graph.nodes) {
      if (node.op == OpKind::param)
        params[node.id] = &node.type;
      if (node.op == OpKind::scan && node.body) {
        Params inner;
        for (size_t i = 1; i < node.operands.size() && i < node.body->args.size(); ++i)
          if (auto found = params.find(node.operands[i]); found != params.end())
            inner[node.body->args[i]] = found->second;
        for (const Dim &dim : node.type.dims)
          carry.insert(dim.axis);
        visit(*node.body, inner);
      }
      if (node.op != OpKind::matmul && node.op != OpKind::contract &&
          node.op != OpKind::embedding && node.op != OpKind::conv2d)
        continue;
      for (unsigned operand : node.operands) {
        auto param = params.find(operand);
        if (param == params.end())
          continue;
        for (const Dim &dim : param->second->dims)
          if (dim.axis != kLayerAxis)
            (node.type.axisIndex(dim.axis) >= 0 ? made : contracted).insert(dim.axis);
      }
    }
  }
};

Mesh meshOf(int64_t data, int64_t model) {
  Mesh mesh;
  if (data > 1 || model == 1)
    mesh.axes.push_back({"data", data});
  if (model > 1)
    mesh.axes.push_back({"model", model});
  return mesh;
}

std::string joined(llvm::ArrayRef<std::string> axes) {
  std::string text;
  for (const std::string &axis : axes)
    text += (text.empty() ? "" : ", ") + axis;
  return text;
}

} // namespace

ModelAxes shardc::analyzeAxes(const TypedProgram &program) {
  ModelAxes axes;
  if (const Input *input = batchInput(program))
    axes.batch = input->type.dims[0].axis;
  std::map<std::string, int64_t> bytes;
  for (const Parameter &param : program.params)
    for (const Dim &dim : param.type.dims)
      if (dim.axis != kLayerAxis && dim.axis != axes.batch)
        bytes[dim.axis] = addSaturating(bytes[dim.axis], param.localBytes(Mesh()));
  for (const auto &entry : bytes)
    axes.parameterAxes.push_back(entry.first);
  // Most bytes first; ties in the order of the first parameter that has them.
  auto firstUse = [&](const std::string &axis) {
    for (size_t p = 0; p < program.params.size(); ++p)
      if (program.params[p].type.axisIndex(axis) >= 0)
        return p * 64 + size_t(program.params[p].type.axisIndex(axis));
    return size_t(-1);
  };
  llvm::stable_sort(axes.parameterAxes, [&](const std::string &a, const std::string &b) {
    return bytes[a] != bytes[b] ? bytes[a] > bytes[b] : firstUse(a) < firstUse(b);
  });
  AxisRoles roles(program);
  for (const std::string &axis : axes.parameterAxes)
    if (roles.made.count(axis) && roles.contracted.count(axis))
      axes.pairs.push_back(axis);
  axes.carry.assign(roles.carry.begin(), roles.carry.end());
  // The sequence: the batch input's second axis, if the blocks carry it and no
  // contraction with a parameter makes or takes it (the MLP's features are not one).
  if (const Input *input = batchInput(program))
    if (input->type.dims.size() > 1) {
      const std::string &axis = input->type.dims[1].axis;
      if (roles.carry.count(axis) && !roles.made.count(axis) && !roles.contracted.count(axis))
        axes.sequence = axis;
    }
  if (!axes.parameterAxes.empty())
    axes.fsdp = axes.parameterAxes.front();
  return axes;
}

std::string Candidate::rulesText(llvm::ArrayRef<std::string> comment) const {
  std::string text;
  for (const std::string &line : comment)
    text += "// " + line + "\n";
  text += "mesh " + mesh.str() + "\nrules {\n";
  size_t width = 0;
  for (const auto &rule : rules)
    width = std::max(width, rule.first.size());
  for (const auto &[logical, meshAxis] : rules)
    text += "  " + logical + std::string(width - logical.size(), ' ') + " -> " + meshAxis + "\n";
  text += "}\n";
  for (const std::string &line : precisionLines())
    text += line + "\n";
  return text;
}

std::vector<std::string> Candidate::precisionLines() const {
  std::vector<std::string> lines;
  for (const auto &[what, type] : precisions)
    lines.push_back("precision " + what + " : " + type);
  return lines;
}

std::string Candidate::label() const {
  const int64_t model = mesh.size("model"); // 1 without one
  return name + " " + std::to_string(mesh.numRanks() / model) + "x" + std::to_string(model);
}

std::vector<Candidate> shardc::layoutCandidates(const ModelAxes &axes, int64_t ranks) {
  std::vector<Candidate> candidates;
  std::set<std::string> seen;
  auto add = [&](std::string name, int64_t data, int64_t model, std::vector<std::string> overData,
                 std::vector<std::string> overModel) {
    Candidate candidate;
    candidate.name = std::move(name);
    candidate.mesh = meshOf(data, model);
    std::vector<std::string> parts;
    if (data > 1 && !axes.batch.empty())
      overData.insert(overData.begin(), axes.batch);
    for (const std::string &axis : overData)
      candidate.rules.push_back({axis, "data"});
    for (const std::string &axis : overModel)
      candidate.rules.push_back({axis, "model"});
    if (candidate.rules.empty())
      return;
    if (!overData.empty())
      parts.push_back(joined(overData) + " over data");
    if (!overModel.empty())
      parts.push_back(joined(overModel) + " over model");
    candidate.summary = joined(parts);
    if (seen.insert(candidate.rulesText()).second)
      candidates.push_back(std::move(candidate));
  };
  // Megatron's axes: the pairs, the residual stream (a scan's carry) left whole.
  std::vector<std::string> megatron;
  for (const std::string &axis : axes.pairs)
    if (!llvm::is_contained(axes.carry, axis))
      megatron.push_back(axis);
  const bool sequenceParallel =
      !axes.sequence.empty() && !megatron.empty() && llvm::is_contained(axes.carry, axes.sequence);
  for (int64_t model = 1; model <= ranks; ++model) {
    if (ranks % model)
      continue;
    const int64_t data = ranks / model;
    if (model == 1) {
      add("dp", data, 1, {}, {});
      if (!axes.fsdp.empty())
        add("fsdp", data, 1, {axes.fsdp}, {});
      continue;
    }
    for (const std::string &axis : axes.parameterAxes)
      add("tp(" + axis + ")", data, model, {}, {axis});
    if (megatron.size() > 1)
      add("megatron", data, model, {}, megatron);
    if (sequenceParallel) {
      std::vector<std::string> withSequence = megatron;
      withSequence.push_back(axes.sequence);
      add(megatron.size() > 1 ? "megatron+sp" : "tp(" + megatron[0] + ")+sp", data, model, {},
          withSequence);
    }
    if (data > 1 && !megatron.empty() && !axes.fsdp.empty() &&
        !llvm::is_contained(megatron, axes.fsdp))
      add(megatron.size() > 1 ? "fsdp+megatron" : "fsdp+tp(" + megatron[0] + ")", data, model,
          {axes.fsdp}, megatron);
  }
  return candidates;
}
