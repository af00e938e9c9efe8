//===- shardc.cpp - the shardc driver -------------------------------------===//
//
// shardc MODEL.shard --rules RULES.rules [--emit=STAGE] [-o FILE] [-I DIR]
//
// Runs the pipeline up to the stage named by --emit and prints it; without
// --emit, `-o FILE` builds an executable and no -o prints the typed plan. The work
// runs on a thread with a large stack: parsing and elaboration recurse along
// the input's nesting, which the parser bounds but a user may still push far.
//
//===----------------------------------------------------------------------===//

#include "shardc/AST/ASTPrinter.h"
#include "shardc/Frontend/LoadProgram.h"
#include "shardc/MLIRGen/MLIRGen.h"
#include "shardc/Manifest/Manifest.h"
#include "shardc/Pipeline/Pipeline.h"
#include "shardc/Parse/Parser.h"
#include "shardc/Report/Report.h"
#include "shardc/Sema/LayoutPrinter.h"
#include "shardc/Sema/Sema.h"
#include "shardc/Sema/TypedPrinter.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/thread.h"

using namespace shardc;
namespace cl = llvm::cl;

namespace {

enum class Emit { AST, Typed, Layout, MLIR, Sharded, SPMD, LLVM, Executable };

cl::OptionCategory category("shardc options");
cl::opt<std::string> modelFile(cl::Positional, cl::desc("<model.shard>"), cl::Required,
                               cl::cat(category));
cl::opt<std::string> rulesFile("rules", cl::desc("Partition rules file (mesh and rules)"),
                               cl::value_desc("file.rules"), cl::cat(category));
cl::opt<Emit> emit(
    "emit", cl::desc("Stage to print (default: the executable with -o, else typed)"),
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
enum class ReportFormat { None, Text, JSON };
cl::opt<ReportFormat> report(
    "report", cl::desc("Print the communication plan (memory per rank, every collective)"),
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
cl::list<std::string> configSets(
    "set", cl::desc("Set a config parameter of the model instead of its default (repeatable)"),
    cl::value_desc("NAME=VALUE"), cl::cat(category));

/// The --set flags, each in a buffer of its own (`--set NAME=VALUE`) so that
/// diagnostics point into it.
int reportErrors(DiagnosticEngine &diags, unsigned atLeast = 0) {
  unsigned n = std::max(diags.errorCount(), atLeast);
  llvm::errs() << n << " error" << (n == 1 ? "" : "s") << " generated.\n";
  return 1;
}

/// The warning of --max-memory-per-rank, when a rank needs more.
void warnAboveMemoryLimit(const MemoryPerRank &memory, DiagnosticEngine &diags) {
  if (maxMemoryPerRank.empty())
    return;
  const int64_t limit = parseBytes(maxMemoryPerRank);
  if (memory.total() > limit)
    diags.warning(SMRange(), "a rank needs " + formatBytes(memory.total()) + " (" +
                                 describeTotal(memory) + "), more than --max-memory-per-rank " +
                                 maxMemoryPerRank);
}

/// The MLIR stages: prints the module at `stage` to `os`, or writes the
/// executable. MLIR's diagnostics are shown with the source lines.
/// `microbatch` is the program at one microbatch's size, if the rules ask for
/// microbatches.
bool lower(const TypedProgram &program, const TypedProgram *microbatch, Emit stage,
           bool printStage, const CodeTarget &target, DiagnosticEngine &diags,
           llvm::raw_ostream &os) {
  mlir::DialectRegistry registry;
  registerDialects(registry);
  mlir::MLIRContext context(registry);
  StageDiagnostics stages(context, diags);
  if (mlir::failed(checkPassManagerOptions(context)))
    return false;
  std::optional<StepProgram> steps = buildStepProgram(program, diags, microbatch, !unrollScans);
  if (!steps)
    return false;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (mlir::failed(stages.run("mlir", [&] {
        module = mlirGen(context, program, *steps, diags, {reference});
        return mlir::success(bool(module));
      })))
    return false;
  annotateCodeTarget(*module, target);
  auto print = [&] {
    if (!printStage)
      return true;
    mlir::OpPrintingFlags flags;
    if (printLocations)
      flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false).useLocalScope();
    module->print(os, flags);
    return true;
  };
  if (stage == Emit::MLIR)
    return print();
  if (!reference && mlir::failed(stages.run("sharded", [&] { return propagateShardings(*module); })))
    return false;
  if (stage == Emit::Sharded)
    return print();
  if (mlir::failed(stages.run("spmd", [&] {
        return reference ? buildReferenceTrainStep(*module) : partition(*module);
      })))
    return false;
  MemoryPerRank memory = memoryPerRank(*module);
  const bool reports = report != ReportFormat::None;
  if (stage == Emit::SPMD && !reports && !strict)
    return print();
  // The memory the report and the manifest promise is the arenas planned by the
  // lowering itself: lower a copy, so that the partitioned module stays for
  // the report's collectives (and for --emit=spmd).
  mlir::OwningOpRef<mlir::ModuleOp> lowered;
  if (stage != Emit::SPMD || reports) {
    lowered = module->clone();
    if (mlir::failed(stages.run("llvm", [&] { return lowerToLLVM(*lowered); })))
      return false;
    addPlannedMemory(*lowered, memory);
    addKernelMemory(*lowered, memory);
  }
  addProcessMemory(runtimeDir, memory);
  warnAboveMemoryLimit(memory, diags);
  if (reports || strict) {
    auto text = buildReport(*module, memory, report == ReportFormat::JSON, strict);
    if (mlir::failed(text))
      return false;
    if (reports)
      llvm::outs() << *text;
  }
  if (stage == Emit::SPMD)
    return print();
  mlir::FailureOr<std::string> plan = buildReport(*module, memory, /*asJson=*/true, /*strict=*/false);
  if (mlir::failed(plan))
    return false;
  std::string manifest = buildManifest(program, *steps, reference, memory, *plan, target);
  if (mlir::failed(stages.run("llvm", [&] { return addMain(*lowered, manifest); })))
    return false;
  module = std::move(lowered);
  if (stage == Emit::LLVM)
    return print();
  return mlir::succeeded(stages.run(
      "exe", [&] { return emitExecutable(*module, outputFile, runtimeDir, target, diags); }));
}

int compile() {
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr);
  if (!maxMemoryPerRank.empty() && parseBytes(maxMemoryPerRank) < 0) {
    diags.toolError("--max-memory-per-rank needs a size such as 4G, 512MiB or 1048576, not '" +
                    maxMemoryPerRank + "'");
    return reportErrors(diags);
  }
  std::optional<CodeTarget> target = resolveCodeTarget(targetCpu, targetFeatures, sourceMgr, diags);
  if (!target)
    return reportErrors(diags);
  std::string out;
  llvm::raw_string_ostream os(out);

  std::unique_ptr<RulesFileAST> rules;
  if (!rulesFile.empty())
    if (unsigned buffer = diags.addFile(rulesFile))
      rules = parseRulesFile(buffer, diags);

  Emit stage = emit.getNumOccurrences() ? emit.getValue()
               : outputFile != "-"     ? Emit::Executable
               : report != ReportFormat::None || strict ? Emit::SPMD
                                                        : Emit::Typed;
  // --report without --emit prints only the plan.
  bool printStage = emit.getNumOccurrences() || (report == ReportFormat::None && !strict);
  if (stage == Emit::AST) {
    unsigned buffer = diags.addFile(modelFile);
    auto module = buffer ? parseModelFile(buffer, diags) : nullptr;
    if (module)
      printAST(*module, sourceMgr, os);
    if (rules)
      printAST(*rules, sourceMgr, os);
  } else {
    if (rulesFile.empty() && !(reference && stage != Emit::Typed && stage != Emit::Layout)) {
      diags.toolError(reference ? "--emit=typed prints the rules' plan and needs --rules "
                                  "FILE.rules; --reference alone goes with --emit=mlir and later "
                                  "stages"
                                : "a rules file is needed: --rules FILE.rules (or --reference "
                                  "to build the unpartitioned program)");
      return reportErrors(diags);
    }
    if (stage == Emit::Executable && outputFile == "-") {
      diags.toolError("an executable needs -o FILE");
      return reportErrors(diags);
    }
    auto sets = parseConfigOverrides(configSets, sourceMgr, diags);
    if (!sets)
      return reportErrors(diags);
    LoadProgramOptions options;
    options.importDirs.assign(importDirs.begin(), importDirs.end());
    options.config = *sets;
    options.rules = rules.get();
    options.rulesNamed = !rulesFile.empty();
    options.reference = reference;
    options.microbatch = stage != Emit::Layout;
    LoadedProgram loaded = loadProgram(modelFile, options, diags);
    std::optional<TypedProgram> &program = loaded.program;
    std::optional<TypedProgram> &microbatch = loaded.microbatch;
    if (program && stage == Emit::Layout)
      printLayouts(*program, os);
    else if (program && stage == Emit::Typed) {
      printTypedProgram(*program, diags, os);
      // The plan (no --emit, no -o) is a promise that the layout compiles:
      // partition it too, so that a layout the partitioner rejects fails here
      // as it would with -o.
      if (!emit.getNumOccurrences() && !reference &&
          !lower(*program, microbatch ? &*microbatch : nullptr, Emit::SPMD,
                 /*printStage=*/false, *target, diags, llvm::nulls()))
        return reportErrors(diags, 1);
    }
    else if (program &&
             !lower(*program, microbatch ? &*microbatch : nullptr, stage, printStage, *target,
                    diags, os))
      return reportErrors(diags, 1);
    else if (program && stage == Emit::Executable)
      return 0; // written by the linker
  }
  if (diags.hasErrors())
    return reportErrors(diags);

  std::error_code ec;
  llvm::ToolOutputFile output(outputFile, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    diags.toolError("cannot write '" + outputFile + "': " + ec.message());
    return reportErrors(diags);
  }
  output.os() << out;
  output.keep();
  return 0;
}

/// `shardc tune ...` is shardc-tune, installed beside shardc: the layout search
/// drives shardc itself for each candidate.
int runTune(int argc, char **argv) {
  std::string self = llvm::sys::fs::getMainExecutable(argv[0], (void *)&runTune);
  llvm::SmallString<256> tool(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(tool, "shardc-tune");
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
    return runTune(argc, argv);
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
                              "  MLIR's pass manager options (--mlir-print-ir-after-all,\n"
                              "  --mlir-timing, ...) apply to every stage; --help-hidden lists "
                              "them.\n");
  int status = 1;
  llvm::thread worker(std::optional<unsigned>(512u << 20), [&] { status = compile(); });
  worker.join();
  return status;
}
