//===- Pipeline.h - from annotated MLIR to an executable --------*- C++ -*-===//
//
// The stages after MLIRGen, each printable with `shardc --emit=STAGE`:
//   sharded  upstream sharding-propagation: every value annotated
//   spmd     upstream shard-partition: local shapes and explicit collectives
//   llvm     collectives lowered to libshardrt calls, bufferized, lowered to
//            the LLVM dialect, with the entry point and `main` added
//   (exe)    LLVM IR optimised, an object file, linked with libshardrt
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_PIPELINE_PIPELINE_H
#define SHARDC_PIPELINE_PIPELINE_H

#include "shardc/Sema/TypedProgram.h"
#include "shardc/Support/Diagnostics.h"
#include "shardc/Train/StepFunctions.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

#include "llvm/Support/SourceMgr.h"

#include <set>
#include <string>

namespace mlir {
class DialectRegistry;
class Diagnostic;
class MLIRContext;
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
void registerPipelineDialects(mlir::DialectRegistry &registry);

/// Runs a textual pass pipeline on the module, written without the
/// `builtin.module(...)` anchor: `func.func(cse), inline`.
mlir::LogicalResult runPassPipeline(mlir::ModuleOp module, llvm::StringRef pipeline);

/// sharding-propagation on every function (no cse before partitioning: it
/// merges tensor.empty ops that then carry two shardings, which crashes
/// shard-partition).
mlir::LogicalResult propagateShardings(mlir::ModuleOp module);

/// shard-partition (then canonicalize) on every function.
mlir::LogicalResult partition(mlir::ModuleOp module);

/// Lowers a partitioned (or reference) module to the LLVM dialect, adding
/// `shardc_entry(void **buffers)` and a `main` that calls shardrt_main with
/// `manifest`.
mlir::LogicalResult lowerToLLVM(mlir::ModuleOp module, llvm::StringRef manifest);

/// Translates to LLVM IR, optimises at -O3 for the host, writes an object
/// file and links it with libshardrt from `runtimeLibDir` into `output`.
/// Problems of the command or the machine (a missing folder or linker) go to
/// `diags`; its own failures are MLIR errors on the module.
mlir::LogicalResult emitExecutable(mlir::ModuleOp module, llvm::StringRef output,
                                   llvm::StringRef runtimeLibDir, DiagnosticEngine &diags);

} // namespace shardc

#endif
