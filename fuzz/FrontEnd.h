//===- FrontEnd.h - what `shardc --emit=typed` runs, for fuzzers -*- C++ -*-===//
//
// Parse, imports, sema and the rules linter (loadProgram, with the microbatch
// program) on a model file and a rules file, with the typed program and the
// layouts printed, diagnostics and all output going nowhere: a fuzzer looks
// for crashes, hangs and sanitizer reports, not for the verdict.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_FUZZ_FRONTEND_H
#define SHARDC_FUZZ_FRONTEND_H

#include "shardc/Frontend/LoadProgram.h"
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
  LoadProgramOptions options;
  options.rules = rules.get();
  options.rulesNamed = true;
  LoadedProgram loaded = loadProgram(modelPath, options, diags);
  if (!loaded.program)
    return;
  printTypedProgram(*loaded.program, diags, llvm::nulls());
  printLayouts(*loaded.program, llvm::nulls());
}

} // namespace shardc::fuzz

#endif
