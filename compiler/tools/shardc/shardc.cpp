//===- shardc.cpp - the shardc driver -------------------------------------===//
//
// shardc MODEL.shard --rules RULES.rules [--emit=STAGE] [-o FILE] [-I DIR]
//
// Runs the pipeline up to the stage named by --emit and prints it; without
// --emit, `-o FILE` builds an executable and no -o prints the typed plan (the
// work itself is lib/Pipeline's compile, Compile.h). The work runs on a thread
// with a large stack: parsing and elaboration recurse along the input's
// nesting, which the parser bounds but a user may still push far.
// `shardc tune ...` runs the layout search, shardc-tune; `shardc export ...` writes
// a trained GPT for PyTorch, shardc-export.
//
//===----------------------------------------------------------------------===//

#include "shardc/Pipeline/Compile.h"
#include "shardc/Pipeline/Pipeline.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/thread.h"

using namespace shardc;
namespace cl = llvm::cl;

namespace {

using Emit = CompileOptions::Emit;
using ReportFormat = CompileOptions::ReportFormat;

cl::OptionCategory category("shardc options");
cl::opt<std::string> modelFile(cl::Positional, cl::desc("<model.shard>"), cl::Required,
                               cl::cat(category));
cl::opt<std::string> rulesFile("rules", cl::desc("Partition rules file (mesh and rules)"),
                               cl::value_desc("file.rules"), cl::cat(category));
cl::opt<Emit>
    emit("emit", cl::desc("Stage to print (default: the executable with -o, else typed)"),
         cl::values(clEnumValN(Emit::AST, "ast", "syntax trees of the model (and rules) file"),
                    clEnumValN(Emit::Typed, "typed",
                               "typed program with a sharding for every parameter, input and "
                               "constrained value (the rule linter)"),
                    clEnumValN(Emit::Layout, "layout",
                               "which rank holds which block of every parameter and input"),
                    clEnumValN(Emit::MLIR, "mlir",
                               "the step functions (train, eval, grad) in upstream dialects "
                               "with shard annotations"),
                    clEnumValN(Emit::Sharded, "sharded", "after sharding propagation"),
                    clEnumValN(Emit::SPMD, "spmd", "partitioned: local shapes and collectives"),
                    clEnumValN(Emit::LLVM, "llvm", "lowered to the LLVM dialect"),
                    clEnumValN(Emit::Executable, "exe", "an executable (needs -o)")),
         cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Output file (default: standard output)"),
                                cl::value_desc("file"), cl::init("-"), cl::cat(category));
cl::opt<bool> reference("reference",
                        cl::desc("Build the unpartitioned reference: one rank, no collectives "
                                 "(the rules file is optional)"),
                        cl::cat(category));
cl::opt<bool> unrollScans("unroll-scans",
                          cl::desc("Unroll each scan in train_step, one copy of its block per "
                                   "layer, instead of a loop over the layers"),
                          cl::cat(category));
cl::opt<bool> printLocations("locations", cl::desc("Print source locations in MLIR output"),
                             cl::cat(category));
cl::opt<ReportFormat>
    report("report", cl::desc("Print the communication plan (memory per rank, every collective)"),
           cl::ValueOptional, cl::init(ReportFormat::None),
           cl::values(clEnumValN(ReportFormat::Text, "", "as text (the default)"),
                      clEnumValN(ReportFormat::Text, "text", "as text"),
                      clEnumValN(ReportFormat::JSON, "json", "as JSON")),
           cl::cat(category));
cl::opt<bool> strict("strict",
                     cl::desc("Make every reshard the partitioner inserts that no rule or "
                              "constraint asked for an error"),
                     cl::cat(category));
cl::opt<std::string> runtimeDir("runtime-dir", cl::desc("Folder holding libshardrt.so"),
                                cl::value_desc("dir"), cl::init(SHARDRT_LIBRARY_DIR),
                                cl::cat(category));
cl::opt<std::string> maxMemoryPerRank(
    "max-memory-per-rank",
    cl::desc("Warn when a rank needs more than this (bytes, or with K, M, G or T: binary units)"),
    cl::value_desc("size"), cl::cat(category));
cl::opt<std::string> targetCpu(
    "target-cpu",
    cl::desc("The CPU to compile for: native (this host's, the default), x86-64-v2, x86-64-v3, "
             "x86-64-v4 or an LLVM x86-64 CPU name (znver3, skylake-avx512); the program "
             "refuses to start on a CPU without its features"),
    cl::value_desc("name"), cl::init("native"), cl::cat(category));
cl::opt<std::string> targetFeatures(
    "target-features",
    cl::desc("Instruction set features to add to or remove from the CPU's, as clang's "
             "-target-feature: +avx2,-avx512f"),
    cl::value_desc("list"), cl::cat(category));
cl::list<std::string> importDirs("I", cl::desc("Add a folder to the import search path"),
                                 cl::value_desc("dir"), cl::Prefix, cl::cat(category));
cl::list<std::string>
    configSets("set",
               cl::desc("Set a config parameter of the model instead of its default (repeatable)"),
               cl::value_desc("NAME=VALUE"), cl::cat(category));

/// The command line as the library's options.
CompileOptions options() {
  CompileOptions o;
  o.modelFile = modelFile;
  o.rulesFile = rulesFile;
  if (emit.getNumOccurrences())
    o.emit = emit.getValue();
  o.outputFile = outputFile;
  o.reference = reference;
  o.unrollScans = unrollScans;
  o.printLocations = printLocations;
  o.report = report;
  o.strict = strict;
  o.runtimeDir = runtimeDir;
  o.maxMemoryPerRank = maxMemoryPerRank;
  o.targetCpu = targetCpu;
  o.targetFeatures = targetFeatures;
  o.importDirs.assign(importDirs.begin(), importDirs.end());
  o.configSets.assign(configSets.begin(), configSets.end());
  return o;
}

/// `shardc tune ...` is shardc-tune, installed beside shardc: the layout search
/// drives shardc itself for each candidate. `shardc export ...` is shardc-export.
int runSibling(const char *name, int argc, char **argv) {
  std::string self = llvm::sys::fs::getMainExecutable(argv[0], (void *)&runSibling);
  llvm::SmallString<256> tool(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(tool, name);
  std::vector<llvm::StringRef> args = {tool};
  args.insert(args.end(), argv + 2, argv + argc);
  std::string message;
  int status = llvm::sys::ExecuteAndWait(tool, args, std::nullopt, {}, 0, 0, &message);
  if (status < 0)
    llvm::errs() << "shardc: error: cannot run " << tool << ": " << message << "\n";
  return status < 0 ? 1 : status;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  if (argc > 1 && llvm::StringRef(argv[1]) == "tune")
    return runSibling("shardc-tune", argc, argv);
  if (argc > 1 && llvm::StringRef(argv[1]) == "export")
    return runSibling("shardc-export", argc, argv);
  // MLIR's own options (--mlir-print-ir-after-all, --mlir-timing, ...) work on
  // every stage; --help-hidden lists them. The passes first: options such as
  // --mlir-print-ir-after=PASS take the names registered by then.
  registerPasses();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerAsmPrinterCLOptions();
  cl::HideUnrelatedOptions(category);
  // Hidden, not gone: --help-hidden lists MLIR's options and the pipeline's own.
  for (auto &[name, option] : cl::getRegisteredOptions())
    if (name.starts_with("mlir-") || name == "verify-each-pass")
      option->setHiddenFlag(cl::Hidden);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "shardc " SHARDC_VERSION " (LLVM/MLIR " LLVM_VERSION_STRING ", ANTLR4 runtime)\n";
  });
  cl::ParseCommandLineOptions(argc, argv,
                              "shardc: compiles a model file and a partition rules file\n\n"
                              "  shardc tune MODEL.shard --ranks N searches for the fastest\n"
                              "  layout and writes its rules file; shardc tune --help lists its "
                              "options.\n\n"
                              "  shardc export CKPT --format nanogpt|hf -o DIR writes a trained\n"
                              "  GPT's checkpoint for PyTorch; shardc export --help lists its "
                              "options.\n\n"
                              "  MLIR's pass manager options (--mlir-print-ir-after-all,\n"
                              "  --mlir-timing, ...) apply to every stage; --help-hidden lists "
                              "them.\n");
  int status = 1;
  llvm::thread worker(std::optional<unsigned>(512u << 20), [&] { status = compile(options()); });
  worker.join();
  return status;
}
