//===- FrontEnd.h - what `shardc --emit=typed` runs, for fuzzers -*- C++ -*-===//
//
// Parse, imports, sema and the rules linter on a model file and a rules file,
// with the typed program and the layouts printed, diagnostics and all output
// going nowhere: a fuzzer looks for crashes, hangs and sanitizer reports, not
// for the verdict.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_FUZZ_FRONTEND_H
#define SHARDC_FUZZ_FRONTEND_H

#include "shardc/Frontend/ModuleLoader.h"
#include "shardc/Parse/Parser.h"
#include "shardc/Sema/LayoutPrinter.h"
#include "shardc/Sema/Sema.h"
#include "shardc/Sema/TypedPrinter.h"

namespace shardc::fuzz {

inline void typeCheck(const std::string &modelPath, const std::string &rulesPath) {
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr, llvm::nulls());
  std::unique_ptr<RulesFileAST> rules;
  if (unsigned buffer = diags.addFile(rulesPath))
    rules = parseRulesFile(buffer, diags);
  Sema sema(diags);
  ModuleLoader loader({}, diags);
  const ModuleAST *model =
      loader.loadModelFile(modelPath, [&](const ModuleAST &module) { sema.addModule(module); });
  std::optional<TypedProgram> program = model ? sema.analyzeModel(*model, modelPath) : std::nullopt;
  if (!program || !rules || !applyRules(*program, *rules, diags))
    return;
  printTypedProgram(*program, diags, llvm::nulls());
  printLayouts(*program, llvm::nulls());
}

} // namespace shardc::fuzz

#endif
