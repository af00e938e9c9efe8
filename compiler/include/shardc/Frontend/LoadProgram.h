//===- LoadProgram.h - a model file to its typed program --------*- C++ -*-===//
//
// The one entry every tool builds its typed program by (shardc, shardc tune,
// the language server, the fuzzers):
//   1. load the model file and its imports (ModuleLoader), each handed to sema;
//   2. analyse the model (Sema::analyzeModel), with the --set config values;
//   3. apply the rules, when there are any (applyRules);
//   4. when the rules ask for microbatches or a pipeline, analyse the model
//      again at one microbatch's size, for the training step's microbatch
//      functions (StepFunctions.h).
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_FRONTEND_LOADPROGRAM_H
#define SHARDC_FRONTEND_LOADPROGRAM_H

#include "shardc/AST/RulesAST.h"
#include "shardc/Frontend/ModuleLoader.h"
#include "shardc/Sema/Sema.h"
#include "shardc/Sema/TypedProgram.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shardc {

struct LoadProgramOptions {
  /// The -I folders, searched for an import after the importing file's own.
  std::vector<std::string> importDirs;
  /// Config parameters set instead of their defaults (--set NAME=VALUE).
  std::vector<ConfigOverride> config;
  /// The rules file's syntax tree; null when there is none or it did not parse.
  const RulesFileAST *rules = nullptr;
  /// A rules file was named: the program is only good with its rules applied,
  /// so rules that did not parse fail it as rules that do not apply do.
  bool rulesNamed = false;
  /// Rules that do not apply leave the program without its mesh (the shapes
  /// only, as the editor shows them) instead of leaving no program.
  bool keepShapesOnRuleErrors = false;
  /// The unpartitioned reference: a pipeline's microbatches run one after
  /// another, so the programs keep no pipeline.
  bool reference = false;
  /// Build the program at one microbatch's size too, when the rules ask for it.
  bool microbatch = true;
  /// A file without a model (a library of blocks) is checked as an import is,
  /// without a program and without an error.
  bool allowLibrary = false;
  /// Each file loaded, after the files it imports (the model file last).
  std::function<void(const ModuleAST &)> onLoaded;
};

struct LoadedProgram {
  /// Owns the syntax trees of every file loaded.
  std::unique_ptr<ModuleLoader> loader;
  /// The model file's syntax tree; null when it cannot be read or parsed.
  const ModuleAST *model = nullptr;
  /// The typed program, with the rules applied; none after an error.
  std::optional<TypedProgram> program;
  /// The program at one microbatch's size, when the rules ask for
  /// microbatches or a pipeline.
  std::optional<TypedProgram> microbatch;
};

/// Loads, analyses and applies the rules to the model file at `modelPath`,
/// reporting into `diags` (the microbatch program's warnings are the full
/// program's and are not said twice).
LoadedProgram loadProgram(const std::string &modelPath, const LoadProgramOptions &options,
                          DiagnosticEngine &diags);

} // namespace shardc

#endif
