//===- Pipeline.h - from annotated MLIR to an executable --------*- C++ -*-===//
//
// The stages after MLIRGen, each printable with `shardc --emit=STAGE`:
//   sharded  shardc-propagate (upstream sharding-propagation): every value
//            annotated
//   spmd     shardc-partition (upstream shard-partition): local shapes and
//            explicit collectives
//   llvm     shardc-lower-to-llvm: collectives lowered to libshardrt calls,
//            bufferized, lowered to the LLVM dialect, with the entry points
//            and `main` added around it
//   (exe)    LLVM IR optimised, an object file, linked with libshardrt
// Each pipeline is defined once (PassPipelines.cpp) and registered under its
// name for shardc-opt and the tests (Registration.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_PIPELINE_PIPELINE_H
#define SHARDC_PIPELINE_PIPELINE_H

#include "shardc/Report/Report.h"
#include "shardc/Support/Diagnostics.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
class Diagnostic;
class MLIRContext;
class OpPassManager;
} // namespace mlir

namespace shardc {

/// Routes MLIR's diagnostics into `diags` while it lives (counted, with the
/// source line of their location). Errors inside `run` are internal: they read
/// "internal error in stage 'S'" and ask for a report, except a sharding
/// model's "cannot partition: ...", which is about the layout.
class StageDiagnostics {
public:
  StageDiagnostics(mlir::MLIRContext &context, DiagnosticEngine &diags);
  ~StageDiagnostics();

  /// Runs one stage (named as in --emit); a failure without any error
  /// reported is an internal error too.
  mlir::LogicalResult run(llvm::StringRef stage, llvm::function_ref<mlir::LogicalResult()> body);

private:
  mlir::LogicalResult handle(mlir::Diagnostic &diag);
  SMRange sourceRange(mlir::Location loc) const;
  void reportInternal(SMRange at, const std::string &message);

  DiagnosticEngine &diags;
  uint64_t handlerId;
  mlir::MLIRContext &context;
  std::string stage; // empty outside `run`
  bool internalReported = false;
  std::set<std::pair<const char *, std::string>> reported; // where, what
};

/// Every dialect, interface and sharding model the pipeline needs, the
/// project's sharding models first (the first model attached to an op wins).
void registerDialects(mlir::DialectRegistry &registry);

/// Upstream's passes, the project's (shardc-*, Conversion/Passes.td and
/// Shard/Passes.td) and its pipelines, for textual pass pipelines and
/// shardc-opt's command line.
void registerPasses();

/// `shardc-propagate`: sharding-propagation (forward-backward), then
/// shardc-replicate-unsharded, on every function.
void buildPropagatePipeline(mlir::OpPassManager &pm);

/// `shardc-partition`: shardc-decompose-reshards, shard-partition,
/// canonicalize and cse on every function.
void buildPartitionPipeline(mlir::OpPassManager &pm);

/// `shardc-bufferize`: the step functions inlined into their entries,
/// collectives lowered to libshardrt calls (shardc-shard-to-runtime), the
/// module bufferized with every temporary freed.
void buildBufferizePipeline(mlir::OpPassManager &pm);

/// shardc-lower-to-llvm's options: shardc runs the defaults; the tests of
/// lib/Conversion turn them off for their C driver and for a reference.
struct LowerToLLVMPipelineOptions : mlir::PassPipelineOptions<LowerToLLVMPipelineOptions> {
  Option<bool> kernels{*this, "kernels",
                       llvm::cl::desc("Call libshardrt's kernels for matmuls and convolutions "
                                      "(shardc-lower-to-kernels); off, every linalg op "
                                      "becomes loops"),
                       llvm::cl::init(true)};
  Option<bool> barePointers{*this, "bare-pointers",
                            llvm::cl::desc("Pass memrefs to functions as bare pointers, as "
                                           "the entry points shardc adds need; off, as "
                                           "memref descriptors (unranked memrefs need them)"),
                            llvm::cl::init(true)};
};

/// `shardc-lower-to-llvm`: shardc-bufferize, shardc-lower-to-kernels, then
/// everything to the LLVM dialect.
void buildLowerToLLVMPipeline(mlir::OpPassManager &pm, const LowerToLLVMPipelineOptions &options);

/// Runs the pipeline `buildPipeline` makes on the module, with the pass
/// manager options of the command line (--mlir-print-ir-after-all,
/// --mlir-timing, ...).
mlir::LogicalResult runPipeline(mlir::ModuleOp module,
                                llvm::function_ref<void(mlir::OpPassManager &)> buildPipeline);

/// Applies the pass manager options of the command line to a pass manager on
/// `context`, to report a combination MLIR refuses (--mlir-print-ir-module-scope
/// needs --mlir-disable-threading) as the command's error before any stage,
/// where errors are shardc's.
mlir::LogicalResult checkPassManagerOptions(mlir::MLIRContext &context);

/// shardc-propagate on the module.
mlir::LogicalResult propagateShardings(mlir::ModuleOp module);

/// shardc-partition on the module.
mlir::LogicalResult partition(mlir::ModuleOp module);

/// The reference build's train_step from its microbatch functions
/// (shardc-accumulate-microbatches) or its layer loop's (shardc-layer-loop),
/// which partition() runs otherwise.
mlir::LogicalResult buildReferenceTrainStep(mlir::ModuleOp module);

/// Lowers a partitioned (or reference) module to the LLVM dialect: wraps each
/// step function in an entry point on buffers and runs shardc-lower-to-llvm.
mlir::LogicalResult lowerToLLVM(mlir::ModuleOp module);

/// Records in `memory` what the lowering of a module planned: the arena
/// shardc-plan-buffers planned for each entry point (`shardc.arena_bytes`)
/// and the runtime's scratch buffer (`shardc.scratch_bytes`).
void addPlannedMemory(mlir::ModuleOp lowered, MemoryPerRank &memory);

/// Records in `memory` whether a lowered module calls the runtime's product or
/// convolution kernels, and the buffers the runtime keeps for each distinct
/// convolution it runs on oneDNN (shardrt/convolution_buffers.h).
void addKernelMemory(mlir::ModuleOp lowered, MemoryPerRank &memory);

/// Adds to a lowered module `shardc_<role>(void **buffers)` for each entry and
/// a `main` that calls shardrt_main with `manifest`.
mlir::LogicalResult addMain(mlir::ModuleOp lowered, llvm::StringRef manifest);

/// The CPU the generated code is compiled for (--target-cpu, --target-features).
struct CodeTarget {
  std::string cpu;          // LLVM's name, `native` resolved to the host's
  std::string llvmFeatures; // the code generator's feature string: "+avx2,-avx512f"
  /// The instruction set features the code may use that the runtime checks at start
  /// (shardrt/cpu_features.def), in that file's order.
  std::vector<std::string> features;
};

/// Resolves --target-cpu and --target-features as clang's -mcpu and -target-feature:
/// the CPU's features (`native`: the host's CPU and features), then each `+NAME` or
/// `-NAME` of the comma-separated list with the features it implies (or that imply
/// it). std::nullopt after an error: an unknown CPU, or an entry of the list that is
/// malformed or unknown, located in a buffer of the flag's own.
std::optional<CodeTarget> resolveCodeTarget(llvm::StringRef cpu, llvm::StringRef features,
                                            llvm::SourceMgr &sourceMgr, DiagnosticEngine &diags);

/// Records `target` on the module (kTargetCpuAttr, kTargetFeaturesAttr): the report
/// and every printed stage say what the code is compiled for.
void annotateCodeTarget(mlir::ModuleOp module, const CodeTarget &target);

/// Translates to LLVM IR, optimises at -O2 for `target`, writes object files
/// and links them with libshardrt from `runtimeLibDir` into `output`.
/// Problems of the command or the machine (a missing folder or linker) go to
/// `diags`; its own failures are MLIR errors on the module.
mlir::LogicalResult emitExecutable(mlir::ModuleOp module, llvm::StringRef output,
                                   llvm::StringRef runtimeLibDir, const CodeTarget &target,
                                   DiagnosticEngine &diags);

} // namespace shardc

#endif
