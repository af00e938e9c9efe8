//===- DecodeStep.cpp - --generate's prefill and decode steps (KV cache) --===//
//
// decode_step computes the logits of one new position of every sample from the
// evaluation forward of the flat graph, narrowed to that position: the generated
// axis (the last of the `generate` input) and every axis renamed from it have
// size 1. What a position reads of the positions before it comes from the caches:
// each `cache(x, over, into)` (a rename in the other steps) becomes
//
//   new cache = cache * (1 - m) + x * m        m = one_hot(position) along `into`
//
// the whole context along `into`, this position's row written; a causal mask
// between the position's axis and `into` keeps the keys up to the position
// (causal_mask with the position as its offset), and a parameter along the
// generated axis (learned positions) is read at the position (an embedding
// lookup). prefill_step is the evaluation forward over the whole context that also
// returns each cache's value: the prompt's keys and values in one call.
//
// The caches are sharded by the rules (heads -> model splits them with the heads,
// batch -> data the samples). Anything else that mixes positions (a reduction or a
// softmax over them, a reshape of them) has no decode step: --generate then
// recomputes the prefix.
//
//===----------------------------------------------------------------------===//

#include "StepFunctionsImpl.h"

using namespace shardc;

namespace {

/// The flat evaluation graph narrowed to one position (DecodeStep.cpp's header).
class Narrower {
public:
  Narrower(Graph &graph, const TypedProgram &program, const std::string &axis)
      : graph(graph), program(program), axis(axis), positional{axis} {}

  /// Why `node` has no one-position form, or "" after mapping it.
  std::string map(const Node &node);

  Graph &graph;
  const TypedProgram &program;
  const std::string axis;
  /// The generated axis and the axes renamed from it (not through `cache`).
  std::set<std::string> positional;
  std::map<unsigned, unsigned> narrowed; // flat node -> its one-position node
  unsigned tokens = 0, position = 0;     // the decode step's own inputs
  struct Cache {
    unsigned value, argument, updated; // the flat graph's, the step's argument and result
  };
  std::vector<Cache> caches;
  /// A cache's name: the path of the `let` it is (its constraint's).
  std::map<unsigned, std::string> names;

private:
  TensorType narrow(TensorType type) const {
    for (Dim &d : type.dims)
      if (positional.count(d.axis))
        d.size = 1;
    return type;
  }
  bool hasPositional(const TensorType &type) const {
    return llvm::any_of(type.dims, [&](const Dim &d) { return positional.count(d.axis) != 0; });
  }
  unsigned operandOf(unsigned id) const {
    auto found = narrowed.find(id);
    return found == narrowed.end() ? id : found->second;
  }
  unsigned add(OpKind op, std::vector<unsigned> operands, TensorType type, const Node &like,
               std::map<std::string, Attribute> attrs = {}) {
    unsigned id = appendNode(graph, op, std::move(operands), type, like.loc, std::move(attrs));
    graph.nodes[id].layer = like.layer;
    graph.nodes[id].stage = like.stage;
    return id;
  }
  /// Each sample's position along `to` (a positional axis).
  unsigned positionAlong(const std::string &to, const Node &like) {
    if (to == axis)
      return position;
    TensorType type = graph.nodes[position].type;
    type.dims.back().axis = to;
    return add(OpKind::rename, {position}, type, like, {{"from", axis}, {"to", to}});
  }
  std::string mapCache(const Node &node);
};

std::string Narrower::map(const Node &node) {
  if (node.op == OpKind::param || node.op == OpKind::constant) {
    if (!hasPositional(node.type))
      return "";
    if (node.op == OpKind::constant || node.type.dims.front().axis != axis ||
        llvm::count_if(node.type.dims, [&](const Dim &d) { return positional.count(d.axis); }) != 1)
      return "'" + node.name + "' " + node.type.str() + " is read whole along '" + axis + "'";
    // A table along the positions (learned positions): its row at each sample's position.
    TensorType row = graph.nodes[position].type;
    row.dtype = node.type.dtype;
    llvm::append_range(row.dims, llvm::drop_begin(node.type.dims));
    narrowed[node.id] = add(OpKind::embedding, {position, node.id}, row, node);
    return "";
  }
  if (node.op == OpKind::input) {
    if (node.name != program.generate->input || node.attrs.count("layer"))
      return "the logits read the input '" + node.name + "'";
    narrowed[node.id] = tokens;
    return "";
  }
  if (node.op == OpKind::rename && node.attrs.count(kCacheAttr))
    return mapCache(node);
  if (node.op == OpKind::rename) {
    if (positional.count(std::get<std::string>(node.attrs.at("from"))))
      positional.insert(std::get<std::string>(node.attrs.at("to")));
  } else if (node.op == OpKind::causal_mask) {
    const auto &query = std::get<std::string>(node.attrs.at("query"));
    const auto &key = std::get<std::string>(node.attrs.at("key"));
    if (!positional.count(query) || positional.count(key))
      return "causal_mask(query = " + query + ", key = " + key +
             ") does not mask a cache's axis by the position";
    narrowed[node.id] =
        add(OpKind::causal_mask, {operandOf(node.operands[0]), positionAlong(query, node)},
            narrow(node.type), node, node.attrs);
    return "";
  } else {
    for (const std::string &p : positional)
      if (StepProgramBuilder::mixesExamples(graph, node, p))
        return opName(node.op).str() + " mixes the positions along '" + p + "'";
  }
  const bool sized = node.op == OpKind::reshape || node.op == OpKind::flatten ||
                     node.op == OpKind::conv2d || node.op == OpKind::avg_pool ||
                     node.op == OpKind::top_k || node.op == OpKind::top_k_indices;
  if (sized && hasPositional(node.type))
    return opName(node.op).str() + " of the positions";
  std::vector<unsigned> operands;
  for (unsigned operand : node.operands)
    operands.push_back(operandOf(operand));
  TensorType type = narrow(node.type);
  if (operands == node.operands && type == node.type)
    return "";
  if (node.op == OpKind::sharding_constraint &&
      llvm::any_of(llvm::enumerate(node.type.dims), [&](auto d) {
        const Sharding &s = program.constraints[node.constraint].sharding;
        return positional.count(d.value().axis) && d.index() < s.dims.size() &&
               !s.dims[d.index()].meshAxes.empty();
      })) {
    narrowed[node.id] = operands.front(); // one position is not split
    return "";
  }
  unsigned id = add(node.op, operands, type, node, node.attrs);
  graph.nodes[id].constraint = node.constraint;
  graph.nodes[id].name = node.name;
  narrowed[node.id] = id;
  return "";
}

std::string Narrower::mapCache(const Node &node) {
  const auto &over = std::get<std::string>(node.attrs.at("from"));
  const auto &into = std::get<std::string>(node.attrs.at("to"));
  if (!positional.count(over))
    return "cache(over = " + over + ") is not over the generated axis '" + axis +
           "' or one renamed from it";
  const unsigned x = operandOf(node.operands[0]);
  const int64_t length = node.type.dims[node.type.axisIndex(into)].size;
  const unsigned cache = add(OpKind::input, {}, node.type, node);
  auto named = names.find(node.id);
  graph.nodes[cache].name =
      "cache/" + (named != names.end() ? named->second : std::to_string(caches.size()));

  // m: [samples..., into], 1 at each sample's position; x without its axis of size 1.
  // Elementwise, by axis name: the cache's other axes broadcast.
  auto without = [](TensorType type, const std::string &axis) {
    type.dims.erase(type.dims.begin() + type.axisIndex(axis));
    return type;
  };
  TensorType oneHotType = graph.nodes[position].type;
  oneHotType.dtype = DType::F32;
  oneHotType.dims.push_back(Dim{into, length});
  const unsigned m = add(OpKind::reshape, {add(OpKind::one_hot, {position}, oneHotType, node)},
                         without(oneHotType, axis), node);
  const unsigned row = add(OpKind::reshape, {x}, without(graph.nodes[x].type, over), node);
  const unsigned one =
      add(OpKind::constant, {}, TensorType{DType::F32, {}}, node, {{"value", 1.0}});
  const unsigned keep = add(OpKind::sub, {one, m}, graph.nodes[m].type, node);
  const unsigned kept = add(OpKind::mul, {cache, keep}, node.type, node);
  const unsigned written = add(OpKind::mul, {row, m}, node.type, node);
  const unsigned updated = add(OpKind::add, {kept, written}, node.type, node);
  caches.push_back({node.id, cache, updated});
  narrowed[node.id] = updated;
  return "";
}

} // namespace

void StepProgramBuilder::buildDecode(const Forward &forward) {
  if (!program.generate || !program.pipeline.axis.empty())
    return;
  const Generate &generate = *program.generate;
  const Input &tokensInput =
      *llvm::find_if(program.inputs, [&](const Input &t) { return t.path == generate.input; });
  const Output &logitsOutput =
      *llvm::find_if(program.outputs, [&](const Output &o) { return o.path == generate.logits; });
  const unsigned logits = forward.ids[logitsOutput.node].eval;

  std::vector<bool> needed(logits + 1, false);
  needed[logits] = true;
  bool cached = false;
  for (unsigned id = logits + 1; id-- > 0;)
    if (needed[id]) {
      const Node &node = sp.graph.nodes[id];
      cached |= node.op == OpKind::rename && node.attrs.count(kCacheAttr);
      for (unsigned operand : node.operands)
        needed[operand] = true;
    }
  if (!cached)
    return;

  Narrower narrower(sp.graph, program, tokensInput.type.dims.back().axis);
  for (unsigned id = 0; id <= logits; ++id) {
    const Node &node = sp.graph.nodes[id];
    if (node.op == OpKind::sharding_constraint && !node.name.empty())
      narrower.names.emplace(node.operands.front(), node.name);
  }
  // The tokens at the position and each sample's position: the input's type with
  // the generated axis of size 1, sharded as it without that axis.
  auto oneColumn = [&](const std::string &name, unsigned &node) {
    TensorType type = tokensInput.type;
    type.dims.back().size = 1;
    node = addNode(OpKind::input, name, type, generate.loc);
    FunctionValue v;
    v.name = name;
    v.node = node;
    v.loc = generate.loc;
    v.sharding = tokensInput.sharding;
    if (!v.sharding.dims.empty())
      v.sharding.dims.back() = DimSharding{};
    return v;
  };
  StepFunction decode;
  decode.name = "decode_step";
  decode.args = forward.params;
  decode.args.push_back(oneColumn(generate.input, narrower.tokens));
  decode.args.push_back(oneColumn("position", narrower.position));
  for (unsigned id = 0; id <= logits; ++id) {
    if (!needed[id])
      continue;
    const Node &node = sp.graph.nodes[id];
    std::string why = narrower.map(node);
    if (!why.empty()) {
      diags.warning(node.loc, "no KV-cache decode step for --generate: " + why +
                                  ", so each new token recomputes the whole prefix");
      return;
    }
  }
  for (const Narrower::Cache &c : narrower.caches) {
    const Node &cache = sp.graph.nodes[c.argument];
    FunctionValue v;
    v.name = cache.name;
    v.node = c.argument;
    v.layer = cache.layer;
    v.loc = cache.loc;
    v.sharding = program.pipeline.shardingOf(cache.type, program.mesh);
    v.role = ArgRole::cache;
    decode.args.push_back(v);
  }
  FunctionValue result = scalarResult(generate.logits, narrower.narrowed.at(logits));
  result.sharding = logitsOutput.sharding;
  for (size_t d = 0; d < result.sharding.dims.size(); ++d)
    if (narrower.positional.count(logitsOutput.type.dims[d].axis))
      result.sharding.dims[d] = DimSharding{};
  decode.results.push_back(result);
  // prefill_step: the evaluation forward over the whole context, returning the logits
  // and each cache's value (the keys and values of every position: those of the zeros
  // after the prompt the decode step writes over before it reads them).
  StepFunction prefill;
  prefill.name = "prefill_step";
  prefill.args = forward.params;
  prefill.args.push_back(*llvm::find_if(forward.inputs, [&](const FunctionValue &v) {
    return v.name == generate.input && v.layer < 0;
  }));
  FunctionValue whole = scalarResult(generate.logits, logits);
  whole.sharding = logitsOutput.sharding;
  prefill.results.push_back(whole);
  for (size_t i = 0; i < narrower.caches.size(); ++i) {
    FunctionValue v = decode.args[decode.args.size() - narrower.caches.size() + i];
    v.node = narrower.caches[i].updated;
    decode.results.push_back(v);
    v.node = narrower.caches[i].value;
    prefill.results.push_back(v);
  }
  sp.generation = GenerationSteps{std::move(prefill), std::move(decode)};
}
