//===- TensorExpr.cpp - the tensor graph of an expression -----------------===//
//
// Operators and builtin calls on tensors become typed nodes of the graph
// being built (the model's, or a scan body's); a number next to a tensor
// becomes a scalar constant of the tensor's type. Literals, shapes and
// arithmetic on numbers are compile-time values even here.
//
//===----------------------------------------------------------------------===//

#include "ElaborateImpl.h"
#include "OpTyping.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace shardc;
using namespace shardc::sema;

Value Elaborator::evalInGraph(const Expr &expr, Scope &scope, GraphContext &ctx) {
  return llvm::TypeSwitch<const Expr *, Value>(&expr)
      .Case<NameExpr>([&](const NameExpr *name) { return evalName(*name, scope); })
      .Case<CallExpr>([&](const CallExpr *call) { return evalCallInGraph(*call, scope, ctx); })
      .Case<NegExpr>([&](const NegExpr *neg) { return evalNegInGraph(*neg, scope, ctx); })
      .Case<BinaryExpr>([&](const BinaryExpr *bin) { return evalBinaryInGraph(*bin, scope, ctx); })
      // Literals and shapes are compile-time values wherever they appear.
      .Default([&](const Expr *) { return evalConstant(expr, scope); });
}

Value Elaborator::evalCallInGraph(const CallExpr &call, Scope &scope, GraphContext &ctx) {
  Value callee = evalInGraph(*call.callee, scope, ctx);
  switch (callee.kind) {
  case Value::None:
    return {};
  case Value::BuiltinRef:
    return callBuiltin(*callee.builtin, call, scope, ctx);
  case Value::BlockRef:
    return instantiate(*callee.block, call, scope, graphEvaluator(ctx));
  case Value::InstanceRef:
    return callInstance(*callee.instance, call, scope, ctx);
  default:
    return reportNotCallable(call, callee);
  }
}

Value Elaborator::evalNegInGraph(const NegExpr &neg, Scope &scope, GraphContext &ctx) {
  Value v = evalInGraph(*neg.operand, scope, ctx);
  if (v.kind != Value::Tensor)
    return negateConstant(v, neg.range);
  const TensorType &t = typeOf(ctx, v.node);
  if (t.dtype == DType::Bool) {
    diags.error(neg.range, "cannot negate a bool tensor " + t.str());
    return {};
  }
  Node node;
  node.op = OpKind::neg;
  node.operands = {v.node};
  node.type = t;
  node.loc = neg.range;
  return Value::tensor(ctx.graph->add(node));
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
    diags.error(range, std::to_string(v.intValue) +
                           " does not fit in i32, the type of the tensor beside it");
    return {};
  }
  Node node;
  node.op = OpKind::constant;
  node.type = TensorType{dtype, {}};
  node.loc = range;
  node.attrs["value"] = v.floatValue;
  return Value::tensor(ctx.graph->add(node));
}

Value Elaborator::evalBinaryInGraph(const BinaryExpr &bin, Scope &scope, GraphContext &ctx) {
  Value lhs = evalInGraph(*bin.lhs, scope, ctx);
  Value rhs = evalInGraph(*bin.rhs, scope, ctx);
  if (!lhs.ok() || !rhs.ok())
    return {};
  // Compile-time arithmetic on config values: `depth * 4`.
  if (lhs.isNumber() && rhs.isNumber())
    return foldArithmetic(bin, lhs, rhs);
  if (!checkArithmeticOperand(bin, *bin.lhs, lhs) || !checkArithmeticOperand(bin, *bin.rhs, rhs))
    return {};
  // A number next to a tensor becomes a scalar constant of the tensor's type.
  auto promote = [&](Value &side, const Expr &expr, const Value &other, const char *which) {
    if (!side.isNumber())
      return true;
    if (bin.op == BinaryOp::MatMul) {
      diags.error(expr.range, llvm::Twine("'@' needs a tensor on the ") + which + ", got a number");
      return false;
    }
    side = scalarToTensor(side, typeOf(ctx, other.node).dtype, expr.range, ctx);
    return side.ok();
  };
  if (!promote(lhs, *bin.lhs, rhs, "left") || !promote(rhs, *bin.rhs, lhs, "right"))
    return {};
  std::string spelled = binaryOpSpelling(bin.op).str();
  auto type =
      typeBinaryOp(bin.op, bin.opRange, typeOf(ctx, lhs.node), typeOf(ctx, rhs.node), diags);
  if (!type || !checkResult(*type, bin.range, "'" + spelled + "'"))
    return {};
  Node node;
  node.op = binaryOpKind(bin.op);
  node.operands = {lhs.node, rhs.node};
  node.type = *type;
  node.loc = bin.range;
  return Value::tensor(ctx.graph->add(node));
}

Value Elaborator::callBuiltin(const Builtin &builtin, const CallExpr &call, Scope &scope,
                              GraphContext &ctx) {
  auto bound = bindArguments(builtin.name, builtin.params, call.args, call.range);
  if (!bound)
    return {};
  std::vector<OpArg> args;
  std::vector<Value> values;
  // where(c, x, 0): a branch may be a number, a constant of the other branch's type.
  bool numberBranches = builtin.op == OpKind::where;
  for (auto &[param, expr] : *bound) {
    Value v = numberBranches && param->name != "cond"
                  ? evalInGraph(*expr, scope, ctx)
                  : evalArgument(*param, expr, scope, graphEvaluator(ctx), call.range);
    if (!v.ok())
      return {};
    OpArg arg;
    arg.range = expr ? expr->range : call.range;
    if (v.kind == Value::Tensor)
      arg.tensor = typeOf(ctx, v.node);
    arg.intValue = v.intValue;
    arg.floatValue = v.floatValue;
    arg.boolValue = v.boolValue;
    arg.stringValue = v.text;
    arg.shape = v.shape;
    args.push_back(arg);
    values.push_back(v);
  }

  if (builtin.op == OpKind::scan)
    return scanInstance(call, *values[0].instance, values[1].intValue);
  if (numberBranches && !promoteNumberBranches(args, values, ctx))
    return {};

  auto typed = typeBuiltinOp(*builtin.op, call.range, args, diags);
  if (!typed || !checkResult(typed->type, call.range, builtin.name))
    return {};
  Node node;
  node.op = *builtin.op == OpKind::cache ? OpKind::rename : *builtin.op;
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

/// where's branches (arguments 1 and 2): a number becomes a scalar constant of the
/// other branch's element type; one of them must be a tensor.
bool Elaborator::promoteNumberBranches(std::vector<OpArg> &args, std::vector<Value> &values,
                                       GraphContext &ctx) {
  for (unsigned i : {1u, 2u}) {
    Value &branch = values[i], &other = values[3 - i];
    if (branch.kind == Value::Tensor)
      continue;
    if (!branch.isNumber() || other.kind != Value::Tensor) {
      diags.error(args[i].range, "where: the branches must be tensors (one of them may be a "
                                 "number), got " +
                                     describeKind(branch));
      return false;
    }
    branch = scalarToTensor(branch, typeOf(ctx, other.node).dtype, args[i].range, ctx);
    if (!branch.ok())
      return false;
    args[i].tensor = typeOf(ctx, branch.node);
  }
  return true;
}

bool Elaborator::checkSize(const TensorType &type, SMRange at) {
  if (type.numElements() <= kMaxTensorElements)
    return true;
  diags.error(at, "the tensor " + type.str() +
                      " has more than 2^48 elements, the most shardc "
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
