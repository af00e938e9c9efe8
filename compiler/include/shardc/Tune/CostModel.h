//===- CostModel.h - a layout's step time, predicted -------------*- C++ -*-===//
//
// The search ranks layouts before it runs any: a step's time is its
// contractions' floating-point work per rank at the GEMM rate measured with every
// rank of a host busy (bfloat16's under `precision matmul : bf16`), its other
// loop iterations (elementwise ops, reductions, the optimizer: bound by memory)
// at the streaming rate measured alike, plus each
// collective of the communication plan (shardc
// --report=json) at a latency and a bandwidth measured for the link its group
// crosses: shared memory inside a host, TCP between hosts. The constants come
// from shardrt-calibrate, run on this machine.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_TUNE_COSTMODEL_H
#define SHARDC_TUNE_COSTMODEL_H

#include "shardc/Sema/TypedProgram.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace shardc {

/// A ring collective's cost: `latency` for an all_reduce over every rank (its
/// 2 (ranks - 1) steps), then each byte a rank sends at `bytesPerSecond`.
struct LinkCost {
  double latency = 0, bytesPerSecond = 0;
};

struct Calibration {
  int64_t ranks = 0, hosts = 1;
  double gemmFlopsPerRank = 0;
  double gemmBf16FlopsPerRank = 0; // products in bfloat16; 0: not measured
  bool bf16Emulated = false;       // those on the f32 path: the CPU has no bf16 kernels
  double elementwisePerRank = 0;   // loop iterations per second of a streaming op
  LinkCost local;                  // inside a host
  std::optional<LinkCost> network; // between hosts (hosts > 1)
  llvm::json::Value toJSON() const;
};

llvm::Expected<Calibration> parseCalibration(const llvm::json::Value &value);

struct StepCost {
  double computeSeconds = 0, communicationSeconds = 0;
  int64_t memoryPerRank = 0, flops = 0, contractionFlops = 0, sentBytes = 0, collectives = 0;
  double gemmFlopsPerRank = 0; // the rate its contractions are priced at (f32's or bf16's)
  double seconds() const { return computeSeconds + communicationSeconds; }
};

/// The predicted train step of a layout on `mesh` (ranks in row-major order, each
/// host a run of consecutive ranks) from its report (shardc --report=json).
llvm::Expected<StepCost> predictStep(const llvm::json::Object &report, const Mesh &mesh,
                                     const Calibration &calibration);

} // namespace shardc

#endif
