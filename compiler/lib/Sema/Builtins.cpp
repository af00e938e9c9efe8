//===- Builtins.cpp - the signature table from Builtins.def ---------------===//

#include "shardc/Sema/Builtins.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace shardc;

llvm::StringRef shardc::argKindName(ArgKind kind) {
  switch (kind) {
  case ArgKind::Tensor:
    return "tensor";
  case ArgKind::Int:
    return "int";
  case ArgKind::Float:
    return "float";
  case ArgKind::Bool:
    return "bool";
  case ArgKind::String:
    return "string";
  case ArgKind::Axis:
    return "axis";
  case ArgKind::Shape:
    return "shape";
  case ArgKind::Block:
    return "block";
  }
  return "?";
}

static ArgKind parseKind(llvm::StringRef text) {
  for (ArgKind k : {ArgKind::Tensor, ArgKind::Int, ArgKind::Float, ArgKind::Bool, ArgKind::String,
                    ArgKind::Axis, ArgKind::Shape, ArgKind::Block})
    if (argKindName(k) == text)
      return k;
  llvm::report_fatal_error("Builtins.def: unknown kind '" + text + "'");
}

/// Parses `a: tensor, stride: int = 1` (defaults hold no commas); the
/// parameters after a `*` are passed by name only, as in Python.
static std::vector<SignatureParam> parseSignature(llvm::StringRef text) {
  std::vector<SignatureParam> params;
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',', -1, /*KeepEmpty=*/false);
  bool keywordOnly = false;
  for (llvm::StringRef part : parts) {
    if (part.trim() == "*") {
      keywordOnly = true;
      continue;
    }
    auto [decl, def] = part.split('=');
    auto [name, kind] = decl.split(':');
    SignatureParam p;
    p.name = name.trim().str();
    p.kind = parseKind(kind.trim());
    p.hasDefault = part.contains('=');
    p.defaultText = def.trim().str();
    p.keywordOnly = keywordOnly;
    params.push_back(std::move(p));
  }
  return params;
}

llvm::ArrayRef<Builtin> shardc::allBuiltins() {
  static const std::vector<Builtin> table = [] {
    std::vector<Builtin> t;
#define SHARDC_OP(NAME, SIG)                                                                       \
  t.push_back({#NAME, BuiltinCategory::Op, SIG, parseSignature(SIG), OpKind::NAME, {}});
#define SHARDC_INIT(NAME, SIG)                                                                     \
  t.push_back({#NAME, BuiltinCategory::Initializer, SIG, parseSignature(SIG), {}, {}});
#define SHARDC_OPTIMIZER(NAME, SIG, STATE)                                                         \
  t.push_back(                                                                                     \
      {#NAME, BuiltinCategory::Optimizer, SIG, parseSignature(SIG), {}, OptimizerKind::NAME});
#include "shardc/Sema/Builtins.def"
    return t;
  }();
  return table;
}

const Builtin *shardc::lookupBuiltin(llvm::StringRef name) {
  for (const Builtin &b : allBuiltins())
    if (b.name == name)
      return &b;
  return nullptr;
}

std::string shardc::builtinNames(BuiltinCategory category) {
  std::string names;
  for (const Builtin &b : allBuiltins())
    if (b.category == category)
      names += (names.empty() ? "" : ", ") + b.name;
  return names;
}
