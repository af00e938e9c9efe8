//===- Ops.h - the ops of sema's typed graph ---------------------*- C++ -*-===//
//
// One enumerator per op a graph node can be, generated from Builtins.def:
// the builtin ops, the operators, then the internal ops (values, scan,
// gradients, optimizer updates). Code that handles ops switches over OpKind,
// so a case it lacks is a compile-time warning (-Wswitch).
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_SEMA_OPS_H
#define SHARDC_SEMA_OPS_H

#include "shardc/AST/AST.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace shardc {

enum class OpKind : unsigned char {
#define SHARDC_OP(NAME, SIGNATURE) NAME,
#define SHARDC_OPERATOR(NAME, ARITY) NAME,
#define SHARDC_INTERNAL_OP(NAME, ARITY, ATTRIBUTES) NAME,
#include "shardc/Sema/Builtins.def"
};

/// The op's name as the language and `--emit=typed` spell it.
llvm::StringRef opName(OpKind op);

/// The number of operands every node of `op` has; nullopt for a builtin (its
/// count follows its signature).
std::optional<unsigned> opArity(OpKind op);

/// The attributes every node of an internal op carries.
llvm::ArrayRef<llvm::StringRef> opAttributes(OpKind op);

/// The node a binary operator makes: `a @ b` is a matmul.
OpKind binaryOpKind(BinaryOp op);

/// `cache(x, over, into)` makes a `rename` node with this attribute (1): the
/// values --generate's decode step keeps from one token to the next.
inline constexpr const char *kCacheAttr = "cache";

enum class OptimizerKind : unsigned char {
#define SHARDC_OPTIMIZER(NAME, SIGNATURE, STATE) NAME,
#include "shardc/Sema/Builtins.def"
};

llvm::StringRef optimizerName(OptimizerKind optimizer);

/// The tensors an optimizer keeps per parameter (adam: mu, nu).
llvm::ArrayRef<llvm::StringRef> optimizerState(OptimizerKind optimizer);

} // namespace shardc

#endif
