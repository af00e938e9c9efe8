//===- OpTyping.cpp - result types of operations --------------------------===//

#include "OpTyping.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>

using namespace shardc;

namespace {

/// Reports errors of one call; every check returns false after reporting.
struct Checker {
  DiagnosticEngine &diags;
  llvm::StringRef op;
  SMRange call;

  bool fail(SMRange at, const llvm::Twine &message) {
    diags.error(at.Start.isValid() ? at : call, op + ": " + message);
    return false;
  }
  bool isFloat(const OpArg &a, llvm::StringRef what) {
    return a.tensor.dtype == DType::F32 ||
           fail(a.range, what + " must be f32, got " + a.tensor.str());
  }
  bool hasRank(const OpArg &a, llvm::StringRef what, size_t rank) {
    return a.tensor.dims.size() == rank || fail(a.range, what + " must have " + llvm::Twine(rank) +
                                                             " dimensions, got " + a.tensor.str());
  }
  bool hasMinRank(const OpArg &a, llvm::StringRef what, size_t rank) {
    return a.tensor.dims.size() >= rank ||
           fail(a.range, what + " needs at least " + llvm::Twine(rank) + " dimension(s), got " +
                             a.tensor.str());
  }
  bool positive(const OpArg &a, llvm::StringRef what) {
    return a.intValue >= 1 ||
           fail(a.range, what + " must be at least 1, got " + llvm::Twine(a.intValue));
  }
  bool isPadding(const OpArg &a) {
    return a.stringValue == "SAME" || a.stringValue == "VALID" ||
           fail(a.range, "padding must be \"SAME\" or \"VALID\", got \"" + a.stringValue + "\"");
  }
};

/// Output size of a window sliding over `size` elements.
int64_t windowOutput(int64_t size, int64_t window, int64_t stride, llvm::StringRef padding) {
  if (padding == "SAME")
    return llvm::divideCeil(size, stride); // size + stride - 1 could overflow
  return size < window ? 0 : (size - window) / stride + 1;
}

std::optional<TensorType> elementwise(Checker &c, const OpArg &x) {
  if (!c.isFloat(x, "the argument"))
    return std::nullopt;
  return x.tensor;
}

std::optional<TypedOp> conv2d(Checker &c, llvm::ArrayRef<OpArg> a) {
  const OpArg &x = a[0], &w = a[1], &stride = a[2], &padding = a[3];
  if (!c.isFloat(x, "input") || !c.isFloat(w, "kernel") || !c.hasRank(x, "input", 4) ||
      !c.hasRank(w, "kernel", 4) || !c.positive(stride, "stride") || !c.isPadding(padding))
    return std::nullopt;
  const Dim &in = x.tensor.dims[3], &kin = w.tensor.dims[2];
  if (!(in == kin)) {
    c.fail(w.range, "the kernel's input channels " + kin.axis + "=" + std::to_string(kin.size) +
                        " do not match the input's " + in.axis + "=" + std::to_string(in.size) +
                        " (input " + x.tensor.str() + ", kernel " + w.tensor.str() + ")");
    return std::nullopt;
  }
  TypedOp r;
  r.type.dtype = DType::F32;
  r.type.dims.push_back(x.tensor.dims[0]);
  for (int i : {1, 2}) {
    Dim d = x.tensor.dims[i];
    d.size = windowOutput(d.size, w.tensor.dims[i - 1].size, stride.intValue, padding.stringValue);
    if (d.size < 1) {
      c.fail(w.range, "the kernel " + w.tensor.str() + " is larger than the input " +
                          x.tensor.str() + " with VALID padding");
      return std::nullopt;
    }
    r.type.dims.push_back(d);
  }
  r.type.dims.push_back(w.tensor.dims[3]);
  r.attrs["stride"] = stride.intValue;
  r.attrs["padding"] = padding.stringValue;
  return r;
}

std::optional<TypedOp> avgPool(Checker &c, llvm::ArrayRef<OpArg> a) {
  const OpArg &x = a[0], &window = a[1], &strideArg = a[2], &padding = a[3];
  if (!c.isFloat(x, "input") || !c.hasRank(x, "input", 4) || !c.positive(window, "window") ||
      !c.isPadding(padding))
    return std::nullopt;
  if (strideArg.intValue < 0) {
    c.fail(strideArg.range, "stride must be at least 1 (or 0 for the window size)");
    return std::nullopt;
  }
  int64_t stride = strideArg.intValue == 0 ? window.intValue : strideArg.intValue;
  TypedOp r;
  r.type = x.tensor;
  for (int i : {1, 2}) {
    Dim &d = r.type.dims[i];
    // Also under SAME: a window larger than the input would only pool padding
    // (and window^2, the divisor, stays within the input's element count).
    if (window.intValue > d.size) {
      c.fail(window.range, "window " + std::to_string(window.intValue) +
                               " is larger than the input " + x.tensor.str());
      return std::nullopt;
    }
    d.size = windowOutput(d.size, window.intValue, stride, padding.stringValue);
  }
  r.attrs["window"] = window.intValue;
  r.attrs["stride"] = stride;
  r.attrs["padding"] = padding.stringValue;
  return r;
}

/// Dimensions of a shape argument whose sizes must all be known.
bool knownSizes(Checker &c, const OpArg &shape) {
  for (const Dim &d : shape.shape)
    if (d.size < 0)
      return c.fail(shape.range, "the size of axis '" + d.axis + "' is not known here: write [" +
                                     d.axis + " = N]");
  return true;
}

std::optional<TypedOp> flatten(Checker &c, llvm::ArrayRef<OpArg> a) {
  const OpArg &x = a[0], &into = a[1];
  if (!c.hasMinRank(x, "input", 2))
    return std::nullopt;
  if (into.shape.size() != 1) {
    c.fail(into.range, "expects one axis to flatten into, like [features], got " +
                           std::to_string(into.shape.size()));
    return std::nullopt;
  }
  int64_t n = 1;
  for (size_t i = 1; i < x.tensor.dims.size(); ++i)
    n *= x.tensor.dims[i].size;
  if (into.shape[0].size >= 0 && into.shape[0].size != n) {
    c.fail(into.range, "flattening " + x.tensor.str() + " gives " + std::to_string(n) +
                           " elements per row, not " + std::to_string(into.shape[0].size));
    return std::nullopt;
  }
  TypedOp r;
  r.type.dtype = x.tensor.dtype;
  r.type.dims = {x.tensor.dims[0], Dim{into.shape[0].axis, n}};
  return r;
}

std::optional<TypedOp> reshape(Checker &c, llvm::ArrayRef<OpArg> a) {
  const OpArg &x = a[0], &to = a[1];
  if (!knownSizes(c, to))
    return std::nullopt;
  TypedOp r;
  r.type.dtype = x.tensor.dtype;
  r.type.dims = to.shape;
  if (r.type.numElements() != x.tensor.numElements()) {
    c.fail(to.range, "cannot reshape " + x.tensor.str() + " (" +
                         std::to_string(x.tensor.numElements()) + " elements) to " + r.type.str() +
                         " (" + std::to_string(r.type.numElements()) + " elements)");
    return std::nullopt;
  }
  return r;
}

std::optional<TypedOp> contract(Checker &c, llvm::ArrayRef<OpArg> a) {
  const OpArg &lhs = a[0], &rhs = a[1], &over = a[2];
  if (!c.isFloat(lhs, "the first operand") || !c.isFloat(rhs, "the second operand"))
    return std::nullopt;
  std::vector<std::string> summed;
  for (const Dim &d : over.shape) {
    if (lhs.tensor.axisIndex(d.axis) < 0 || rhs.tensor.axisIndex(d.axis) < 0) {
      c.fail(over.range, "axis '" + d.axis + "' is not an axis of both " + lhs.tensor.str() +
                             " and " + rhs.tensor.str());
      return std::nullopt;
    }
    summed.push_back(d.axis);
  }
  for (const Dim &d : lhs.tensor.dims) {
    int other = rhs.tensor.axisIndex(d.axis);
    if (other >= 0 && rhs.tensor.dims[other].size != d.size) {
      c.fail(rhs.range, "axis '" + d.axis + "' has size " + std::to_string(d.size) + " in " +
                            lhs.tensor.str() + " and " +
                            std::to_string(rhs.tensor.dims[other].size) + " in " +
                            rhs.tensor.str());
      return std::nullopt;
    }
  }
  TypedOp r;
  for (const Dim &d : lhs.tensor.dims)
    if (!llvm::is_contained(summed, d.axis))
      r.type.dims.push_back(d);
  for (const Dim &d : rhs.tensor.dims)
    if (lhs.tensor.axisIndex(d.axis) < 0)
      r.type.dims.push_back(d);
  r.attrs["over"] = summed;
  return r;
}

std::optional<TypedOp> embedding(Checker &c, llvm::ArrayRef<OpArg> a) {
  const OpArg &ids = a[0], &table = a[1];
  if (ids.tensor.dtype != DType::I32) {
    c.fail(ids.range, "ids must be i32, got " + ids.tensor.str());
    return std::nullopt;
  }
  if (!c.isFloat(table, "the table") || !c.hasMinRank(table, "the table", 1))
    return std::nullopt;
  TypedOp r{ids.tensor, {}};
  r.type.dtype = DType::F32;
  r.type.dims.insert(r.type.dims.end(), table.tensor.dims.begin() + 1, table.tensor.dims.end());
  return r;
}

std::optional<TypedOp> rename(Checker &c, llvm::ArrayRef<OpArg> a) {
  const OpArg &x = a[0], &from = a[1], &to = a[2];
  int index = x.tensor.axisIndex(from.stringValue);
  if (index < 0) {
    c.fail(from.range, "axis '" + from.stringValue + "' is not an axis of " + x.tensor.str());
    return std::nullopt;
  }
  TypedOp r{x.tensor, {{"from", from.stringValue}, {"to", to.stringValue}}};
  r.type.dims[index].axis = to.stringValue;
  return r;
}

std::optional<TypedOp> causalMask(Checker &c, llvm::ArrayRef<OpArg> a) {
  const OpArg &x = a[0], &query = a[1], &key = a[2];
  if (!c.isFloat(x, "the argument"))
    return std::nullopt;
  for (const OpArg *axis : {&query, &key})
    if (x.tensor.axisIndex(axis->stringValue) < 0) {
      c.fail(axis->range, "axis '" + axis->stringValue + "' is not an axis of " + x.tensor.str());
      return std::nullopt;
    }
  if (query.stringValue == key.stringValue) {
    c.fail(key.range, "the query and key axes must differ, got '" + key.stringValue + "' twice");
    return std::nullopt;
  }
  return TypedOp{x.tensor,
                 {{"query", query.stringValue},
                  {"key", key.stringValue},
                  {"fill", -std::numeric_limits<double>::infinity()}}};
}

/// The axes of `over`, each an axis of x; nullopt after an error.
std::optional<std::vector<std::string>> axesOf(Checker &c, const OpArg &x, const OpArg &over) {
  std::vector<std::string> axes;
  for (const Dim &d : over.shape) {
    if (x.tensor.axisIndex(d.axis) < 0) {
      c.fail(over.range, "axis '" + d.axis + "' is not an axis of " + x.tensor.str());
      return std::nullopt;
    }
    axes.push_back(d.axis);
  }
  return axes;
}

/// An axis argument that must name an axis of x.
bool isAxisOf(Checker &c, const OpArg &x, const OpArg &axis) {
  return x.tensor.axisIndex(axis.stringValue) >= 0 ||
         c.fail(axis.range, "axis '" + axis.stringValue + "' is not an axis of " + x.tensor.str());
}

/// sum, mean, max and min over `over` (every axis when it is empty).
std::optional<TypedOp> reduce(Checker &c, OpKind op, llvm::ArrayRef<OpArg> a) {
  const OpArg &x = a[0], &over = a[1];
  bool extremum = op == OpKind::max || op == OpKind::min;
  if (extremum && !c.isFloat(x, "the argument"))
    return std::nullopt;
  auto axes = axesOf(c, x, over);
  if (!axes)
    return std::nullopt;
  TypedOp r;
  r.type.dtype = op == OpKind::mean || x.tensor.dtype == DType::Bool ? DType::F32 : x.tensor.dtype;
  for (const Dim &d : x.tensor.dims)
    if (!axes->empty() && !llvm::is_contained(*axes, d.axis))
      r.type.dims.push_back(d);
  if (axes->empty())
    for (const Dim &d : x.tensor.dims)
      axes->push_back(d.axis);
  r.attrs["over"] = *axes;
  return r;
}

/// softmax and log_softmax over `over` (the last axis when it is empty).
std::optional<TypedOp> normalize(Checker &c, llvm::ArrayRef<OpArg> a) {
  const OpArg &x = a[0], &over = a[1];
  if (!c.hasMinRank(x, "the argument", 1) || !c.isFloat(x, "the argument"))
    return std::nullopt;
  auto axes = axesOf(c, x, over);
  if (!axes)
    return std::nullopt;
  if (axes->empty())
    axes->push_back(x.tensor.dims.back().axis);
  return TypedOp{x.tensor, {{"over", *axes}}};
}

std::optional<TypedOp> cumsum(Checker &c, llvm::ArrayRef<OpArg> a) {
  const OpArg &x = a[0], &over = a[1], &exclusive = a[2], &reverse = a[3];
  if (!c.isFloat(x, "the argument") || !isAxisOf(c, x, over))
    return std::nullopt;
  return TypedOp{x.tensor,
                 {{"over", over.stringValue},
                  {"exclusive", int64_t(exclusive.boolValue)},
                  {"reverse", int64_t(reverse.boolValue)}}};
}

/// top_k and top_k_indices: x with `over` replaced by `into` of size k.
std::optional<TypedOp> topK(Checker &c, OpKind op, llvm::ArrayRef<OpArg> a) {
  const OpArg &x = a[0], &k = a[1], &over = a[2], &into = a[3];
  if (!c.isFloat(x, "the argument") || !isAxisOf(c, x, over) || !c.positive(k, "k"))
    return std::nullopt;
  int index = x.tensor.axisIndex(over.stringValue);
  if (k.intValue > x.tensor.dims[index].size) {
    c.fail(k.range, "k = " + std::to_string(k.intValue) + " is more than the " +
                        std::to_string(x.tensor.dims[index].size) + " elements along '" +
                        over.stringValue + "' in " + x.tensor.str());
    return std::nullopt;
  }
  if (x.tensor.axisIndex(into.stringValue) >= 0) {
    c.fail(into.range, "the new axis needs a name of its own: '" + into.stringValue +
                           "' is already an axis of " + x.tensor.str());
    return std::nullopt;
  }
  TypedOp r{x.tensor, {{"k", k.intValue}, {"over", over.stringValue}, {"into", into.stringValue}}};
  r.type.dims[index] = Dim{into.stringValue, k.intValue};
  if (op == OpKind::top_k_indices)
    r.type.dtype = DType::I32;
  return r;
}

/// Broadcasting by axis name: the smaller type's axes are axes of the larger one, in
/// the same order and of the same sizes (a [batch, seq] mean against [batch, seq,
/// embed]; a bias [out] against [batch, out]).
bool broadcastsTo(const TensorType &small, const TensorType &big) {
  auto next = big.dims.begin();
  for (const Dim &d : small.dims) {
    next = std::find_if(next, big.dims.end(), [&](const Dim &b) { return b.axis == d.axis; });
    if (next == big.dims.end() || !(*next == d))
      return false;
    ++next;
  }
  return true;
}

std::optional<TypedOp> where(Checker &c, llvm::ArrayRef<OpArg> a) {
  const OpArg &cond = a[0], &x = a[1], &y = a[2];
  if (cond.tensor.dtype != DType::Bool) {
    c.fail(cond.range, "the condition must be bool, got " + cond.tensor.str());
    return std::nullopt;
  }
  if (x.tensor.dtype != y.tensor.dtype) {
    c.fail(y.range,
           "both branches need one element type, got " + x.tensor.str() + " and " + y.tensor.str());
    return std::nullopt;
  }
  const OpArg *big = &cond;
  for (const OpArg *arg : {&x, &y})
    if (arg->tensor.dims.size() > big->tensor.dims.size())
      big = arg;
  for (const OpArg *arg : {&cond, &x, &y})
    if (!broadcastsTo(arg->tensor, big->tensor)) {
      c.fail(arg->range, "shape mismatch: " + arg->tensor.str() + " against " + big->tensor.str() +
                             "; each operand's axes must be axes of the largest, in the same "
                             "order and of the same sizes");
      return std::nullopt;
    }
  TypedOp r{big->tensor, {}};
  r.type.dtype = x.tensor.dtype;
  return r;
}

std::optional<TypedOp> transpose(Checker &c, llvm::ArrayRef<OpArg> a) {
  const OpArg &x = a[0], &to = a[1];
  TypedOp r{x.tensor, {}};
  r.type.dims.clear();
  for (const Dim &d : to.shape) {
    int index = x.tensor.axisIndex(d.axis);
    if (index < 0 || (d.size >= 0 && d.size != x.tensor.dims[index].size)) {
      c.fail(to.range, "[" + d.axis + "] is not an axis of " + x.tensor.str());
      return std::nullopt;
    }
    r.type.dims.push_back(x.tensor.dims[index]);
  }
  if (r.type.dims.size() != x.tensor.dims.size()) {
    c.fail(to.range, "expects every axis of " + x.tensor.str() + " once, in the new order");
    return std::nullopt;
  }
  return r;
}

} // namespace

std::optional<TypedOp> shardc::typeBuiltinOp(OpKind op, SMRange call, llvm::ArrayRef<OpArg> args,
                                             DiagnosticEngine &diags) {
  Checker c{diags, opName(op), call};
  auto plain = [](std::optional<TensorType> t) -> std::optional<TypedOp> {
    if (!t)
      return std::nullopt;
    return TypedOp{*t, {}};
  };
  switch (op) {
  case OpKind::relu:
  case OpKind::exp:
  case OpKind::log:
  case OpKind::tanh:
  case OpKind::sigmoid:
  case OpKind::sqrt:
  case OpKind::rsqrt:
  case OpKind::gelu:
    return plain(elementwise(c, args[0]));
  case OpKind::log_softmax:
  case OpKind::softmax:
    return normalize(c, args);
  case OpKind::cumsum:
    return cumsum(c, args);
  case OpKind::top_k:
  case OpKind::top_k_indices:
    return topK(c, op, args);
  case OpKind::where:
    return where(c, args);
  case OpKind::transpose:
    return transpose(c, args);
  case OpKind::matmul:
    return plain(typeBinaryOp(BinaryOp::MatMul, call, args[0].tensor, args[1].tensor, diags));
  case OpKind::contract:
    return contract(c, args);
  case OpKind::rename:
    return rename(c, args);
  case OpKind::cache: { // a rename node that the decode step caches (Train/DecodeStep.cpp)
    std::optional<TypedOp> r = rename(c, args);
    if (r)
      r->attrs[kCacheAttr] = int64_t(1);
    return r;
  }
  case OpKind::embedding:
    return embedding(c, args);
  case OpKind::causal_mask:
    return causalMask(c, args);
  case OpKind::conv2d:
    return conv2d(c, args);
  case OpKind::avg_pool:
    return avgPool(c, args);
  case OpKind::flatten:
    return flatten(c, args);
  case OpKind::reshape:
    return reshape(c, args);
  case OpKind::sum:
  case OpKind::mean:
  case OpKind::max:
  case OpKind::min:
    return reduce(c, op, args);
  case OpKind::argmax: {
    if (!c.hasMinRank(args[0], "the argument", 1))
      return std::nullopt;
    TypedOp r{args[0].tensor, {}};
    r.type.dtype = DType::I32;
    r.type.dims.pop_back();
    return r;
  }
  case OpKind::dropout: {
    const OpArg &x = args[0], &rate = args[1];
    if (!c.isFloat(x, "the argument"))
      return std::nullopt;
    if (!(rate.floatValue >= 0 && rate.floatValue < 1)) {
      std::string got;
      llvm::raw_string_ostream(got) << llvm::format("%g", rate.floatValue);
      c.fail(rate.range,
             "the rate (the fraction of elements dropped) must be in [0, 1), got " + got);
      return std::nullopt;
    }
    return TypedOp{x.tensor, {{"rate", rate.floatValue}}};
  }
  case OpKind::softmax_cross_entropy: {
    const OpArg &logits = args[0], &labels = args[1];
    if (!c.isFloat(logits, "logits") || !c.isFloat(labels, "labels") ||
        !c.hasMinRank(logits, "logits", 1))
      return std::nullopt;
    if (logits.tensor.dims != labels.tensor.dims) {
      c.fail(labels.range, "labels " + labels.tensor.str() + " must have the shape of the logits " +
                               logits.tensor.str() +
                               " (one-hot: use one_hot(labels, [classes = N]))");
      return std::nullopt;
    }
    TypedOp r{logits.tensor, {}};
    r.type.dims.pop_back();
    return r;
  }
  case OpKind::one_hot: {
    const OpArg &labels = args[0], &classes = args[1];
    // f32 labels as jax.nn.one_hot: a row is 1 where a class equals the label
    // (a MoE token's place in its expert's buffer; none past the last class).
    if (labels.tensor.dtype == DType::Bool) {
      c.fail(labels.range, "labels must be i32 or f32, got " + labels.tensor.str());
      return std::nullopt;
    }
    if (classes.shape.size() != 1) {
      c.fail(classes.range, "expects one class axis, like [classes = 10]");
      return std::nullopt;
    }
    if (!knownSizes(c, classes))
      return std::nullopt;
    TypedOp r{labels.tensor, {}};
    r.type.dtype = DType::F32;
    r.type.dims.push_back(classes.shape[0]);
    return r;
  }
  case OpKind::scan: // typed where the block is instantiated
#define SHARDC_OPERATOR(NAME, ARITY) case OpKind::NAME:
#define SHARDC_INTERNAL_OP(NAME, ARITY, ATTRIBUTES) case OpKind::NAME:
#include "shardc/Sema/Builtins.def"
    break;
  }
  c.fail(call, "has no type rule");
  return std::nullopt;
}

std::optional<TensorType> shardc::typeBinaryOp(BinaryOp op, SMRange where, const TensorType &lhs,
                                               const TensorType &rhs, DiagnosticEngine &diags) {
  std::string spelled = binaryOpSpelling(op).str();
  if (op == BinaryOp::MatMul) {
    if (lhs.dims.empty() || rhs.dims.empty()) {
      diags.error(where, "'@' needs tensors of at least one dimension, got " + lhs.str() + " and " +
                             rhs.str());
      return std::nullopt;
    }
    if (lhs.dtype != DType::F32 || rhs.dtype != DType::F32) {
      diags.error(where, "'@' needs f32 operands, got " + lhs.str() + " and " + rhs.str());
      return std::nullopt;
    }
    const Dim &l = lhs.dims.back(), &r = rhs.dims.front();
    if (l.axis != r.axis) {
      diags.error(where, "contraction axis mismatch: '@' contracts the last axis of " + lhs.str() +
                             " ('" + l.axis + "') with the first axis of " + rhs.str() + " ('" +
                             r.axis + "'); their names must agree");
      return std::nullopt;
    }
    if (l.size != r.size) {
      diags.error(where, "shape mismatch: '@' contracts '" + l.axis + "' of size " +
                             std::to_string(l.size) + " in " + lhs.str() + " with size " +
                             std::to_string(r.size) + " in " + rhs.str());
      return std::nullopt;
    }
    TensorType result{DType::F32, {lhs.dims.begin(), lhs.dims.end() - 1}};
    result.dims.insert(result.dims.end(), rhs.dims.begin() + 1, rhs.dims.end());
    return result;
  }

  bool compare = op >= BinaryOp::Eq;
  if (lhs.dtype != rhs.dtype || (!compare && lhs.dtype == DType::Bool)) {
    diags.error(where, "'" + spelled + "' needs operands of one numeric element type, got " +
                           lhs.str() + " and " + rhs.str());
    return std::nullopt;
  }
  const TensorType &big = lhs.dims.size() >= rhs.dims.size() ? lhs : rhs;
  const TensorType &small = &big == &lhs ? rhs : lhs;
  if (!broadcastsTo(small, big)) {
    diags.error(where, "shape mismatch: '" + spelled + "' of " + lhs.str() + " and " + rhs.str() +
                           "; shapes must be equal, or the axes of one axes of the other, "
                           "in the same order and of the same sizes");
    return std::nullopt;
  }
  TensorType result = big;
  if (compare)
    result.dtype = DType::Bool;
  return result;
}
