//===- ConstEval.cpp - compile-time values --------------------------------===//
//
// The values known before any tensor exists: numbers with checked integer
// arithmetic, strings, bools, names, axis names with their sizes, shapes and
// the tensor types of declarations. Axis sizes and initialiser arguments are
// evaluated here only; the tensor builder hands literals and shapes here and
// folds arithmetic on numbers with the same code.
//
//===----------------------------------------------------------------------===//

#include "ElaborateImpl.h"

#include "llvm/Support/CheckedArithmetic.h"

using namespace shardc;
using namespace shardc::sema;
using llvm::cast;

//===----------------------------------------------------------------------===//
// Names and expressions
//===----------------------------------------------------------------------===//

Value Elaborator::evalConstant(const Expr &expr, Scope &scope) {
  switch (expr.kind) {
  case ExprKind::Name: {
    const auto &name = cast<NameExpr>(expr);
    Value v = evalName(name, scope);
    if (v.kind == Value::Tensor) {
      diags.error(expr.range,
                  "'" + name.name + "' is a tensor; a compile-time value is needed here");
      return {};
    }
    return v;
  }
  case ExprKind::Int: {
    Value v;
    v.kind = Value::Int;
    v.intValue = cast<IntExpr>(expr).value;
    v.floatValue = v.intValue;
    return v;
  }
  case ExprKind::Float: {
    Value v;
    v.kind = Value::Float;
    v.floatValue = cast<FloatExpr>(expr).value;
    return v;
  }
  case ExprKind::String: {
    Value v;
    v.kind = Value::String;
    v.text = cast<StringExpr>(expr).value;
    return v;
  }
  case ExprKind::Bool: {
    Value v;
    v.kind = Value::Bool;
    v.boolValue = cast<BoolExpr>(expr).value;
    return v;
  }
  case ExprKind::Shape:
    return evalShape(cast<ShapeExpr>(expr).dims, scope);
  case ExprKind::Call:
    return evalConstantCall(cast<CallExpr>(expr), scope);
  case ExprKind::Neg:
    return negateConstant(evalConstant(*cast<NegExpr>(expr).operand, scope), expr.range);
  case ExprKind::Binary: {
    const auto &bin = cast<BinaryExpr>(expr);
    Value lhs = evalConstant(*bin.lhs, scope);
    Value rhs = evalConstant(*bin.rhs, scope);
    // With no tensors here, operands that pass the check are numbers.
    if (!lhs.ok() || !rhs.ok() || !checkArithmeticOperand(bin, *bin.lhs, lhs) ||
        !checkArithmeticOperand(bin, *bin.rhs, rhs))
      return {};
    return foldArithmetic(bin, lhs, rhs);
  }
  }
  return {};
}

/// A compile-time value can create a block instance (an argument of another
/// block); builtins and forward functions only make tensors.
Value Elaborator::evalConstantCall(const CallExpr &call, Scope &scope) {
  Value callee = evalConstant(*call.callee, scope);
  switch (callee.kind) {
  case Value::None:
    return {};
  case Value::BuiltinRef:
    diags.error(call.range,
                "'" + callee.builtin->name + "' cannot be used in a compile-time value");
    return {};
  case Value::BlockRef:
    return instantiate(*callee.block, call, scope, constantEvaluator());
  case Value::InstanceRef:
    diags.error(call.range, "a block cannot be called in a compile-time value");
    return {};
  default:
    return reportNotCallable(call, callee);
  }
}

std::string Elaborator::suggest(llvm::StringRef name, const Scope &scope) {
  std::vector<std::string> candidates;
  for (const auto &entry : scope.names)
    candidates.push_back(entry.first);
  for (const auto &entry : blocks)
    candidates.push_back(entry.first);
  for (const Builtin &b : allBuiltins())
    candidates.push_back(b.name);
  std::string best = nearestName(name, candidates);
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
      diags.error(name.range,
                  "'" + name.name + "' is " +
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
    diags.error(name.range, "'" + name.name +
                                "' is an axis parameter; it names an axis "
                                "in shapes, not a value");
    return {};
  }
  diags.error(name.range, "unknown identifier '" + name.name + "'" + suggest(name.name, scope));
  return {};
}

//===----------------------------------------------------------------------===//
// Numbers
//===----------------------------------------------------------------------===//

Value Elaborator::negateConstant(Value v, SMRange range) {
  if (v.kind == Value::Int) {
    std::optional<int64_t> negated = llvm::checkedMul<int64_t>(v.intValue, -1);
    if (!negated) {
      diags.error(range, "integer overflow: -(" + std::to_string(v.intValue) +
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
  if (v.ok())
    diags.error(range, "cannot negate " + describeKind(v));
  return {};
}

bool Elaborator::checkArithmeticOperand(const BinaryExpr &bin, const Expr &operand,
                                        const Value &v) {
  if (v.kind == Value::Tensor || v.isNumber())
    return true;
  diags.error(operand.range, "'" + binaryOpSpelling(bin.op).str() +
                                 "' needs a tensor or a number, got " + describeKind(v));
  return false;
}

Value Elaborator::foldArithmetic(const BinaryExpr &bin, const Value &lhs, const Value &rhs) {
  assert(lhs.isNumber() && rhs.isNumber() && "arithmetic on non-numbers");
  std::string spelled = binaryOpSpelling(bin.op).str();
  Value r;
  bool ints = lhs.kind == Value::Int && rhs.kind == Value::Int;
  double a = lhs.floatValue, b = rhs.floatValue;
  // Integers are checked: a result outside 64 bits is an error, never a wrap.
  std::optional<int64_t> exact = 0;
  switch (bin.op) {
  case BinaryOp::Add:
    r.floatValue = a + b;
    exact = llvm::checkedAdd(lhs.intValue, rhs.intValue);
    break;
  case BinaryOp::Sub:
    r.floatValue = a - b;
    exact = llvm::checkedSub(lhs.intValue, rhs.intValue);
    break;
  case BinaryOp::Mul:
    r.floatValue = a * b;
    exact = llvm::checkedMul(lhs.intValue, rhs.intValue);
    break;
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

//===----------------------------------------------------------------------===//
// Sizes, shapes, axes and types
//===----------------------------------------------------------------------===//

std::optional<int64_t> Elaborator::evalSize(const Expr &expr, Scope &scope) {
  if (llvm::isa<CallExpr, ShapeExpr>(expr)) {
    diags.error(expr.range, "an axis size must be an integer expression");
    return std::nullopt;
  }
  Value v = evalConstant(expr, scope);
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
      if (s && inputSplit && *axis == program.microbatchAxis)
        s = splitSize(*axis, *s, d.range, "the shape " + printShape(dims));
      if (!s)
        return {};
      // Within one scope an axis has one size: a shape may name it, not resize it.
      if (auto known = scope.axes->sizes.find(*axis);
          known != scope.axes->sizes.end() && known->second.first != *s) {
        diags.error(d.range, "axis '" + *axis + "' has size " + std::to_string(*s) + " here but " +
                                 std::to_string(known->second.first) +
                                 " where it was first given; a reshape to other sizes needs "
                                 "axes of other names");
        diags.note(known->second.second, "'" + *axis + "' first given here");
        return {};
      }
      size = *s;
    } else if (auto it = scope.axes->sizes.find(*axis); it != scope.axes->sizes.end()) {
      size = it->second.first;
    }
    v.shape.push_back({*axis, size});
  }
  return v;
}

std::optional<std::string> Elaborator::resolveAxisName(const std::string &name, SMRange range,
                                                       Scope &scope) {
  if (!scope.axisParams)
    return name;
  auto it = scope.axisParams->find(name);
  if (it == scope.axisParams->end())
    return name;
  if (it->second.empty()) {
    diags.error(range, "axis parameter '" + name +
                           "' is not bound: pass it when creating the "
                           "block, or use it in a forward argument");
    return std::nullopt;
  }
  return it->second;
}

/// The microbatch's program divides every size written for the batch axis: the
/// inputs' first axis, found at the first input.
std::optional<int64_t> Elaborator::splitSize(const std::string &axis, int64_t size, SMRange range,
                                             llvm::StringRef what) {
  if (program.microbatchAxis.empty())
    program.microbatchAxis = axis;
  if (axis != program.microbatchAxis)
    return size;
  if (size % inputSplit->count) {
    diags.error(range, "the microbatches do not divide the batch: " + what + " has '" + axis +
                           "' = " + std::to_string(size) + ", not a multiple of " +
                           std::to_string(inputSplit->count));
    diags.note(inputSplit->loc, "microbatches asked for here");
    return std::nullopt;
  }
  return size / inputSplit->count;
}

std::optional<TensorType> Elaborator::resolveType(const TensorTypeAST &ast, Scope &scope,
                                                  llvm::StringRef what, bool isModelInput) {
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
      if (size && inputSplit && (isModelInput || *axis == program.microbatchAxis))
        size = splitSize(*axis, *size, d.range, what);
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
