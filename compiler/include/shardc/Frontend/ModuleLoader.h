//===- ModuleLoader.h - a model file and the files it imports ---*- C++ -*-===//
//
// Reads and parses a model file and, depth first, the files it imports: an
// `import a.b` is the file a/b.shard in the importing file's folder, then in
// the -I folders, then in the stdlib. Sema neither searches nor reads files:
// it is handed each file's AST after the ASTs of the files that one imports.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_FRONTEND_MODULELOADER_H
#define SHARDC_FRONTEND_MODULELOADER_H

#include "shardc/AST/AST.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shardc {

class ModuleLoader {
public:
  /// `importPaths`: the folders searched for an import after the importing
  /// file's own folder, before the stdlib.
  ModuleLoader(std::vector<std::string> importPaths, DiagnosticEngine &diags)
      : importPaths(std::move(importPaths)), diags(diags) {}

  /// Loads the model file `path` and the files it imports, each file once,
  /// rejecting cycles. `onLoaded` gets each file as soon as the files it
  /// imports are loaded, so what sema reports about a file follows what
  /// loading reported before it; a file past the import depth limit is not
  /// handed over. Returns the model file's AST, or null when it cannot be read
  /// or parsed. The ASTs live as long as the loader.
  const ModuleAST *loadModelFile(const std::string &path,
                                 llvm::function_ref<void(const ModuleAST &)> onLoaded);

private:
  const ModuleAST *load(const std::string &path, SMRange importedAt,
                        std::vector<std::string> &stack,
                        llvm::function_ref<void(const ModuleAST &)> onLoaded);
  std::optional<std::string> resolveImport(const ModuleAST &from, const ImportAST &imp);

  std::vector<std::string> importPaths;
  DiagnosticEngine &diags;
  std::vector<std::unique_ptr<ModuleAST>> modules;
  std::map<std::string, const ModuleAST *> loaded; // real path -> module
};

} // namespace shardc

#endif
