//===- Instantiate.cpp - calls, block instances, scan stacking ------------===//
//
// A call's arguments are bound to the callee's signature (builtins, blocks,
// initialisers and optimizers alike). A block instance is elaborated at its
// first call: forward arguments bind axis sizes and inferable `axis`
// parameters, then sub-instances and parameters are created, then the
// forward body is inlined. A `scan` instance elaborates its body once into a
// graph of its own; its parameters (and its dropouts' inputs) are stacked
// along a leading `layer` axis.
//
//===----------------------------------------------------------------------===//

#include "ElaborateImpl.h"

#include "llvm/ADT/STLExtras.h"

using namespace shardc;
using namespace shardc::sema;

// Elaboration recurses once per nested block instance; this bounds it far
// inside the compiler's stack (see kMaxTreeDepth in the parser).
static constexpr size_t kMaxBlockNesting = 256;

//===----------------------------------------------------------------------===//
// Arguments
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
        diags.error(arg.value->range,
                    "positional argument after a named one in the call to '" + callee + "'");
        ok = false;
        continue;
      }
      if (position < signature.size() && signature[position].keywordOnly) {
        std::string positional, named;
        for (const SignatureParam &p : signature)
          (p.keywordOnly ? named : positional) +=
              ((p.keywordOnly ? named : positional).empty() ? "" : ", ") + p.name;
        diags.error(arg.value->range,
                    "too many positional arguments to '" + callee + "': it takes " +
                        std::to_string(position) + " (" + positional + "); " + named +
                        " are passed by name, as in " + signature[position].name + " = ...");
        return std::nullopt;
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
      diags.error(arg.nameRange,
                  "'" + callee + "' has no parameter named '" + arg.name + "'" +
                      (names.empty() ? "; it takes none" : "; its parameters are " + names));
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
                               Evaluator evaluate, SMRange call) {
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
    const auto *name = llvm::dyn_cast<NameExpr>(expr);
    if (!name) {
      diags.error(expr->range, "argument '" + param.name + "' is an axis: write an axis name");
      return {};
    }
    auto axis = resolveAxisName(name->name, expr->range, scope);
    if (!axis)
      return {};
    Value v;
    v.kind = Value::Axis;
    v.text = *axis;
    return v;
  }
  Value v = evaluate(*expr, scope);
  if (!v.ok())
    return {};
  auto mismatch = [&]() -> Value {
    diags.error(expr->range,
                "argument '" + param.name + "' must be " +
                    (param.kind == ArgKind::Int     ? "an int"
                     : param.kind == ArgKind::Float ? "a float"
                                                    : "a " + argKindName(param.kind).str()) +
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

//===----------------------------------------------------------------------===//
// Block instances
//===----------------------------------------------------------------------===//

Value Elaborator::reportNotCallable(const CallExpr &call, const Value &callee) {
  diags.error(call.callee->range, "'" + printExpr(*call.callee) + "' is " + describeKind(callee) +
                                      ", not something to call");
  return {};
}

/// `Block(config...)`: a new instance, or the one this call site made before
/// when a forward function is inlined again.
Value Elaborator::instantiate(const BlockAST &block, const CallExpr &call, Scope &scope,
                              Evaluator evaluate) {
  Value result;
  result.kind = Value::InstanceRef;
  if (auto it = scope.owner->inlineInstances.find(&call);
      it != scope.owner->inlineInstances.end()) {
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
      v = evalArgument(p, given, scope, evaluate, call.range);
    } else if (c.defaultValue) {
      v = evalArgument(p, c.defaultValue.get(), defaults, evaluate, call.range);
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

Value Elaborator::scanInstance(const CallExpr &call, const Instance &inner, int64_t length) {
  if (inner.scanLength) {
    diags.error(call.args[0].value->range, "scan of a scanned block is not supported");
    return {};
  }
  if (inner.elaborated) {
    diags.error(call.args[0].value->range,
                "scan needs a fresh block instance; '" + inner.path + "' has already been called");
    return {};
  }
  if (length < 1) {
    diags.error(call.args[1].value->range,
                "scan length must be at least 1, got " + std::to_string(length));
    return {};
  }
  auto scanned = std::make_unique<Instance>(inner);
  scanned->path.clear();
  scanned->scanLength = length;
  Value v;
  v.kind = Value::InstanceRef;
  v.instance = scanned.get();
  instances.push_back(std::move(scanned));
  return v;
}

Scope Elaborator::instanceScope(Instance &inst) {
  Scope scope{inst.config, &inst, &inst.axes, &inst.axisParams};
  for (const auto &[name, value] : inst.members)
    scope.names[name] = value;
  return scope;
}

//===----------------------------------------------------------------------===//
// Forward functions
//===----------------------------------------------------------------------===//

Value Elaborator::callInstance(Instance &inst, const CallExpr &call, Scope &scope,
                               GraphContext &ctx) {
  const ForwardAST &fwd = inst.block->forwards[0];
  std::vector<unsigned> args;
  std::vector<TensorType> types;
  for (const Argument &a : call.args) {
    if (!a.name.empty()) {
      diags.error(a.nameRange, "forward arguments are positional");
      return {};
    }
    Value v = evalInGraph(*a.value, scope, ctx);
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
    std::string base =
        inst.block->name + "_" + std::to_string(scope.owner->autoNames[inst.block->name]++);
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
                            "carry); " +
                                inst.block->name + "'s takes " + std::to_string(fwd.args.size()));
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
      diags.error(call.range, "a scanned block must return the type it takes: " + inst.block->name +
                                  " maps " + types[0].str() + " to " +
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
      diags.error(at, "argument '" + fwd.args[i].name + "' of " + inst.block->name + " expects " +
                          dtypeName(decl.dtype).str() + printShape(decl.dims) + ", got " +
                          actual.str() + ": " + why);
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
        return mismatch("dimension " + std::to_string(d) + " is '" + got.axis + "', not '" + axis +
                        "'");
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

/// Inlines the forward function of `inst` on `args` into ctx's graph.
std::optional<unsigned> Elaborator::inlineForward(Instance &inst, const std::vector<unsigned> &args,
                                                  GraphContext &ctx, SMRange call) {
  if (llvm::is_contained(elaborating, inst.block)) {
    std::string chain;
    for (const BlockAST *b : elaborating)
      chain += b->name + " -> ";
    diags.error(call, "block '" + inst.block->name + "' uses itself: " + chain + inst.block->name +
                          " (recursive blocks are not supported)");
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
  // The terms in source order among the lets: each sees the lets before it.
  auto term = fwd.terms.begin();
  auto addTermsAfter = [&](size_t lets) {
    for (; term != fwd.terms.end() && term->afterLets == lets; ++term)
      addBlockTerm(inst, *term, scope, ctx);
  };
  for (const auto &[i, l] : llvm::enumerate(fwd.lets)) {
    addTermsAfter(i);
    if (scope.names.count(l.name)) {
      diags.error(l.range,
                  "duplicate definition of '" + l.name + "' in block '" + inst.block->name + "'");
      continue;
    }
    let(l, scope, ctx, inst.path);
  }
  addTermsAfter(fwd.lets.size());
  Value result = evalInGraph(*fwd.resultValue, scope, ctx);
  if (!result.ok())
    return std::nullopt;
  if (result.kind != Value::Tensor) {
    diags.error(fwd.resultValue->range,
                "the forward function must return a tensor, not " + describeKind(result));
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

void Elaborator::addBlockTerm(const Instance &inst, const BlockTermAST &term, Scope &scope,
                              GraphContext &ctx) {
  const std::string what = std::string(term.isLoss ? "loss" : "metric") + " '" + term.name + "'";
  Value v = evalInGraph(*term.value, scope, ctx);
  if (!v.ok())
    return;
  if (v.kind != Value::Tensor) {
    diags.error(term.value->range, what + " must be a scalar f32, got " + describeKind(v));
    return;
  }
  const TensorType &type = typeOf(ctx, v.node);
  if (type.dtype != DType::F32 || !type.dims.empty()) {
    diags.error(term.value->range,
                what + " must be a scalar f32, got " + type.str() +
                    (type.dims.empty() ? "" : "; reduce it with sum(...) or mean(...)"));
    return;
  }
  ctx.graph->terms.push_back({inst.path + "." + term.name, term.isLoss, v.node, term.range});
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
                           "`let dense = Dense(10)`; '" +
                               l.name + "' is " + describeKind(it->second));
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
    inst.members[p.name] =
        Value::tensor(makeParam(ctx, inst.path + "." + p.name, *type, *init, p.range));
  }
}

//===----------------------------------------------------------------------===//
// Parameters and leaves
//===----------------------------------------------------------------------===//

unsigned Elaborator::makeLeaf(GraphContext &ctx, const Node &leaf,
                              llvm::function_ref<void(const TensorType &)> declare) {
  if (!ctx.outer) {
    declare(leaf.type);
    return ctx.graph->add(leaf);
  }
  if (llvm::any_of(leaf.type.dims, [](const Dim &d) { return d.axis == kLayerAxis; }))
    diags.error(leaf.loc, "'" + leaf.name + "' " + leaf.type.str() + " already has an axis '" +
                              kLayerAxis +
                              "', which scan adds to stack the layers; "
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

unsigned Elaborator::makeParam(GraphContext &ctx, const std::string &path, const TensorType &type,
                               const Initializer &init, SMRange loc) {
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
  if (const auto *call = llvm::dyn_cast<CallExpr>(callee)) {
    args = &call->args;
    callee = call->callee.get();
  }
  const auto *name = llvm::dyn_cast<NameExpr>(callee);
  const Builtin *b = name ? lookupBuiltin(name->name) : nullptr;
  if (!b || b->category != BuiltinCategory::Initializer) {
    diags.error(callee->range, "unknown initialiser '" + printExpr(*callee) +
                                   "'; known: " + builtinNames(BuiltinCategory::Initializer));
    return std::nullopt;
  }
  init.name = b->name;
  static const std::vector<Argument> none;
  auto bound = bindArguments(b->name, b->params, args ? *args : none, decl.init->range);
  if (!bound)
    return std::nullopt;
  for (auto &[param, expr] : *bound) {
    Value v = evalArgument(*param, expr, scope, constantEvaluator(), decl.init->range);
    if (!v.ok())
      return std::nullopt;
    init.args.emplace_back(param->name, v.floatValue);
  }
  bool fanBased = llvm::StringRef(init.name).contains("_normal") ||
                  llvm::StringRef(init.name).contains("_uniform");
  if (fanBased && type.dims.size() < 2) {
    diags.error(decl.init->range, init.name +
                                      " needs a parameter of at least 2 dimensions "
                                      "(fan in and fan out); '" +
                                      decl.name + "' is " + type.str());
    return std::nullopt;
  }
  return init;
}
