//===- Elaborate.cpp - the model, statement by statement ------------------===//
//
// A model's config, inputs and lets are evaluated in source order into the
// program's graph, then its loss, metrics and optimizer. A `let` names its
// value (an instance's path, a tensor's node) and applies its sharding
// constraint.
//
//===----------------------------------------------------------------------===//

#include "ElaborateImpl.h"
#include "shardrt/program_limits.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace shardc;
using namespace shardc::sema;

/// Names the driver's metrics lines already use (the loss is written as "loss").
static bool isMetricsLineKey(llvm::StringRef name) {
  std::string_view key(name.data(), name.size());
  return key == "loss" || llvm::is_contained(shardrt::kTrainLineKeys, key) ||
         llvm::is_contained(shardrt::kEvalLineKeys, key);
}

std::string sema::describeKind(const Value &v) {
  switch (v.kind) {
  case Value::None:
    return "an invalid value";
  case Value::Tensor:
    return "a tensor";
  case Value::Int:
    return "an int";
  case Value::Float:
    return "a float";
  case Value::Bool:
    return "a bool";
  case Value::String:
    return "a string";
  case Value::Axis:
    return "an axis";
  case Value::Shape:
    return "a shape";
  case Value::InstanceRef:
    return "a block instance";
  case Value::BlockRef:
    return "a block";
  case Value::BuiltinRef:
    return "a builtin";
  }
  return "?";
}

ArgKind sema::argKindOf(ScalarKind kind) {
  switch (kind) {
  case ScalarKind::Int:
    return ArgKind::Int;
  case ScalarKind::Float:
    return ArgKind::Float;
  case ScalarKind::Bool:
    return ArgKind::Bool;
  case ScalarKind::String:
    return ArgKind::String;
  case ScalarKind::Axis:
    return ArgKind::Axis;
  }
  return ArgKind::Int;
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

bool Elaborator::elaborateModel(const ModelAST &model) {
  unsigned errorsBefore = diags.errorCount();
  program.modelName = model.name;
  AxisEnv axes;
  Scope scope{{}, &modelOwner, &axes, nullptr};
  GraphContext ctx{&program.graph};
  auto evaluate = graphEvaluator(ctx);

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
    auto set = llvm::find_if(overrides, [&](const ConfigOverride &o) { return o.name == c.name; });
    SignatureParam sig{c.name, argKindOf(c.kind), /*hasDefault=*/false, /*defaultText=*/""};
    Value v = set != overrides.end()
                  ? overriddenConfig(c, *set)
                  : evalArgument(sig, c.defaultValue.get(), scope, evaluate, c.range);
    if (v.ok())
      declare(c.name, c.range, v);
  }
  checkOverridesUsed(model);

  for (const InputAST &in : model.inputs) {
    // The runtime fills f32 (data, normal, uniform) and i32 (labels, integers).
    if (in.type.dtype == DType::Bool) {
      diags.error(in.type.range, "input '" + in.name +
                                     "' must be f32 or i32, not bool; "
                                     "compare an i32 input with a number for a mask");
      scope.names.emplace(in.name, Value());
      continue;
    }
    auto type = resolveType(in.type, scope, "input '" + in.name + "'", /*isModelInput=*/true);
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
    program.inputs.push_back(input);
  }

  for (const LetAST &l : model.lets) {
    if (scope.names.count(l.name)) {
      diags.error(l.range,
                  "duplicate definition of '" + l.name + "' in model '" + model.name + "'");
      continue;
    }
    let(l, scope, ctx, "");
  }

  // The loss is an f32 scalar; a metric is an f32 or i32 scalar.
  auto scalar = [&](const Expr &expr, llvm::StringRef what, bool intOk) -> std::optional<unsigned> {
    Value v = evalInGraph(expr, scope, ctx);
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
      diags.error(expr.range,
                  what + " must be " + (intOk ? "f32[] or i32[]" : "f32[]") + ", got " + t.str());
      return std::nullopt;
    }
    return v.node;
  };

  for (SMRange named : model.namedLosses)
    diags.error(named, "a named loss is a block's loss term, declared in its forward function; "
                       "the model's loss is `loss <expr>`, without a name");
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
      diags.error(opt.range, "unknown optimizer '" + opt.name +
                                 "'; known: " + builtinNames(BuiltinCategory::Optimizer));
      continue;
    }
    auto bound = bindArguments(opt.name, b->params, opt.args, opt.range);
    if (!bound)
      continue;
    Optimizer result{*b->optimizer, {}, opt.range};
    for (auto &[param, expr] : *bound) {
      Value v = evalArgument(*param, expr, scope, evaluate, opt.range);
      if (!v.ok())
        continue;
      // The others may be 0: a schedule, clipping or weight decay off, no momentum.
      const bool mayBeZero = param->name != "lr";
      if (expr && (v.floatValue < 0 || (v.floatValue == 0 && !mayBeZero)))
        diags.error(expr->range, "optimizer hyperparameter '" + param->name + "' must be " +
                                     (mayBeZero ? "0 or more" : "positive"));
      result.hyperparameters.emplace_back(param->name, v.floatValue);
    }
    program.optimizer = result;
  }
  elaborateGenerate(model, scope);
  return diags.errorCount() == errorsBefore;
}

Value Elaborator::overriddenConfig(const ConfigParamAST &param, const ConfigOverride &set) {
  llvm::StringRef text = set.value;
  Value v;
  int64_t integer = 0;
  double number = 0;
  switch (param.kind) {
  case ScalarKind::Int:
    if (!text.getAsInteger(10, integer)) {
      v.kind = Value::Int;
      v.intValue = integer;
    }
    break;
  case ScalarKind::Float:
    if (!text.getAsDouble(number)) {
      v.kind = Value::Float;
      v.floatValue = number;
    }
    break;
  case ScalarKind::Bool:
    if (text == "true" || text == "false") {
      v.kind = Value::Bool;
      v.boolValue = text == "true";
    }
    break;
  case ScalarKind::String:
    v.kind = Value::String;
    v.text = text.str();
    break;
  case ScalarKind::Axis:
    break; // a model takes no axis parameters (reported at the declaration)
  }
  if (!v.ok())
    diags.error(set.valueRange,
                "'" + param.name + "' is " + (param.kind == ScalarKind::Int ? "an " : "a ") +
                    argKindName(argKindOf(param.kind)) + ", not '" + set.value + "'");
  return v;
}

void Elaborator::checkOverridesUsed(const ModelAST &model) {
  for (const ConfigOverride &set : overrides) {
    if (llvm::any_of(model.config, [&](const ConfigParamAST &c) { return c.name == set.name; }))
      continue;
    std::vector<std::string> names;
    for (const ConfigParamAST &c : model.config)
      names.push_back(c.name);
    std::string nearest = nearestName(set.name, names);
    diags.error(set.nameRange,
                "model '" + model.name + "' has no config parameter '" + set.name + "'" +
                    (!nearest.empty() ? "; did you mean '" + nearest + "'?" : "") +
                    (names.empty() ? " (it takes none: model " + model.name +
                                         "(name: int = 1) "
                                         "declares one)"
                                   : " (its parameters: " + llvm::join(names, ", ") + ")"));
  }
}

/// `let name = value [: constraint]` in a model, block or forward function.
void Elaborator::let(const LetAST &l, Scope &scope, GraphContext &ctx, const std::string &prefix) {
  Value v = evalInGraph(*l.value, scope, ctx);
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
                                         " does not match the axes of '" + l.name +
                                         "': " + type.str());
      return;
    }
    for (size_t i = 0; i < l.constraint->size(); ++i) {
      const DimAST &d = (*l.constraint)[i];
      if (!d.size)
        continue;
      auto size = evalSize(*d.size, scope);
      if (size && inputSplit && names[i] == program.microbatchAxis)
        size = splitSize(names[i], *size, d.range, "the constraint " + printShape(*l.constraint));
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
