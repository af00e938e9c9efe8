//===- shardc.cpp - the shardc driver -------------------------------------===//
//
// shardc MODEL.shard --rules RULES.rules [--emit=ast|typed] [-o FILE] [-I DIR]
//
// Runs the pipeline up to the stage named by --emit and prints it. The work
// runs on a thread with a large stack: parsing and elaboration recurse along
// the input's nesting, which the parser bounds but a user may still push far.
//
//===----------------------------------------------------------------------===//

#include "shardc/AST/ASTPrinter.h"
#include "shardc/Parse/Parser.h"
#include "shardc/Sema/Sema.h"
#include "shardc/Sema/TypedPrinter.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/thread.h"

using namespace shardc;
namespace cl = llvm::cl;

namespace {

enum class Emit { AST, Typed };

cl::OptionCategory category("shardc options");
cl::opt<std::string> modelFile(cl::Positional, cl::desc("<model.shard>"), cl::Required,
                               cl::cat(category));
cl::opt<std::string> rulesFile("rules", cl::desc("Partition rules file (mesh and rules)"),
                               cl::value_desc("file.rules"), cl::cat(category));
cl::opt<Emit> emit("emit", cl::desc("Stage to print"), cl::init(Emit::Typed),
                   cl::values(clEnumValN(Emit::AST, "ast", "syntax trees of the model (and rules) file"),
                              clEnumValN(Emit::Typed, "typed",
                                         "typed program with a sharding for every parameter, "
                                         "input and constrained value (the rule linter)")),
                   cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Output file (default: standard output)"),
                                cl::value_desc("file"), cl::init("-"), cl::cat(category));
cl::list<std::string> importDirs("I", cl::desc("Add a folder to the import search path"),
                                 cl::value_desc("dir"), cl::Prefix, cl::cat(category));

int compile() {
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr);
  std::string out;
  llvm::raw_string_ostream os(out);

  std::unique_ptr<RulesFileAST> rules;
  if (!rulesFile.empty())
    if (unsigned buffer = diags.addFile(rulesFile))
      rules = parseRulesFile(buffer, diags);

  if (emit == Emit::AST) {
    unsigned buffer = diags.addFile(modelFile);
    auto module = buffer ? parseModelFile(buffer, diags) : nullptr;
    if (module)
      printAST(*module, sourceMgr, os);
    if (rules)
      printAST(*rules, sourceMgr, os);
  } else {
    if (rulesFile.empty()) {
      llvm::WithColor::error(llvm::errs(), "shardc")
          << "--emit=typed needs a rules file: --rules FILE.rules\n";
      return 1;
    }
    SemaOptions options;
    options.importPaths.assign(importDirs.begin(), importDirs.end());
    auto program = analyzeModel(modelFile, options, diags);
    if (program && rules && applyRules(*program, *rules, diags))
      printTypedProgram(*program, diags, os);
  }
  if (diags.hasErrors()) {
    llvm::errs() << diags.errorCount() << " error" << (diags.errorCount() == 1 ? "" : "s")
                 << " generated.\n";
    return 1;
  }

  std::error_code ec;
  llvm::ToolOutputFile output(outputFile, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    llvm::WithColor::error(llvm::errs(), "shardc")
        << "cannot write '" << outputFile << "': " << ec.message() << "\n";
    return 1;
  }
  output.os() << out;
  output.keep();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "shardc " SHARDC_VERSION " (LLVM/MLIR " LLVM_VERSION_STRING ", ANTLR4 runtime)\n";
  });
  cl::ParseCommandLineOptions(argc, argv,
                              "shardc: compiles a model file and a partition rules file\n");
  int status = 1;
  llvm::thread worker(std::optional<unsigned>(512u << 20), [&] { status = compile(); });
  worker.join();
  return status;
}
