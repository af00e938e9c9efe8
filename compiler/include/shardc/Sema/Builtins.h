//===- Builtins.h - signatures of the language's builtins -------*- C++ -*-===//
//
// Built from Builtins.def. A signature gives each parameter a name, a kind and
// maybe a default, so calls can be checked for count, names and kinds the
// same way for builtins, blocks, initialisers and optimizers.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_SEMA_BUILTINS_H
#define SHARDC_SEMA_BUILTINS_H

#include "shardc/Sema/Ops.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace shardc {

enum class ArgKind { Tensor, Int, Float, Bool, String, Axis, Shape, Block };
llvm::StringRef argKindName(ArgKind kind);

struct SignatureParam {
  std::string name;
  ArgKind kind = ArgKind::Tensor;
  bool hasDefault = false;
  std::string defaultText;  // source text of the default, e.g. `1`, `"SAME"`, `[]`
  bool keywordOnly = false; // after a `*` in the signature: passed by name only
};

enum class BuiltinCategory { Op, Initializer, Optimizer };

struct Builtin {
  std::string name;
  BuiltinCategory category;
  std::string signature; // as written in Builtins.def
  std::vector<SignatureParam> params;
  std::optional<OpKind> op;               // category Op
  std::optional<OptimizerKind> optimizer; // category Optimizer
};

/// The builtin called `name`, or null.
const Builtin *lookupBuiltin(llvm::StringRef name);
/// Every builtin, in Builtins.def order.
llvm::ArrayRef<Builtin> allBuiltins();
/// The names of one category's builtins, comma-separated: `sgd, momentum, adam`.
std::string builtinNames(BuiltinCategory category);

} // namespace shardc

#endif
