//===- OpTyping.h - result types of operations ------------------*- C++ -*-===//
//
// Shape and named-axis inference for every tensor operation, apart from
// scopes and blocks: given typed arguments, the result type or an error.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_LIB_SEMA_OPTYPING_H
#define SHARDC_LIB_SEMA_OPTYPING_H

#include "shardc/Sema/TypedProgram.h"

#include "llvm/ADT/ArrayRef.h"

#include <optional>

namespace shardc {

/// An argument of a builtin call, evaluated; which field is set follows the
/// parameter's kind in the builtin's signature.
struct OpArg {
  SMRange range;
  TensorType tensor;
  int64_t intValue = 0;
  double floatValue = 0;
  bool boolValue = false;
  std::string stringValue; // also an axis name
  std::vector<Dim> shape;  // size -1: not given
};

struct TypedOp {
  TensorType type;
  std::map<std::string, Attribute> attrs;
};

/// Types builtin op `op` applied to `args` (in signature order, defaults
/// filled in). Reports at `call` and returns nullopt on error.
std::optional<TypedOp> typeBuiltinOp(OpKind op, SMRange call, llvm::ArrayRef<OpArg> args,
                                     DiagnosticEngine &diags);

/// Types `lhs op rhs` for tensors: contraction for `@`, broadcasting for
/// the others (equal shapes, or the axes of one axes of the other, in order).
std::optional<TensorType> typeBinaryOp(BinaryOp op, SMRange where, const TensorType &lhs,
                                       const TensorType &rhs, DiagnosticEngine &diags);

} // namespace shardc

#endif
