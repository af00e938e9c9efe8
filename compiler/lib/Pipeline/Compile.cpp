//===- Compile.cpp - what shardc runs on a model and its rules ------------===//
//
// 1. Parse the rules and resolve the code target: errors of the command first.
// 2. --emit=ast prints the syntax trees; every other stage builds the typed
//    program (loadProgram: load, analyse, apply the rules, and the program at
//    one microbatch's size).
// 3. --emit=typed and --emit=layout print it; the plan (no --emit, no -o) is
//    partitioned too, so that a layout the partitioner rejects fails here.
// 4. The MLIR stages (lower): the step functions, MLIRGen, propagation,
//    partitioning, the lowering to LLVM with its planned memory, the report
//    and the manifest, the executable; each stops where --emit says.
//
//===----------------------------------------------------------------------===//

#include "shardc/Pipeline/Compile.h"

#include "shardc/AST/ASTPrinter.h"
#include "shardc/Frontend/LoadProgram.h"
#include "shardc/MLIRGen/MLIRGen.h"
#include "shardc/Manifest/Manifest.h"
#include "shardc/Parse/Parser.h"
#include "shardc/Pipeline/Pipeline.h"
#include "shardc/Report/Report.h"
#include "shardc/Sema/LayoutPrinter.h"
#include "shardc/Sema/Sema.h"
#include "shardc/Sema/TypedPrinter.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace shardc;
using Emit = CompileOptions::Emit;
using ReportFormat = CompileOptions::ReportFormat;

namespace {

/// Says how many errors there were; the command's exit status.
int reportErrors(DiagnosticEngine &diags, unsigned atLeast = 0) {
  unsigned n = std::max(diags.errorCount(), atLeast);
  llvm::errs() << n << " error" << (n == 1 ? "" : "s") << " generated.\n";
  return 1;
}

/// The warning of --max-memory-per-rank, when a rank needs more.
void warnAboveMemoryLimit(const CompileOptions &o, const MemoryPerRank &memory,
                          DiagnosticEngine &diags) {
  if (o.maxMemoryPerRank.empty())
    return;
  const int64_t limit = parseBytes(o.maxMemoryPerRank);
  if (memory.total() > limit)
    diags.warning(SMRange(), "a rank needs " + formatBytes(memory.total()) + " (" +
                                 describeTotal(memory) + "), more than --max-memory-per-rank " +
                                 o.maxMemoryPerRank);
}

/// The MLIR stages: prints the module at `stage` to `os`, or writes the
/// executable. MLIR's diagnostics are shown with the source lines.
/// `microbatch` is the program at one microbatch's size, if the rules ask for
/// microbatches.
bool lower(const CompileOptions &o, const TypedProgram &program, const TypedProgram *microbatch,
           Emit stage, bool printStage, const CodeTarget &target, DiagnosticEngine &diags,
           llvm::raw_ostream &os) {
  mlir::DialectRegistry registry;
  registerDialects(registry);
  mlir::MLIRContext context(registry);
  StageDiagnostics stages(context, diags);
  if (mlir::failed(checkPassManagerOptions(context)))
    return false;
  std::optional<StepProgram> steps = buildStepProgram(program, diags, microbatch, !o.unrollScans);
  if (!steps)
    return false;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (mlir::failed(stages.run("mlir", [&] {
        module = mlirGen(context, program, *steps, diags, {o.reference});
        return mlir::success(bool(module));
      })))
    return false;
  annotateCodeTarget(*module, target);
  auto print = [&] {
    if (!printStage)
      return true;
    mlir::OpPrintingFlags flags;
    if (o.printLocations)
      flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false).useLocalScope();
    module->print(os, flags);
    return true;
  };
  if (stage == Emit::MLIR)
    return print();
  if (!o.reference &&
      mlir::failed(stages.run("sharded", [&] { return propagateShardings(*module); })))
    return false;
  if (stage == Emit::Sharded)
    return print();
  if (mlir::failed(stages.run("spmd", [&] {
        return o.reference ? buildReferenceTrainStep(*module) : partition(*module);
      })))
    return false;
  MemoryPerRank memory = memoryPerRank(*module);
  const bool reports = o.report != ReportFormat::None;
  if (stage == Emit::SPMD && !reports && !o.strict)
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
  addProcessMemory(o.runtimeDir, memory);
  warnAboveMemoryLimit(o, memory, diags);
  if (reports || o.strict) {
    auto text = buildReport(*module, memory, o.report == ReportFormat::JSON, o.strict);
    if (mlir::failed(text))
      return false;
    if (reports)
      llvm::outs() << *text;
  }
  if (stage == Emit::SPMD)
    return print();
  mlir::FailureOr<std::string> plan =
      buildReport(*module, memory, /*asJson=*/true, /*o.strict=*/false);
  if (mlir::failed(plan))
    return false;
  std::string manifest =
      buildManifest(program, *steps, o.reference, memory, *plan, target.cpu, target.features);
  if (mlir::failed(stages.run("llvm", [&] { return addMain(*lowered, manifest); })))
    return false;
  module = std::move(lowered);
  if (stage == Emit::LLVM)
    return print();
  return mlir::succeeded(stages.run(
      "exe", [&] { return emitExecutable(*module, o.outputFile, o.runtimeDir, target, diags); }));
}

} // namespace

int shardc::compile(const CompileOptions &o) {
  llvm::SourceMgr sourceMgr;
  DiagnosticEngine diags(sourceMgr);
  if (!o.maxMemoryPerRank.empty() && parseBytes(o.maxMemoryPerRank) < 0) {
    diags.toolError("--max-memory-per-rank needs a size such as 4G, 512MiB or 1048576, not '" +
                    o.maxMemoryPerRank + "'");
    return reportErrors(diags);
  }
  std::optional<CodeTarget> target =
      resolveCodeTarget(o.targetCpu, o.targetFeatures, sourceMgr, diags);
  if (!target)
    return reportErrors(diags);
  std::string out;
  llvm::raw_string_ostream os(out);

  std::unique_ptr<RulesFileAST> rules;
  if (!o.rulesFile.empty())
    if (unsigned buffer = diags.addFile(o.rulesFile))
      rules = parseRulesFile(buffer, diags);

  Emit stage = o.emit                                       ? *o.emit
               : o.outputFile != "-"                        ? Emit::Executable
               : o.report != ReportFormat::None || o.strict ? Emit::SPMD
                                                            : Emit::Typed;
  // --report without --emit prints only the plan.
  bool printStage = o.emit.has_value() || (o.report == ReportFormat::None && !o.strict);
  if (stage == Emit::AST) {
    unsigned buffer = diags.addFile(o.modelFile);
    auto module = buffer ? parseModelFile(buffer, diags) : nullptr;
    if (module)
      printAST(*module, sourceMgr, os);
    if (rules)
      printAST(*rules, sourceMgr, os);
  } else {
    if (o.rulesFile.empty() && !(o.reference && stage != Emit::Typed && stage != Emit::Layout)) {
      diags.toolError(o.reference ? "--emit=typed prints the rules' plan and needs --rules "
                                    "FILE.rules; --reference alone goes with --emit=mlir and later "
                                    "stages"
                                  : "a rules file is needed: --rules FILE.rules (or --reference "
                                    "to build the unpartitioned program)");
      return reportErrors(diags);
    }
    if (stage == Emit::Executable && o.outputFile == "-") {
      diags.toolError("an executable needs -o FILE");
      return reportErrors(diags);
    }
    auto sets = parseConfigOverrides(o.configSets, sourceMgr, diags);
    if (!sets)
      return reportErrors(diags);
    LoadProgramOptions options;
    options.importDirs.assign(o.importDirs.begin(), o.importDirs.end());
    options.config = *sets;
    options.rules = rules.get();
    options.rulesNamed = !o.rulesFile.empty();
    options.reference = o.reference;
    options.microbatch = stage != Emit::Layout;
    LoadedProgram loaded = loadProgram(o.modelFile, options, diags);
    std::optional<TypedProgram> &program = loaded.program;
    std::optional<TypedProgram> &microbatch = loaded.microbatch;
    if (program && stage == Emit::Layout)
      printLayouts(*program, os);
    else if (program && stage == Emit::Typed) {
      printTypedProgram(*program, diags, os);
      // The plan (no --emit, no -o) is a promise that the layout compiles:
      // partition it too, so that a layout the partitioner rejects fails here
      // as it would with -o.
      if (!o.emit.has_value() && !o.reference &&
          !lower(o, *program, microbatch ? &*microbatch : nullptr, Emit::SPMD,
                 /*printStage=*/false, *target, diags, llvm::nulls()))
        return reportErrors(diags, 1);
    } else if (program && !lower(o, *program, microbatch ? &*microbatch : nullptr, stage,
                                 printStage, *target, diags, os))
      return reportErrors(diags, 1);
    else if (program && stage == Emit::Executable)
      return 0; // written by the linker
  }
  if (diags.hasErrors())
    return reportErrors(diags);

  std::error_code ec;
  llvm::ToolOutputFile output(o.outputFile, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    diags.toolError("cannot write '" + o.outputFile + "': " + ec.message());
    return reportErrors(diags);
  }
  output.os() << out;
  output.keep();
  return 0;
}
