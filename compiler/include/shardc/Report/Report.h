//===- Report.h - the communication plan of a partitioned module -*- C++ -*-===//
//
// An analysis of the IR alone: what MLIRGen stamped on the module
// (shardc/IR/Attributes.h) and what shard-partition made of it. shardc
// prints it for --report and --strict; shardc-opt's
// `shardc-print-comm-plan` prints it for any module, so lit tests can check
// it on hand-written or `--emit=spmd --locations` IR.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_REPORT_REPORT_H
#define SHARDC_REPORT_REPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Support/LLVM.h"

#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>

namespace shardc {

/// What one rank holds, in bytes (saturating), read off a partitioned (or
/// reference) module: the arguments of its train step (its eval step without an
/// optimizer) by their `shardc.role`, and its intermediate tensors: all of them
/// (`activations`, no buffer reuse) and the most live at once
/// (`activationsAtPeak`, each freed after its last use). The arenas are those
/// shardc-plan-buffers planned for each step function when the module was
/// lowered (addPlannedMemory), by role: "train", "eval", "grad".
struct MemoryPerRank {
  int64_t parameters = 0, optimizerState = 0, inputs = 0, activations = 0, activationsAtPeak = 0;
  llvm::SmallVector<std::pair<std::string, int64_t>, 3> arenas;
  /// The step's floating-point work, the part of it in contractions and
  /// convolutions (GEMM-like: compute-bound, where the rest streams through
  /// memory), and the part that recomputes what a `remat` policy did not keep
  /// (ops marked shardc.remat): 2 per multiply-add of a loop nest with a
  /// reduction, 1 per iteration of the others.
  int64_t stepFlops = 0, contractionFlops = 0, rematFlops = 0, rematOps = 0;
  /// --generate's KV cache (decode_step's caches): what the driver holds of them, each
  /// read and its new value written (twice their bytes); not in total(), which is
  /// training's. `kvCaches` counts them (a layer's keys and values are two).
  int64_t kvCacheBytes = 0;
  int kvCaches = 0;
  /// What a rank holds before the program's own memory (MPI, the runtime, the
  /// libraries' code), as `shardrt-calibrate --process-memory` measured it on
  /// `processRanks` ranks of this machine when the runtime was built; -1 when
  /// not measured (addProcessMemory).
  int64_t process = -1;
  int64_t processRanks = 0;
  /// oneDNN's copies of the operands of the `convolutions` distinct convolutions
  /// the runtime runs on it (addKernelMemory).
  int64_t convolutionBuffers = 0;
  int convolutions = 0;
  /// Whether the program calls the runtime's product or convolution kernels
  /// (addKernelMemory), and what a rank's first calls into oneDNN add to it
  /// whatever their shapes, as measured with the process (-1: not measured).
  bool callsKernels = false;
  int64_t onednnCode = -1;
  /// oneDNN's code where the program calls kernels and it was measured.
  int64_t onednnMemory() const;
  /// The most of the runtime's scratch buffer one kernel or collective call
  /// takes, as the lowering planned it (addPlannedMemory).
  int64_t scratchBytes = 0;
  /// The scratch buffer as the runtime maps it: in whole 2 MiB pages.
  int64_t scratch() const;
  /// The largest of the steps' arenas (train, eval, and --generate's prefill
  /// and decode: the runtime runs one at a time; grad_step only to explain a
  /// failure) in whole 2 MiB pages, as the runtime maps it, or the activations
  /// at the peak before the module is lowered.
  int64_t stepArena() const;
  /// What the driver allocates and the step may hold at once: parameters and
  /// state (once: the step updates them in place), inputs, the step's arena,
  /// the runtime's scratch, oneDNN's convolution buffers; and oneDNN's code
  /// and the process itself, when measured.
  int64_t total() const;
};
/// Reads the process's own memory from `shardrt-process.json` beside
/// libshardrt.so in `runtimeDir` (written when the runtime is built); leaves
/// `memory.process` at -1 when the file is missing or holds no figure.
void addProcessMemory(llvm::StringRef runtimeDir, MemoryPerRank &memory);
/// What total() adds up, in words and sizes.
std::string describeTotal(const MemoryPerRank &memory);
MemoryPerRank memoryPerRank(mlir::ModuleOp module);

/// The communication plan of a partitioned module (text, or JSON): memory
/// per rank and every collective with its cause. With `strict`, a reshard no
/// constraint or output sharding asked for is an error on the collective
/// (at its source location) and the result is failure.
mlir::FailureOr<std::string> buildReport(mlir::ModuleOp module, const MemoryPerRank &memory,
                                         bool asJson, bool strict);

#define GEN_PASS_DECL
#include "shardc/Report/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "shardc/Report/Passes.h.inc"

} // namespace shardc

#endif
