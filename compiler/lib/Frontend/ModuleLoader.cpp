//===- ModuleLoader.cpp - import search and loading -----------------------===//
//
// The file-system side of loading, kept out of sema: where an import is,
// whether that file was loaded already, whether imports go round in a cycle.
//
//===----------------------------------------------------------------------===//

#include "shardc/Frontend/ModuleLoader.h"
#include "shardc/Parse/Parser.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#ifndef SHARDC_STDLIB_DIR
#error "SHARDC_STDLIB_DIR must name the stdlib folder"
#endif

using namespace shardc;

// Loading recurses once per import; this bounds it far inside the compiler's
// stack (see kMaxTreeDepth in the parser).
static constexpr size_t kMaxImportDepth = 256;

const ModuleAST *ModuleLoader::loadModelFile(const std::string &path,
                                             llvm::function_ref<void(const ModuleAST &)> onLoaded) {
  std::vector<std::string> importStack;
  return load(path, SMRange(), importStack, onLoaded);
}

const ModuleAST *ModuleLoader::load(const std::string &path, SMRange importedAt,
                                    std::vector<std::string> &stack,
                                    llvm::function_ref<void(const ModuleAST &)> onLoaded) {
  llvm::SmallString<256> real;
  if (llvm::sys::fs::real_path(path, real))
    real = path;
  std::string key = real.str().str();
  if (llvm::is_contained(stack, key)) {
    std::string cycle;
    auto start = llvm::find(stack, key);
    for (auto it = start; it != stack.end(); ++it)
      cycle += llvm::sys::path::filename(*it).str() + " -> ";
    diags.error(importedAt, "cyclic import: " + cycle + llvm::sys::path::filename(key).str());
    return nullptr;
  }
  if (auto it = loaded.find(key); it != loaded.end())
    return it->second;

  unsigned buffer = diags.addFile(path, importedAt.Start);
  if (!buffer)
    return nullptr;
  auto module = parseModelFile(buffer, diags);
  if (!module)
    return nullptr;
  const ModuleAST *result = module.get();
  loaded[key] = result;
  modules.push_back(std::move(module));

  if (stack.size() >= kMaxImportDepth) {
    diags.error(importedAt,
                "imports nested deeper than " + std::to_string(kMaxImportDepth) + " files");
    return result;
  }
  stack.push_back(key);
  for (const ImportAST &imp : result->imports)
    if (auto file = resolveImport(*result, imp))
      load(*file, imp.range, stack, onLoaded);
  stack.pop_back();
  onLoaded(*result);
  return result;
}

std::optional<std::string> ModuleLoader::resolveImport(const ModuleAST &from,
                                                       const ImportAST &imp) {
  std::string relative = imp.module;
  std::replace(relative.begin(), relative.end(), '.', '/');
  relative += ".shard";
  std::vector<std::string> folders{llvm::sys::path::parent_path(from.path).str()};
  if (folders[0].empty())
    folders[0] = ".";
  folders.insert(folders.end(), importPaths.begin(), importPaths.end());
  folders.push_back(SHARDC_STDLIB_DIR);
  for (const std::string &folder : folders) {
    llvm::SmallString<256> candidate(folder);
    llvm::sys::path::append(candidate, relative);
    if (llvm::sys::fs::is_regular_file(candidate))
      return candidate.str().str();
  }
  std::string searched;
  for (const std::string &folder : folders)
    searched += (searched.empty() ? "" : ", ") + folder;
  diags.error(imp.range, "import not found: no file '" + relative + "' in " + searched +
                             " (add a folder with -I)");
  return std::nullopt;
}
