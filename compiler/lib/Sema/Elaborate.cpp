//===- Elaborate.cpp - imports, block instantiation, shape inference ------===//
//
// 1. Load the model file and its imports (the importing file's folder, then
//    -I folders, then the stdlib), rejecting cycles and duplicate blocks.
// 2. Evaluate the model's statements in order. Expressions evaluate to
//    compile-time scalars, axis names, shapes, block instances or tensors;
//    tensors are nodes appended to the program graph, typed by OpTyping.
// 3. A block instance is elaborated at its first call: forward arguments bind
//    axis sizes and inferable `axis` parameters, then sub-instances and
//    parameters are created, then the forward body is inlined. A `scan`
//    instance elaborates its body once into a graph of its own; its
//    parameters (and its dropouts' inputs) are stacked along a leading
//    `layer` axis.
// Errors poison the value (Value::None) so one mistake reports once.
//
//===----------------------------------------------------------------------===//

#include "OpTyping.h"
#include "shardc/Parse/Parser.h"
#include "shardc/Sema/Builtins.h"
#include "shardc/Sema/Sema.h"
#include "shardrt/program_limits.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <set>

#ifndef SHARDC_STDLIB_DIR
#error "SHARDC_STDLIB_DIR must name the stdlib folder"
#endif

using namespace shardc;

namespace {

struct Instance;

// Elaboration recurses once per nested block instance and per import; these
// bound it far inside the compiler's stack (see kMaxTreeDepth in the parser).
constexpr size_t kMaxBlockNesting = 256;
constexpr size_t kMaxImportDepth = 256;

/// Names the driver's metrics lines already use (the loss is written as "loss").
bool isMetricsLineKey(llvm::StringRef name) {
  std::string_view key(name.data(), name.size());
  return key == "loss" || llvm::is_contained(shardrt::kTrainLineKeys, key) ||
         llvm::is_contained(shardrt::kEvalLineKeys, key);
}

struct Value {
  enum Kind { None, Tensor, Int, Float, Bool, String, Axis, Shape, InstanceRef, BlockRef, BuiltinRef };
  Kind kind = None;
  unsigned node = 0;   // Tensor
  int64_t intValue = 0;
  double floatValue = 0;
  bool boolValue = false;
  std::string text;    // String, Axis
  std::vector<Dim> shape;  // Shape; size -1 when not given
  Instance *instance = nullptr;
  const BlockAST *block = nullptr;
  const Builtin *builtin = nullptr;

  bool ok() const { return kind != None; }
  static Value tensor(unsigned node) { Value v; v.kind = Tensor; v.node = node; return v; }
};

std::string describeKind(const Value &v) {
  switch (v.kind) {
  case Value::None: return "an invalid value";
  case Value::Tensor: return "a tensor";
  case Value::Int: return "an int";
  case Value::Float: return "a float";
  case Value::Bool: return "a bool";
  case Value::String: return "a string";
  case Value::Axis: return "an axis";
  case Value::Shape: return "a shape";
  case Value::InstanceRef: return "a block instance";
  case Value::BlockRef: return "a block";
  case Value::BuiltinRef: return "a builtin";
  }
  return "?";
}

ArgKind argKindOf(ScalarKind kind) {
  switch (kind) {
  case ScalarKind::Int: return ArgKind::Int;
  case ScalarKind::Float: return ArgKind::Float;
  case ScalarKind::Bool: return ArgKind::Bool;
  case ScalarKind::String: return ArgKind::String;
  case ScalarKind::Axis: return ArgKind::Axis;
  }
  return ArgKind::Int;
}

/// Axis sizes known in one scope (a block instance or the model), with where
/// each was learnt.
struct AxisEnv {
  std::map<std::string, std::pair<int64_t, SMRange>> sizes;
};

/// A block applied to config values. Elaborated at its first call.
struct Instance {
  const BlockAST *block = nullptr;
  std::string path;            // empty until named by a let or first call
  std::map<std::string, Value> config;
  std::map<std::string, std::string> axisParams; // axis parameter -> logical axis ("" unbound)
  AxisEnv axes;
  int64_t scanLength = 0;

  bool elaborated = false;
  std::vector<TensorType> argTypes;
  SMRange firstCall;
  std::map<std::string, Value> members; // sub-instances and parameters
  std::map<const Expr *, Instance *> inlineInstances;
  std::map<std::string, unsigned> autoNames;
  // scan
  std::shared_ptr<Graph> scanBody;
  std::vector<unsigned> scanOperands;
};

/// Where nodes go. Inside a scan body, parameters become body arguments and
/// the outer context gets the stacked parameter.
struct GraphContext {
  Graph *graph;
  GraphContext *outer = nullptr;
  int64_t scanLength = 0;
  std::vector<unsigned> *scanOperands = nullptr;
};

/// Names visible while evaluating: a model's or one block instance's.
struct Scope {
  std::map<std::string, Value> names;
  Instance *owner; // inline instances are cached here
  AxisEnv *axes;
  std::map<std::string, std::string> *axisParams; // null in the model
};

class Elaborator {
public:
  Elaborator(const SemaOptions &options, DiagnosticEngine &diags, TypedProgram &program)
      : options(options), diags(diags), program(program) {}

  bool run(const std::string &modelPath);

private:
  // ---- loading
  const ModuleAST *load(const std::string &path, SMRange importedAt,
                        std::vector<std::string> &stack);
  std::optional<std::string> resolveImport(const ModuleAST &from, const ImportAST &imp);
  void registerBlocks(const ModuleAST &module);
  void checkBlock(const BlockAST &block);

  // ---- the model
  void elaborateModel(const ModelAST &model);

  // ---- expressions
  Value eval(const Expr &expr, Scope &scope, GraphContext &ctx);
  Value evalName(const NameExpr &name, Scope &scope);
  Value evalBinary(const BinaryExpr &bin, Scope &scope, GraphContext &ctx);
  Value evalCall(const CallExpr &call, Scope &scope, GraphContext &ctx);
  Value evalShape(const std::vector<DimAST> &dims, Scope &scope);
  Value scalarToTensor(const Value &v, DType dtype, SMRange range, GraphContext &ctx);
  std::optional<int64_t> evalSize(const Expr &expr, Scope &scope);

  // ---- calls
  std::optional<std::vector<std::pair<const SignatureParam *, const Expr *>>>
  bindArguments(llvm::StringRef callee, const std::vector<SignatureParam> &signature,
                const std::vector<Argument> &args, SMRange call);
  Value evalArgument(const SignatureParam &param, const Expr *expr, Scope &scope,
                     GraphContext &ctx, SMRange call);
  Value callBuiltin(const Builtin &builtin, const CallExpr &call, Scope &scope, GraphContext &ctx);
  Value instantiate(const BlockAST &block, const CallExpr &call, Scope &scope, GraphContext &ctx);
  Value callInstance(Instance &inst, const CallExpr &call, Scope &scope, GraphContext &ctx);
  std::optional<unsigned> inlineForward(Instance &inst, const std::vector<unsigned> &args,
                                        GraphContext &ctx, SMRange call);
  std::optional<unsigned> inlineForwardBody(Instance &inst, const std::vector<unsigned> &args,
                                            GraphContext &ctx, SMRange call);
  bool bindForwardArgs(Instance &inst, const std::vector<TensorType> &types,
                       const std::vector<Argument> &args);
  void createMembers(Instance &inst, GraphContext &ctx);
  /// A parameter or a synthetic input: a leaf of the model's graph, declared
  /// with its type; in a scan body, an argument whose stack, the leaf with a
  /// leading `layer` dimension, the scan takes from the enclosing graph.
  unsigned makeLeaf(GraphContext &ctx, const Node &leaf,
                    llvm::function_ref<void(const TensorType &)> declare);
  unsigned makeParam(GraphContext &ctx, const std::string &path, const TensorType &type,
                     const Initializer &init, SMRange loc);
  /// A dropout's uniform numbers, the input `dropout.K` of the dropped
  /// tensor's type; in a scan body each layer gets its own.
  unsigned makeDropoutUniforms(GraphContext &ctx, const TensorType &type, SMRange loc);
  std::optional<Initializer> evalInitializer(const ParamDeclAST &decl, const TensorType &type,
                                             Scope &scope);
  void let(const LetAST &let, Scope &scope, GraphContext &ctx, const std::string &prefix);

  // ---- types
  std::optional<std::string> resolveAxisName(const std::string &name, SMRange range,
                                             Scope &scope);
  std::optional<TensorType> resolveType(const TensorTypeAST &type, Scope &scope,
                                        llvm::StringRef what);
  /// Reports a tensor of more than kMaxTensorElements elements at `at`.
  bool checkSize(const TensorType &type, SMRange at);
  /// An operation's result: within the size limit, each axis once.
  bool checkResult(const TensorType &type, SMRange at, llvm::StringRef op);
  Scope instanceScope(Instance &inst);

  std::string suggest(llvm::StringRef name, const Scope &scope);
  const TensorType &typeOf(const GraphContext &ctx, unsigned node) {
    return ctx.graph->nodes[node].type;
  }

  const SemaOptions &options;
  DiagnosticEngine &diags;
  TypedProgram &program;
  std::vector<std::unique_ptr<ModuleAST>> modules;
  std::map<std::string, const ModuleAST *> loaded; // real path -> module
  std::map<std::string, const BlockAST *> blocks;
  std::vector<std::unique_ptr<Instance>> instances;
  Instance modelOwner;
  std::set<std::string> usedPaths;
  std::vector<const BlockAST *> elaborating; // blocks whose forward is being inlined
  unsigned numDropouts = 0; // K of the next `dropout.K`
};

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

const ModuleAST *Elaborator::load(const std::string &path, SMRange importedAt,
                                  std::vector<std::string> &stack) {
  llvm::SmallString<256> real;
  if (llvm::sys::fs::real_path(path, real))
    real = path;
  std::string key = real.str().str();
  if (llvm::is_contained(stack, key)) {
    std::string cycle;
    auto start = llvm::find(stack, key);
    for (auto it = start; it != stack.end(); ++it)
      cycle += llvm::sys::path::filename(*it).str() + " -> ";
    diags.error(importedAt, "cyclic import: " + cycle + llvm::sys::path::filename(key).str());
    return nullptr;
  }
  if (auto it = loaded.find(key); it != loaded.end())
    return it->second;

  unsigned buffer = diags.addFile(path, importedAt.Start);
  if (!buffer)
    return nullptr;
  auto module = parseModelFile(buffer, diags);
  if (!module)
    return nullptr;
  const ModuleAST *result = module.get();
  loaded[key] = result;
  modules.push_back(std::move(module));

  if (stack.size() >= kMaxImportDepth) {
    diags.error(importedAt, "imports nested deeper than " + std::to_string(kMaxImportDepth) +
                                " files");
    return result;
  }
  stack.push_back(key);
  for (const ImportAST &imp : result->imports)
    if (auto file = resolveImport(*result, imp))
      load(*file, imp.range, stack);
  stack.pop_back();
  registerBlocks(*result);
  return result;
}

std::optional<std::string> Elaborator::resolveImport(const ModuleAST &from, const ImportAST &imp) {
  std::string relative = imp.module;
  std::replace(relative.begin(), relative.end(), '.', '/');
  relative += ".shard";
  std::vector<std::string> folders{llvm::sys::path::parent_path(from.path).str()};
  if (folders[0].empty())
    folders[0] = ".";
  folders.insert(folders.end(), options.importPaths.begin(), options.importPaths.end());
  folders.push_back(SHARDC_STDLIB_DIR);
  for (const std::string &folder : folders) {
    llvm::SmallString<256> candidate(folder);
    llvm::sys::path::append(candidate, relative);
    if (llvm::sys::fs::is_regular_file(candidate))
      return candidate.str().str();
  }
  std::string searched;
  for (const std::string &folder : folders)
    searched += (searched.empty() ? "" : ", ") + folder;
  diags.error(imp.range, "import not found: no file '" + relative + "' in " + searched +
                             " (add a folder with -I)");
  return std::nullopt;
}

void Elaborator::registerBlocks(const ModuleAST &module) {
  for (const BlockAST &block : module.blocks) {
    if (const Builtin *b = lookupBuiltin(block.name)) {
      diags.error(block.range, "block '" + block.name + "' has the name of a builtin " +
                                   (b->category == BuiltinCategory::Op ? "operation" : "function"));
      continue;
    }
    auto [it, inserted] = blocks.emplace(block.name, &block);
    if (!inserted) {
      diags.error(block.range, "duplicate definition of block '" + block.name + "'");
      diags.note(it->second->range, "first defined here");
      continue;
    }
    checkBlock(block);
  }
}

/// Checks what does not need instantiation: unique names, one forward.
void Elaborator::checkBlock(const BlockAST &block) {
  std::map<std::string, std::pair<SMRange, llvm::StringRef>> names; // name -> where, what
  auto declare = [&](const std::string &name, SMRange range, llvm::StringRef what) {
    auto [it, inserted] = names.emplace(name, std::make_pair(range, what));
    if (!inserted) {
      diags.error(range, "duplicate definition of " + what + " '" + name + "' in block '" +
                             block.name + "'");
      diags.note(it->second.first, "first defined here");
    }
  };
  for (const auto &c : block.config)
    declare(c.name, c.range, "parameter");
  for (const auto &p : block.params) {
    declare(p.name, p.range, "param");
    // Parameters are what the gradient updates and the initialisers fill.
    if (p.type.dtype != DType::F32)
      diags.error(p.type.range, "param '" + p.name + "' must be f32, not " +
                                    dtypeName(p.type.dtype) + ": parameters are trained");
  }
  for (const auto &l : block.lets)
    declare(l.name, l.range, "let");
  if (block.forwards.empty())
    diags.error(block.range, "block '" + block.name + "' has no forward function");
  for (size_t i = 1; i < block.forwards.size(); ++i) {
    diags.error(block.forwards[i].range, "block '" + block.name + "' has more than one forward function");
    diags.note(block.forwards[0].range, "first forward function here");
  }
  for (const auto &f : block.forwards) {
    std::map<std::string, SMRange> local;
    for (const auto &a : f.args) {
      if (!local.emplace(a.name, a.range).second)
        diags.error(a.range, "duplicate argument '" + a.name + "'");
      // An argument would hide the member inside the forward function.
      auto member = names.find(a.name);
      if (member != names.end()) {
        diags.error(a.range, "forward argument '" + a.name + "' has the name of the " +
                                 member->second.second + " '" + a.name + "' of block '" +
                                 block.name + "'; rename one of them");
        diags.note(member->second.first, "the " + member->second.second + " is defined here");
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

bool Elaborator::run(const std::string &modelPath) {
  unsigned errorsBefore = diags.errorCount();
  std::vector<std::string> stack;
  const ModuleAST *main = load(modelPath, SMRange(), stack);
  if (!main)
    return false;
  if (main->models.empty()) {
    if (diags.errorCount() == errorsBefore)
      diags.fileError(main->path, "no model in this file: a model file needs one "
                                  "`model Name { ... }` declaration");
    return false;
  }
  for (size_t i = 1; i < main->models.size(); ++i) {
    diags.error(main->models[i].range, "more than one model in this file");
    diags.note(main->models[0].range, "first model here");
  }
  if (diags.errorCount() != errorsBefore)
    return false;
  program.modelPath = modelPath;
  elaborateModel(main->models[0]);
  return diags.errorCount() == errorsBefore;
}

void Elaborator::elaborateModel(const ModelAST &model) {
  program.modelName = model.name;
  AxisEnv axes;
  Scope scope{{}, &modelOwner, &axes, nullptr};
  GraphContext ctx{&program.graph};

  auto declare = [&](const std::string &name, SMRange range, Value value) {
    if (scope.names.count(name)) {
      diags.error(range, "duplicate definition of '" + name + "' in model '" + model.name + "'");
      return;
    }
    scope.names[name] = std::move(value);
  };

  for (const ConfigParamAST &c : model.config) {
    if (!c.defaultValue) {
      diags.error(c.range, "model parameter '" + c.name + "' needs a default value");
      continue;
    }
    if (c.kind == ScalarKind::Axis) {
      diags.error(c.range, "a model cannot take axis parameters; name the axis directly");
      continue;
    }
    SignatureParam sig{c.name, argKindOf(c.kind)};
    Value v = evalArgument(sig, c.defaultValue.get(), scope, ctx, c.range);
    if (v.ok())
      declare(c.name, c.range, v);
  }

  for (const InputAST &in : model.inputs) {
    // The runtime fills f32 (data, normal, uniform) and i32 (labels, integers).
    if (in.type.dtype == DType::Bool) {
      diags.error(in.type.range, "input '" + in.name + "' must be f32 or i32, not bool; "
                                 "compare an i32 input with a number for a mask");
      scope.names.emplace(in.name, Value());
      continue;
    }
    auto type = resolveType(in.type, scope, "input '" + in.name + "'");
    if (!type) {
      scope.names.emplace(in.name, Value());
      continue;
    }
    Node node;
    node.op = OpKind::input;
    node.name = in.name;
    node.type = *type;
    node.loc = in.range;
    declare(in.name, in.range, Value::tensor(program.graph.add(node)));
    Input input;
    input.path = in.name;
    input.type = *type;
    input.loc = in.range;
    // The driver feeds dataset fields row by row: they share one batch.
    if (!datasetField(in.name, *type).empty()) {
      for (const Input &earlier : program.inputs)
        if (!datasetField(earlier.path, earlier.type).empty() &&
            earlier.type.dims[0].size != type->dims[0].size) {
          diags.error(in.range, "input '" + in.name + "' is read from the dataset with a batch of " +
                                    std::to_string(type->dims[0].size) + ", but '" + earlier.path +
                                    "' with " + std::to_string(earlier.type.dims[0].size));
          diags.note(earlier.loc, "'" + earlier.path + "' is declared here");
        }
    }
    program.inputs.push_back(input);
  }

  for (const LetAST &l : model.lets) {
    if (scope.names.count(l.name)) {
      diags.error(l.range, "duplicate definition of '" + l.name + "' in model '" + model.name + "'");
      continue;
    }
    let(l, scope, ctx, "");
  }

  // The loss is an f32 scalar; a metric is an f32 or i32 scalar.
  auto scalar = [&](const Expr &expr, llvm::StringRef what, bool intOk) -> std::optional<unsigned> {
    Value v = eval(expr, scope, ctx);
    if (!v.ok())
      return std::nullopt;
    if (v.kind != Value::Tensor) {
      diags.error(expr.range, what + " must be a tensor, got " + describeKind(v));
      return std::nullopt;
    }
    const TensorType &t = typeOf(ctx, v.node);
    if (!t.dims.empty()) {
      diags.error(expr.range, what + " must be a scalar, got " + t.str() +
                                  "; reduce it with sum(...) or mean(...)");
      return std::nullopt;
    }
    if (t.dtype != DType::F32 && !(intOk && t.dtype == DType::I32)) {
      diags.error(expr.range, what + " must be " + (intOk ? "f32[] or i32[]" : "f32[]") +
                                  ", got " + t.str());
      return std::nullopt;
    }
    return v.node;
  };

  if (model.losses.empty())
    diags.error(model.range, "model '" + model.name + "' has no loss: add `loss <expr>`");
  for (size_t i = 0; i < model.losses.size(); ++i) {
    if (i > 0) {
      diags.error(model.losses[i].first, "duplicate definition of the loss");
      diags.note(model.losses[0].first, "first loss here");
      continue;
    }
    if (auto node = scalar(*model.losses[i].second, "the loss", false))
      program.loss = *node;
  }

  std::set<std::string> metricNames;
  for (const MetricAST &m : model.metrics) {
    if (!metricNames.insert(m.name).second) {
      diags.error(m.range, "duplicate definition of metric '" + m.name + "'");
      continue;
    }
    // Evaluation reports the metrics and the model's named values by name.
    if (scope.names.count(m.name)) {
      diags.error(m.range, "metric '" + m.name + "' has the name of a value of model '" +
                               model.name + "'; evaluation reports both by name");
      continue;
    }
    if (isMetricsLineKey(m.name)) {
      diags.error(m.range, "a metric cannot be named '" + m.name +
                               "': the metrics line uses that key for the driver's own value");
      continue;
    }
    if (auto node = scalar(*m.value, "metric '" + m.name + "'", true))
      program.metrics.emplace_back(m.name, *node);
  }

  for (size_t i = 0; i < model.optimizers.size(); ++i) {
    const OptimizerAST &opt = model.optimizers[i];
    if (i > 0) {
      diags.error(opt.range, "duplicate definition of the optimizer");
      diags.note(model.optimizers[0].range, "first optimizer here");
      continue;
    }
    const Builtin *b = lookupBuiltin(opt.name);
    if (!b || b->category != BuiltinCategory::Optimizer) {
      diags.error(opt.range, "unknown optimizer '" + opt.name + "'; known: sgd, momentum, adam");
      continue;
    }
    auto bound = bindArguments(opt.name, b->params, opt.args, opt.range);
    if (!bound)
      continue;
    Optimizer result{*b->optimizer, {}, opt.range};
    for (auto &[param, expr] : *bound) {
      Value v = evalArgument(*param, expr, scope, ctx, opt.range);
      if (!v.ok())
        continue;
      if (v.floatValue <= 0 && expr)
        diags.error(expr->range, "optimizer hyperparameter '" + param->name + "' must be positive");
      result.hyperparameters.emplace_back(param->name, v.floatValue);
    }
    program.optimizer = result;
  }
}

/// `let name = value [: constraint]` in a model, block or forward function.
void Elaborator::let(const LetAST &l, Scope &scope, GraphContext &ctx, const std::string &prefix) {
  Value v = eval(*l.value, scope, ctx);
  if (!v.ok()) {
    scope.names[l.name] = v; // poisoned: later uses stay quiet
    return;
  }
  std::string path = prefix.empty() ? l.name : prefix + "." + l.name;
  if (v.kind == Value::InstanceRef && v.instance->path.empty()) {
    v.instance->path = path;
    if (!usedPaths.insert(path).second)
      diags.error(l.range, "the path '" + path + "' is used by another instance");
  }
  scope.names[l.name] = Value(); // poisoned unless the checks below pass
  if (l.constraint) {
    if (v.kind != Value::Tensor) {
      diags.error(l.constraintRange, "only tensors take a sharding constraint; '" + l.name +
                                         "' is " + describeKind(v));
      return;
    }
    const TensorType &type = typeOf(ctx, v.node);
    std::vector<std::string> names;
    for (const DimAST &d : *l.constraint) {
      auto axis = resolveAxisName(d.name, d.range, scope);
      if (!axis)
        return;
      names.push_back(*axis);
    }
    std::vector<std::string> actual;
    for (const Dim &d : type.dims)
      actual.push_back(d.axis);
    if (names != actual) {
      diags.error(l.constraintRange, "constraint " + printShape(*l.constraint) +
                                         " does not match the axes of '" + l.name + "': " +
                                         type.str());
      return;
    }
    for (size_t i = 0; i < l.constraint->size(); ++i) {
      const DimAST &d = (*l.constraint)[i];
      if (!d.size)
        continue;
      auto size = evalSize(*d.size, scope);
      if (!size)
        return;
      if (*size != type.dims[i].size) {
        diags.error(d.range, "constraint gives axis '" + names[i] + "' size " +
                                 std::to_string(*size) + ", but '" + l.name + "' has " +
                                 type.str());
        return;
      }
    }
    int index = -1;
    for (size_t i = 0; i < program.constraints.size(); ++i)
      if (program.constraints[i].path == path)
        index = i;
    if (index < 0) {
      index = program.constraints.size();
      program.constraints.push_back({path, type, l.range, {}});
    }
    Node node;
    node.op = OpKind::sharding_constraint;
    node.operands = {v.node};
    node.type = type;
    node.loc = l.range;
    node.name = path;
    node.constraint = index;
    v = Value::tensor(ctx.graph->add(node));
  }
  if (v.kind == Value::Tensor && ctx.graph->nodes[v.node].name.empty())
    ctx.graph->nodes[v.node].name = path;
  scope.names[l.name] = v;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

std::string Elaborator::suggest(llvm::StringRef name, const Scope &scope) {
  std::vector<std::string> candidates;
  for (const auto &entry : scope.names)
    candidates.push_back(entry.first);
  for (const auto &entry : blocks)
    candidates.push_back(entry.first);
  for (const Builtin &b : allBuiltins())
    candidates.push_back(b.name);
  std::string best;
  unsigned bestDistance = 3;
  for (const std::string &c : candidates) {
    unsigned d = name.edit_distance(c, true, bestDistance);
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return best.empty() ? "" : "; did you mean '" + best + "'?";
}

Value Elaborator::evalName(const NameExpr &name, Scope &scope) {
  if (auto it = scope.names.find(name.name); it != scope.names.end())
    return it->second;
  if (auto it = blocks.find(name.name); it != blocks.end()) {
    Value v;
    v.kind = Value::BlockRef;
    v.block = it->second;
    return v;
  }
  if (const Builtin *b = lookupBuiltin(name.name)) {
    if (b->category != BuiltinCategory::Op) {
      diags.error(name.range, "'" + name.name + "' is " +
                                  (b->category == BuiltinCategory::Optimizer
                                       ? "an optimizer: use it in `optimizer " + name.name + "(...)`"
                                       : "an initialiser: use it after `init`"));
      return {};
    }
    Value v;
    v.kind = Value::BuiltinRef;
    v.builtin = b;
    return v;
  }
  if (scope.axisParams && scope.axisParams->count(name.name)) {
    diags.error(name.range, "'" + name.name + "' is an axis parameter; it names an axis "
                                              "in shapes, not a value");
    return {};
  }
  diags.error(name.range, "unknown identifier '" + name.name + "'" + suggest(name.name, scope));
  return {};
}

Value Elaborator::eval(const Expr &expr, Scope &scope, GraphContext &ctx) {
  switch (expr.kind) {
  case ExprKind::Name: {
    Value v = evalName(static_cast<const NameExpr &>(expr), scope);
    // Sizes, config defaults and initialiser arguments are compile-time.
    if (v.kind == Value::Tensor && !ctx.graph) {
      diags.error(expr.range, "'" + static_cast<const NameExpr &>(expr).name +
                                  "' is a tensor; a compile-time value is needed here");
      return {};
    }
    return v;
  }
  case ExprKind::Int: {
    Value v;
    v.kind = Value::Int;
    v.intValue = static_cast<const IntExpr &>(expr).value;
    v.floatValue = v.intValue;
    return v;
  }
  case ExprKind::Float: {
    Value v;
    v.kind = Value::Float;
    v.floatValue = static_cast<const FloatExpr &>(expr).value;
    return v;
  }
  case ExprKind::String: {
    Value v;
    v.kind = Value::String;
    v.text = static_cast<const StringExpr &>(expr).value;
    return v;
  }
  case ExprKind::Bool: {
    Value v;
    v.kind = Value::Bool;
    v.boolValue = static_cast<const BoolExpr &>(expr).value;
    return v;
  }
  case ExprKind::Shape: {
    const auto &shape = static_cast<const ShapeExpr &>(expr);
    return evalShape(shape.dims, scope);
  }
  case ExprKind::Call:
    return evalCall(static_cast<const CallExpr &>(expr), scope, ctx);
  case ExprKind::Neg: {
    Value v = eval(*static_cast<const NegExpr &>(expr).operand, scope, ctx);
    if (v.kind == Value::Int) {
      std::optional<int64_t> negated = llvm::checkedMul<int64_t>(v.intValue, -1);
      if (!negated) {
        diags.error(expr.range, "integer overflow: -(" + std::to_string(v.intValue) +
                                    ") is not a 64-bit integer");
        return {};
      }
      v.intValue = *negated;
      v.floatValue = -v.floatValue;
      return v;
    }
    if (v.kind == Value::Float) {
      v.floatValue = -v.floatValue;
      return v;
    }
    if (v.kind != Value::Tensor) {
      if (v.ok())
        diags.error(expr.range, "cannot negate " + describeKind(v));
      return {};
    }
    const TensorType &t = typeOf(ctx, v.node);
    if (t.dtype == DType::Bool) {
      diags.error(expr.range, "cannot negate a bool tensor " + t.str());
      return {};
    }
    Node node;
    node.op = OpKind::neg;
    node.operands = {v.node};
    node.type = t;
    node.loc = expr.range;
    return Value::tensor(ctx.graph->add(node));
  }
  case ExprKind::Binary:
    return evalBinary(static_cast<const BinaryExpr &>(expr), scope, ctx);
  }
  return {};
}

/// The number takes the tensor's element type, so it must be one of its values:
/// i32 arithmetic has no fractions (JAX would promote; here to_f32 is internal)
/// and no numbers past 32 bits.
Value Elaborator::scalarToTensor(const Value &v, DType dtype, SMRange range, GraphContext &ctx) {
  if (dtype == DType::I32 && v.kind == Value::Float) {
    diags.error(range, "a float number next to an i32 tensor: i32 arithmetic takes integers only");
    return {};
  }
  if (dtype == DType::I32 && (v.intValue < INT32_MIN || v.intValue > INT32_MAX)) {
    diags.error(range, std::to_string(v.intValue) + " does not fit in i32, the type of the tensor beside it");
    return {};
  }
  Node node;
  node.op = OpKind::constant;
  node.type = TensorType{dtype, {}};
  node.loc = range;
  node.attrs["value"] = v.floatValue;
  return Value::tensor(ctx.graph->add(node));
}

Value Elaborator::evalBinary(const BinaryExpr &bin, Scope &scope, GraphContext &ctx) {
  Value lhs = eval(*bin.lhs, scope, ctx);
  Value rhs = eval(*bin.rhs, scope, ctx);
  if (!lhs.ok() || !rhs.ok())
    return {};
  auto isNumber = [](const Value &v) { return v.kind == Value::Int || v.kind == Value::Float; };
  std::string spelled = binaryOpSpelling(bin.op).str();

  // Compile-time arithmetic on config values: `depth * 4`.
  if (isNumber(lhs) && isNumber(rhs)) {
    Value r;
    bool ints = lhs.kind == Value::Int && rhs.kind == Value::Int;
    double a = lhs.floatValue, b = rhs.floatValue;
    // Integers are checked: a result outside 64 bits is an error, never a wrap.
    std::optional<int64_t> exact = 0;
    switch (bin.op) {
    case BinaryOp::Add: r.floatValue = a + b; exact = llvm::checkedAdd(lhs.intValue, rhs.intValue); break;
    case BinaryOp::Sub: r.floatValue = a - b; exact = llvm::checkedSub(lhs.intValue, rhs.intValue); break;
    case BinaryOp::Mul: r.floatValue = a * b; exact = llvm::checkedMul(lhs.intValue, rhs.intValue); break;
    case BinaryOp::Div:
      if (b == 0) {
        diags.error(bin.range, "division by zero");
        return {};
      }
      r.floatValue = a / b;
      if (ints) {
        exact = lhs.intValue == INT64_MIN && rhs.intValue == -1
                    ? std::nullopt
                    : std::optional<int64_t>(lhs.intValue / rhs.intValue);
        r.floatValue = exact.value_or(0);
      }
      break;
    default:
      diags.error(bin.opRange, "'" + spelled + "' is not defined on compile-time numbers");
      return {};
    }
    if (ints && !exact) {
      diags.error(bin.range, "integer overflow: " + std::to_string(lhs.intValue) + " " + spelled +
                                 " " + std::to_string(rhs.intValue) + " is not a 64-bit integer");
      return {};
    }
    r.intValue = ints ? *exact : 0;
    r.kind = ints ? Value::Int : Value::Float;
    return r;
  }

  if (lhs.kind != Value::Tensor && !isNumber(lhs)) {
    diags.error(bin.lhs->range, "'" + spelled + "' needs a tensor or a number, got " + describeKind(lhs));
    return {};
  }
  if (rhs.kind != Value::Tensor && !isNumber(rhs)) {
    diags.error(bin.rhs->range, "'" + spelled + "' needs a tensor or a number, got " + describeKind(rhs));
    return {};
  }
  // A number next to a tensor becomes a scalar constant of the tensor's type.
  if (isNumber(lhs)) {
    if (bin.op == BinaryOp::MatMul) {
      diags.error(bin.lhs->range, "'@' needs a tensor on the left, got a number");
      return {};
    }
    lhs = scalarToTensor(lhs, typeOf(ctx, rhs.node).dtype, bin.lhs->range, ctx);
    if (!lhs.ok())
      return {};
  }
  if (isNumber(rhs)) {
    if (bin.op == BinaryOp::MatMul) {
      diags.error(bin.rhs->range, "'@' needs a tensor on the right, got a number");
      return {};
    }
    rhs = scalarToTensor(rhs, typeOf(ctx, lhs.node).dtype, bin.rhs->range, ctx);
    if (!rhs.ok())
      return {};
  }
  auto type = typeBinaryOp(bin.op, bin.opRange, typeOf(ctx, lhs.node), typeOf(ctx, rhs.node), diags);
  if (!type || !checkResult(*type, bin.range, "'" + spelled + "'"))
    return {};
  Node node;
  node.op = binaryOpKind(bin.op);
  node.operands = {lhs.node, rhs.node};
  node.type = *type;
  node.loc = bin.range;
  return Value::tensor(ctx.graph->add(node));
}

std::optional<int64_t> Elaborator::evalSize(const Expr &expr, Scope &scope) {
  GraphContext none{nullptr};
  if (expr.kind == ExprKind::Call || expr.kind == ExprKind::Shape) {
    diags.error(expr.range, "an axis size must be an integer expression");
    return std::nullopt;
  }
  Value v = eval(expr, scope, none);
  if (!v.ok())
    return std::nullopt;
  if (v.kind != Value::Int) {
    diags.error(expr.range, "an axis size must be an integer, got " + describeKind(v));
    return std::nullopt;
  }
  if (v.intValue < 1) {
    diags.error(expr.range, "an axis size must be at least 1, got " + std::to_string(v.intValue));
    return std::nullopt;
  }
  return v.intValue;
}

Value Elaborator::evalShape(const std::vector<DimAST> &dims, Scope &scope) {
  Value v;
  v.kind = Value::Shape;
  std::set<std::string> seen;
  for (const DimAST &d : dims) {
    auto axis = resolveAxisName(d.name, d.range, scope);
    if (!axis)
      return {};
    if (!seen.insert(*axis).second) {
      diags.error(d.range, "axis '" + *axis + "' appears twice in " + printShape(dims));
      return {};
    }
    int64_t size = -1;
    if (d.size) {
      auto s = evalSize(*d.size, scope);
      if (!s)
        return {};
      size = *s;
    } else if (auto it = scope.axes->sizes.find(*axis); it != scope.axes->sizes.end()) {
      size = it->second.first;
    }
    v.shape.push_back({*axis, size});
  }
  return v;
}

//===----------------------------------------------------------------------===//
// Types and axes
//===----------------------------------------------------------------------===//

std::optional<std::string> Elaborator::resolveAxisName(const std::string &name, SMRange range,
                                                       Scope &scope) {
  if (!scope.axisParams)
    return name;
  auto it = scope.axisParams->find(name);
  if (it == scope.axisParams->end())
    return name;
  if (it->second.empty()) {
    diags.error(range, "axis parameter '" + name + "' is not bound: pass it when creating the "
                                                   "block, or use it in a forward argument");
    return std::nullopt;
  }
  return it->second;
}

std::optional<TensorType> Elaborator::resolveType(const TensorTypeAST &ast, Scope &scope,
                                                  llvm::StringRef what) {
  TensorType type;
  type.dtype = ast.dtype;
  std::set<std::string> seen;
  bool ok = true;
  for (const DimAST &d : ast.dims) {
    auto axis = resolveAxisName(d.name, d.range, scope);
    if (!axis) {
      ok = false;
      continue;
    }
    if (!seen.insert(*axis).second) {
      diags.error(d.range, "axis '" + *axis + "' appears twice in the type of " + what);
      ok = false;
      continue;
    }
    auto known = scope.axes->sizes.find(*axis);
    if (d.size) {
      auto size = evalSize(*d.size, scope);
      if (!size) {
        ok = false;
        continue;
      }
      if (known != scope.axes->sizes.end() && known->second.first != *size) {
        diags.error(d.range, "axis '" + *axis + "' has size " + std::to_string(*size) +
                                 " here but " + std::to_string(known->second.first) +
                                 " where it was first given");
        diags.note(known->second.second, "'" + *axis + "' first given here");
        ok = false;
        continue;
      }
      scope.axes->sizes.emplace(*axis, std::make_pair(*size, d.range));
      type.dims.push_back({*axis, *size});
    } else if (known != scope.axes->sizes.end()) {
      type.dims.push_back({*axis, known->second.first});
    } else {
      diags.error(d.range, "unknown axis '" + *axis + "' in the type of " + what +
                               ": its size is not known here; write '" + *axis + " = N'");
      ok = false;
    }
  }
  if (ok && !checkSize(type, ast.range))
    return std::nullopt;
  return ok ? std::optional<TensorType>(type) : std::nullopt;
}

bool Elaborator::checkSize(const TensorType &type, SMRange at) {
  if (type.numElements() <= kMaxTensorElements)
    return true;
  diags.error(at, "the tensor " + type.str() + " has more than 2^48 elements, the most shardc "
                  "accepts");
  return false;
}

bool Elaborator::checkResult(const TensorType &type, SMRange at, llvm::StringRef op) {
  for (size_t i = 0; i < type.dims.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (type.dims[i].axis == type.dims[j].axis) {
        diags.error(at, "the result of " + op + " would have the axis '" + type.dims[i].axis +
                            "' twice: " + type.str() + "; rename one of them");
        return false;
      }
  return checkSize(type, at);
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

/// Matches call arguments to a signature: positional first, then named.
std::optional<std::vector<std::pair<const SignatureParam *, const Expr *>>>
Elaborator::bindArguments(llvm::StringRef callee, const std::vector<SignatureParam> &signature,
                          const std::vector<Argument> &args, SMRange call) {
  std::vector<const Expr *> bound(signature.size(), nullptr);
  bool ok = true, sawNamed = false;
  size_t position = 0;
  for (const Argument &arg : args) {
    if (arg.name.empty()) {
      if (sawNamed) {
        diags.error(arg.value->range, "positional argument after a named one in the call to '" +
                                          callee + "'");
        ok = false;
        continue;
      }
      if (position >= signature.size()) {
        diags.error(arg.value->range, "too many arguments to '" + callee + "': it takes " +
                                          std::to_string(signature.size()) + ", got " +
                                          std::to_string(args.size()));
        return std::nullopt;
      }
      bound[position++] = arg.value.get();
      continue;
    }
    sawNamed = true;
    auto it = llvm::find_if(signature, [&](const SignatureParam &p) { return p.name == arg.name; });
    if (it == signature.end()) {
      std::string names;
      for (const auto &p : signature)
        names += (names.empty() ? "" : ", ") + p.name;
      diags.error(arg.nameRange, "'" + callee + "' has no parameter named '" + arg.name +
                                     "'" + (names.empty() ? "; it takes none" : "; its parameters are " + names));
      ok = false;
      continue;
    }
    size_t index = it - signature.begin();
    if (bound[index]) {
      diags.error(arg.nameRange, "argument '" + arg.name + "' of '" + callee + "' is given twice");
      ok = false;
      continue;
    }
    bound[index] = arg.value.get();
  }
  std::vector<std::pair<const SignatureParam *, const Expr *>> result;
  for (size_t i = 0; i < signature.size(); ++i) {
    // Unbound axis parameters stay open: they are inferred at the first call.
    if (!bound[i] && !signature[i].hasDefault && signature[i].kind != ArgKind::Axis) {
      diags.error(call, "missing argument '" + signature[i].name + "' (" +
                            argKindName(signature[i].kind) + ") in the call to '" + callee + "'");
      ok = false;
    }
    result.emplace_back(&signature[i], bound[i]);
  }
  if (!ok)
    return std::nullopt;
  return result;
}

/// Evaluates one argument against its parameter's kind; a null `expr` means
/// the builtin's default.
Value Elaborator::evalArgument(const SignatureParam &param, const Expr *expr, Scope &scope,
                               GraphContext &ctx, SMRange call) {
  if (!expr) {
    Value v;
    switch (param.kind) {
    case ArgKind::Int:
      v.kind = Value::Int;
      v.intValue = std::stoll(param.defaultText);
      v.floatValue = v.intValue;
      return v;
    case ArgKind::Float:
      v.kind = Value::Float;
      v.floatValue = std::stod(param.defaultText);
      return v;
    case ArgKind::String:
      v.kind = Value::String;
      v.text = llvm::StringRef(param.defaultText).trim('"').str();
      return v;
    case ArgKind::Bool:
      v.kind = Value::Bool;
      v.boolValue = param.defaultText == "true";
      return v;
    case ArgKind::Shape:
      v.kind = Value::Shape; // every default shape is `[]`
      return v;
    default:
      diags.error(call, "internal: no default for '" + param.name + "'");
      return {};
    }
  }
  if (param.kind == ArgKind::Axis) {
    if (expr->kind != ExprKind::Name) {
      diags.error(expr->range, "argument '" + param.name + "' is an axis: write an axis name");
      return {};
    }
    auto axis = resolveAxisName(static_cast<const NameExpr *>(expr)->name, expr->range, scope);
    if (!axis)
      return {};
    Value v;
    v.kind = Value::Axis;
    v.text = *axis;
    return v;
  }
  Value v = eval(*expr, scope, ctx);
  if (!v.ok())
    return {};
  auto mismatch = [&]() -> Value {
    diags.error(expr->range, "argument '" + param.name + "' must be " +
                                 (param.kind == ArgKind::Int ? "an int" : param.kind == ArgKind::Float ? "a float" : "a " + argKindName(param.kind).str()) +
                                 ", got " + describeKind(v));
    return {};
  };
  switch (param.kind) {
  case ArgKind::Tensor:
    return v.kind == Value::Tensor ? v : mismatch();
  case ArgKind::Int:
    return v.kind == Value::Int ? v : mismatch();
  case ArgKind::Float:
    if (v.kind == Value::Int)
      v.kind = Value::Float;
    return v.kind == Value::Float ? v : mismatch();
  case ArgKind::Bool:
    return v.kind == Value::Bool ? v : mismatch();
  case ArgKind::String:
    return v.kind == Value::String ? v : mismatch();
  case ArgKind::Shape:
    return v.kind == Value::Shape ? v : mismatch();
  case ArgKind::Block:
    return v.kind == Value::InstanceRef ? v : mismatch();
  case ArgKind::Axis:
    break;
  }
  return {};
}

Value Elaborator::evalCall(const CallExpr &call, Scope &scope, GraphContext &ctx) {
  Value callee = eval(*call.callee, scope, ctx);
  switch (callee.kind) {
  case Value::None:
    return {};
  case Value::BuiltinRef:
    return callBuiltin(*callee.builtin, call, scope, ctx);
  case Value::BlockRef:
    return instantiate(*callee.block, call, scope, ctx);
  case Value::InstanceRef:
    return callInstance(*callee.instance, call, scope, ctx);
  default:
    diags.error(call.callee->range, "'" + printExpr(*call.callee) + "' is " +
                                        describeKind(callee) + ", not something to call");
    return {};
  }
}

Value Elaborator::callBuiltin(const Builtin &builtin, const CallExpr &call, Scope &scope,
                              GraphContext &ctx) {
  if (!ctx.graph) {
    diags.error(call.range, "'" + builtin.name + "' cannot be used in a compile-time value");
    return {};
  }
  auto bound = bindArguments(builtin.name, builtin.params, call.args, call.range);
  if (!bound)
    return {};
  std::vector<OpArg> args;
  std::vector<Value> values;
  for (auto &[param, expr] : *bound) {
    Value v = evalArgument(*param, expr, scope, ctx, call.range);
    if (!v.ok())
      return {};
    OpArg arg;
    arg.range = expr ? expr->range : call.range;
    if (v.kind == Value::Tensor)
      arg.tensor = typeOf(ctx, v.node);
    arg.intValue = v.intValue;
    arg.floatValue = v.floatValue;
    arg.stringValue = v.text;
    arg.shape = v.shape;
    args.push_back(arg);
    values.push_back(v);
  }

  if (builtin.op == OpKind::scan) {
    Instance &inner = *values[0].instance;
    if (inner.scanLength) {
      diags.error(call.args[0].value->range, "scan of a scanned block is not supported");
      return {};
    }
    if (inner.elaborated) {
      diags.error(call.args[0].value->range, "scan needs a fresh block instance; '" +
                                                 inner.path + "' has already been called");
      return {};
    }
    if (values[1].intValue < 1) {
      diags.error(call.args[1].value->range, "scan length must be at least 1, got " +
                                                 std::to_string(values[1].intValue));
      return {};
    }
    auto scanned = std::make_unique<Instance>(inner);
    scanned->path.clear();
    scanned->scanLength = values[1].intValue;
    Value v;
    v.kind = Value::InstanceRef;
    v.instance = scanned.get();
    instances.push_back(std::move(scanned));
    return v;
  }

  auto typed = typeBuiltinOp(*builtin.op, call.range, args, diags);
  if (!typed || !checkResult(typed->type, call.range, builtin.name))
    return {};
  Node node;
  node.op = *builtin.op;
  for (const Value &v : values)
    if (v.kind == Value::Tensor)
      node.operands.push_back(v.node);
  node.type = typed->type;
  node.attrs = typed->attrs;
  node.loc = call.range;
  if (node.op == OpKind::dropout)
    node.operands.push_back(makeDropoutUniforms(ctx, typed->type, call.range));
  return Value::tensor(ctx.graph->add(node));
}

/// `Block(config...)`: a new instance, or the one this call site made before
/// when a forward function is inlined again.
Value Elaborator::instantiate(const BlockAST &block, const CallExpr &call, Scope &scope,
                              GraphContext &ctx) {
  Value result;
  result.kind = Value::InstanceRef;
  if (auto it = scope.owner->inlineInstances.find(&call); it != scope.owner->inlineInstances.end()) {
    result.instance = it->second;
    return result;
  }
  std::vector<SignatureParam> signature;
  for (const ConfigParamAST &c : block.config) {
    SignatureParam p;
    p.name = c.name;
    p.kind = argKindOf(c.kind);
    p.hasDefault = c.defaultValue != nullptr;
    signature.push_back(p);
  }
  auto bound = bindArguments(block.name, signature, call.args, call.range);
  if (!bound)
    return {};
  auto inst = std::make_unique<Instance>();
  inst->block = &block;
  // Defaults are evaluated in the block's own scope, after earlier parameters.
  Scope defaults{{}, inst.get(), &inst->axes, &inst->axisParams};
  for (size_t i = 0; i < block.config.size(); ++i) {
    const ConfigParamAST &c = block.config[i];
    const SignatureParam &p = signature[i];
    const Expr *given = (*bound)[i].second;
    Value v;
    if (given) {
      v = evalArgument(p, given, scope, ctx, call.range);
    } else if (c.defaultValue) {
      v = evalArgument(p, c.defaultValue.get(), defaults, ctx, call.range);
    } else {
      inst->axisParams[c.name] = ""; // an axis inferred at the first call
      continue;
    }
    if (!v.ok())
      return {};
    if (p.kind == ArgKind::Axis) {
      inst->axisParams[c.name] = v.text;
    } else {
      inst->config[c.name] = v;
      defaults.names[c.name] = v;
    }
  }
  result.instance = inst.get();
  scope.owner->inlineInstances[&call] = inst.get();
  instances.push_back(std::move(inst));
  return result;
}

Scope Elaborator::instanceScope(Instance &inst) {
  Scope scope{inst.config, &inst, &inst.axes, &inst.axisParams};
  for (const auto &[name, value] : inst.members)
    scope.names[name] = value;
  return scope;
}

/// Binds a forward function's declared argument types to the actual ones:
/// names (binding open axis parameters), dtypes and sizes.
bool Elaborator::bindForwardArgs(Instance &inst, const std::vector<TensorType> &types,
                                 const std::vector<Argument> &args) {
  const ForwardAST &fwd = inst.block->forwards[0];
  for (size_t i = 0; i < types.size(); ++i) {
    const TensorTypeAST &decl = fwd.args[i].type;
    const TensorType &actual = types[i];
    SMRange at = args[i].value->range;
    auto mismatch = [&](const std::string &why) {
      diags.error(at, "argument '" + fwd.args[i].name + "' of " + inst.block->name +
                          " expects " + dtypeName(decl.dtype).str() + printShape(decl.dims) +
                          ", got " + actual.str() + ": " + why);
      diags.note(fwd.args[i].range, "declared here");
      return false;
    };
    if (decl.dtype != actual.dtype)
      return mismatch("the element types differ");
    if (decl.dims.size() != actual.dims.size())
      return mismatch("the ranks differ");
    for (size_t d = 0; d < decl.dims.size(); ++d) {
      const DimAST &dim = decl.dims[d];
      const Dim &got = actual.dims[d];
      std::string axis = dim.name;
      if (auto it = inst.axisParams.find(dim.name); it != inst.axisParams.end()) {
        if (it->second.empty())
          it->second = got.axis; // inferred
        axis = it->second;
      }
      if (axis != got.axis)
        return mismatch("dimension " + std::to_string(d) + " is '" + got.axis + "', not '" +
                        axis + "'");
      Scope scope = instanceScope(inst);
      if (dim.size) {
        auto size = evalSize(*dim.size, scope);
        if (!size)
          return false;
        if (*size != got.size)
          return mismatch("'" + axis + "' must be " + std::to_string(*size));
      }
      auto known = inst.axes.sizes.find(axis);
      if (known != inst.axes.sizes.end() && known->second.first != got.size)
        return mismatch("'" + axis + "' is " + std::to_string(known->second.first) +
                        " elsewhere in this block");
      inst.axes.sizes.emplace(axis, std::make_pair(got.size, at));
    }
  }
  return true;
}

unsigned Elaborator::makeLeaf(GraphContext &ctx, const Node &leaf,
                              llvm::function_ref<void(const TensorType &)> declare) {
  if (!ctx.outer) {
    declare(leaf.type);
    return ctx.graph->add(leaf);
  }
  if (llvm::any_of(leaf.type.dims, [](const Dim &d) { return d.axis == kLayerAxis; }))
    diags.error(leaf.loc, "'" + leaf.name + "' " + leaf.type.str() + " already has an axis '" +
                              kLayerAxis + "', which scan adds to stack the layers; "
                              "rename that axis");
  Node stacked = leaf;
  stacked.type.dims.insert(stacked.type.dims.begin(), Dim{kLayerAxis, ctx.scanLength});
  checkSize(stacked.type, leaf.loc);
  ctx.scanOperands->push_back(makeLeaf(*ctx.outer, stacked, declare));
  Node slice = leaf;
  slice.op = OpKind::arg;
  unsigned id = ctx.graph->add(slice);
  ctx.graph->args.push_back(id);
  return id;
}

unsigned Elaborator::makeParam(GraphContext &ctx, const std::string &path,
                               const TensorType &type, const Initializer &init, SMRange loc) {
  Node node;
  node.op = OpKind::param;
  node.name = path;
  node.type = type;
  node.loc = loc;
  return makeLeaf(ctx, node, [&](const TensorType &whole) {
    Parameter param;
    param.path = path;
    param.type = whole;
    param.loc = loc;
    param.stacked = whole.dims.size() > type.dims.size();
    param.init = init;
    program.params.push_back(param);
  });
}

unsigned Elaborator::makeDropoutUniforms(GraphContext &ctx, const TensorType &type, SMRange loc) {
  Node node;
  node.op = OpKind::input;
  node.name = "dropout." + std::to_string(numDropouts++);
  node.type = type;
  node.loc = loc;
  return makeLeaf(ctx, node, [&](const TensorType &whole) {
    Input input;
    input.path = node.name;
    input.type = whole;
    input.loc = loc;
    input.stacked = whole.dims.size() > type.dims.size();
    input.dropoutUniforms = true;
    program.inputs.push_back(input);
  });
}

std::optional<Initializer> Elaborator::evalInitializer(const ParamDeclAST &decl,
                                                       const TensorType &type, Scope &scope) {
  Initializer init;
  if (!decl.init) {
    init.name = type.dims.size() >= 2 ? "lecun_normal" : "zeros";
    return init;
  }
  const Expr *callee = decl.init.get();
  const std::vector<Argument> *args = nullptr;
  if (callee->kind == ExprKind::Call) {
    args = &static_cast<const CallExpr *>(callee)->args;
    callee = static_cast<const CallExpr *>(callee)->callee.get();
  }
  const Builtin *b = callee->kind == ExprKind::Name
                         ? lookupBuiltin(static_cast<const NameExpr *>(callee)->name)
                         : nullptr;
  if (!b || b->category != BuiltinCategory::Initializer) {
    diags.error(callee->range, "unknown initialiser '" + printExpr(*callee) +
                                   "'; known: zeros, ones, constant, normal, uniform, "
                                   "xavier_normal, xavier_uniform, lecun_normal, he_normal");
    return std::nullopt;
  }
  init.name = b->name;
  static const std::vector<Argument> none;
  auto bound = bindArguments(b->name, b->params, args ? *args : none, decl.init->range);
  if (!bound)
    return std::nullopt;
  GraphContext noGraph{nullptr};
  for (auto &[param, expr] : *bound) {
    Value v = evalArgument(*param, expr, scope, noGraph, decl.init->range);
    if (!v.ok())
      return std::nullopt;
    init.args.emplace_back(param->name, v.floatValue);
  }
  bool fanBased = llvm::StringRef(init.name).contains("_normal") ||
                  llvm::StringRef(init.name).contains("_uniform");
  if (fanBased && type.dims.size() < 2) {
    diags.error(decl.init->range, init.name + " needs a parameter of at least 2 dimensions "
                                              "(fan in and fan out); '" + decl.name + "' is " +
                                              type.str());
    return std::nullopt;
  }
  return init;
}

/// First call: sub-instances (block lets) and parameters of an instance.
void Elaborator::createMembers(Instance &inst, GraphContext &ctx) {
  Scope scope = instanceScope(inst);
  for (const LetAST &l : inst.block->lets) {
    let(l, scope, ctx, inst.path);
    auto it = scope.names.find(l.name);
    if (it == scope.names.end())
      continue;
    if (it->second.kind != Value::InstanceRef) {
      diags.error(l.range, "a block-level let must create a block instance, like "
                           "`let dense = Dense(10)`; '" + l.name + "' is " +
                               describeKind(it->second));
      continue;
    }
    inst.members[l.name] = it->second;
  }
  for (const ParamDeclAST &p : inst.block->params) {
    inst.members[p.name] = Value(); // poisoned until it is created
    auto type = resolveType(p.type, scope, "parameter '" + p.name + "'");
    if (!type)
      continue;
    auto init = evalInitializer(p, *type, scope);
    if (!init)
      continue;
    inst.members[p.name] = Value::tensor(makeParam(ctx, inst.path + "." + p.name, *type, *init, p.range));
  }
}

/// Inlines the forward function of `inst` on `args` into ctx's graph.
std::optional<unsigned> Elaborator::inlineForward(Instance &inst, const std::vector<unsigned> &args,
                                                  GraphContext &ctx, SMRange call) {
  const ForwardAST &fwd = inst.block->forwards[0];
  if (llvm::is_contained(elaborating, inst.block)) {
    std::string chain;
    for (const BlockAST *b : elaborating)
      chain += b->name + " -> ";
    diags.error(call, "block '" + inst.block->name + "' uses itself: " + chain +
                          inst.block->name + " (recursive blocks are not supported)");
    return std::nullopt;
  }
  if (elaborating.size() >= kMaxBlockNesting) {
    diags.error(call, "blocks nested deeper than " + std::to_string(kMaxBlockNesting) +
                          " levels (each block's forward calls the next)");
    return std::nullopt;
  }
  elaborating.push_back(inst.block);
  auto result = inlineForwardBody(inst, args, ctx, call);
  elaborating.pop_back();
  return result;
}

std::optional<unsigned> Elaborator::inlineForwardBody(Instance &inst,
                                                      const std::vector<unsigned> &args,
                                                      GraphContext &ctx, SMRange call) {
  const ForwardAST &fwd = inst.block->forwards[0];
  if (!inst.elaborated) {
    inst.elaborated = true;
    createMembers(inst, ctx);
  }
  Scope scope = instanceScope(inst);
  for (size_t i = 0; i < args.size(); ++i)
    scope.names[fwd.args[i].name] = Value::tensor(args[i]);
  for (const LetAST &l : fwd.lets) {
    if (scope.names.count(l.name)) {
      diags.error(l.range, "duplicate definition of '" + l.name + "' in block '" +
                               inst.block->name + "'");
      continue;
    }
    let(l, scope, ctx, inst.path);
  }
  Value result = eval(*fwd.resultValue, scope, ctx);
  if (!result.ok())
    return std::nullopt;
  if (result.kind != Value::Tensor) {
    diags.error(fwd.resultValue->range, "the forward function must return a tensor, not " +
                                            describeKind(result));
    return std::nullopt;
  }
  // The declared result type fixes dtype, axis names and any explicit size.
  const TensorType &got = typeOf(ctx, result.node);
  bool ok = got.dtype == fwd.result.dtype && got.dims.size() == fwd.result.dims.size();
  for (size_t d = 0; ok && d < got.dims.size(); ++d) {
    const DimAST &dim = fwd.result.dims[d];
    auto axis = resolveAxisName(dim.name, dim.range, scope);
    ok = axis && *axis == got.dims[d].axis;
    if (ok && dim.size) {
      auto size = evalSize(*dim.size, scope);
      ok = size && *size == got.dims[d].size;
    }
  }
  if (!ok) {
    diags.error(fwd.returnRange, inst.block->name + " returns " + got.str() +
                                     ", but its forward function declares " +
                                     dtypeName(fwd.result.dtype).str() +
                                     printShape(fwd.result.dims));
    diags.note(call, "in the call from here");
    return std::nullopt;
  }
  return result.node;
}

Value Elaborator::callInstance(Instance &inst, const CallExpr &call, Scope &scope,
                               GraphContext &ctx) {
  if (!ctx.graph) {
    diags.error(call.range, "a block cannot be called in a compile-time value");
    return {};
  }
  const ForwardAST &fwd = inst.block->forwards[0];
  std::vector<unsigned> args;
  std::vector<TensorType> types;
  for (const Argument &a : call.args) {
    if (!a.name.empty()) {
      diags.error(a.nameRange, "forward arguments are positional");
      return {};
    }
    Value v = eval(*a.value, scope, ctx);
    if (!v.ok())
      return {};
    if (v.kind != Value::Tensor) {
      diags.error(a.value->range, "a block is called on tensors, got " + describeKind(v));
      return {};
    }
    args.push_back(v.node);
    types.push_back(typeOf(ctx, v.node));
  }
  if (args.size() != fwd.args.size()) {
    diags.error(call.range, inst.block->name + "'s forward function takes " +
                                std::to_string(fwd.args.size()) + " argument(s), got " +
                                std::to_string(args.size()));
    return {};
  }
  if (inst.path.empty()) {
    std::string base = inst.block->name + "_" + std::to_string(scope.owner->autoNames[inst.block->name]++);
    inst.path = scope.owner->path.empty() ? base : scope.owner->path + "." + base;
    usedPaths.insert(inst.path);
  }
  if (!inst.argTypes.empty()) {
    if (inst.argTypes != types) {
      diags.error(call.range, "'" + inst.path + "' is called with " + types[0].str() +
                                  " here, but with " + inst.argTypes[0].str() +
                                  " before; a block instance has one set of parameters");
      diags.note(inst.firstCall, "first called here");
      return {};
    }
  } else {
    if (!bindForwardArgs(inst, types, call.args))
      return {};
    inst.argTypes = types;
    inst.firstCall = call.range;
  }

  if (!inst.scanLength) {
    auto node = inlineForward(inst, args, ctx, call.range);
    return node ? Value::tensor(*node) : Value();
  }

  // scan: one body graph, called on the carry with the stacked parameters.
  if (fwd.args.size() != 1) {
    diags.error(call.range, "a scanned block's forward function must take one argument (the "
                            "carry); " + inst.block->name + "'s takes " +
                                std::to_string(fwd.args.size()));
    return {};
  }
  if (ctx.outer) {
    diags.error(call.range, "scan inside a scanned block is not supported");
    return {};
  }
  if (!inst.scanBody) {
    inst.scanBody = std::make_shared<Graph>();
    GraphContext body{inst.scanBody.get(), &ctx, inst.scanLength, &inst.scanOperands};
    Node carry;
    carry.op = OpKind::arg;
    carry.name = fwd.args[0].name;
    carry.type = types[0];
    carry.loc = fwd.args[0].range;
    unsigned carryId = inst.scanBody->add(carry);
    inst.scanBody->args.push_back(carryId);
    auto result = inlineForward(inst, {carryId}, body, call.range);
    if (!result) {
      inst.scanBody.reset();
      return {};
    }
    if (inst.scanBody->nodes[*result].type != types[0]) {
      diags.error(call.range, "a scanned block must return the type it takes: " +
                                  inst.block->name + " maps " + types[0].str() + " to " +
                                  inst.scanBody->nodes[*result].type.str());
      return {};
    }
    inst.scanBody->result = *result;
  }
  Node node;
  node.op = OpKind::scan;
  node.attrs["instance"] = inst.path; // the name is the let's, as for any value
  node.operands = {args[0]};
  node.operands.insert(node.operands.end(), inst.scanOperands.begin(), inst.scanOperands.end());
  node.type = types[0];
  node.loc = call.range;
  node.body = inst.scanBody;
  node.attrs["length"] = inst.scanLength;
  return Value::tensor(ctx.graph->add(node));
}

} // namespace

std::optional<TypedProgram> shardc::analyzeModel(const std::string &modelPath,
                                                 const SemaOptions &options,
                                                 DiagnosticEngine &diags) {
  TypedProgram program;
  if (!Elaborator(options, diags, program).run(modelPath))
    return std::nullopt;
  collectOutputs(program);
  return program;
}
