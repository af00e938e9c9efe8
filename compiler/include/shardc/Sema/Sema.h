//===- Sema.h - from ASTs to a typed, sharded program -----------*- C++ -*-===//

#ifndef SHARDC_SEMA_SEMA_H
#define SHARDC_SEMA_SEMA_H

#include "shardc/AST/RulesAST.h"
#include "shardc/Sema/TypedProgram.h"

#include <optional>
#include <string>
#include <vector>

namespace shardc {

struct SemaOptions {
  /// Folders searched for `import` after the importing file's own folder.
  std::vector<std::string> importPaths;
};

/// Loads the model file with its imports, instantiates blocks, infers named
/// shapes through every operation and checks them. Reports errors and
/// returns std::nullopt if there were any.
std::optional<TypedProgram> analyzeModel(const std::string &modelPath,
                                         const SemaOptions &options, DiagnosticEngine &diags);

/// Applies a rules file to a typed program: the mesh, and a sharding for
/// every parameter, input and constrained value, checked for unknown mesh
/// axes, conflicting rules, mesh axes used twice and divisibility.
bool applyRules(TypedProgram &program, const RulesFileAST &rules, DiagnosticEngine &diags);

} // namespace shardc

#endif
