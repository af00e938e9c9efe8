//===- ReportImpl.h - what the report's files share ------------*- C++ -*-===//
//
// The report (Report.h) is read off the partitioned module in three plans and
// printed by a fourth file:
//   CommunicationPlan.cpp  every collective, with its cause and its bytes
//   MemoryPlan.cpp         the bytes per rank, planned and at the step's peak
//   PipelinePlan.cpp       a pipeline's schedule, bubble and transfers
//   Report.cpp             the report as text or JSON, and the pass printing it
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_LIB_REPORT_REPORTIMPL_H
#define SHARDC_LIB_REPORT_REPORTIMPL_H

#include "shardc/Report/Report.h"
#include "shardc/Support/Mesh.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringExtras.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace shardc::report {

//===----------------------------------------------------------------------===//
// The communication plan (CommunicationPlan.cpp)
//===----------------------------------------------------------------------===//

/// The training step when the model has an optimizer, else the forward pass.
mlir::func::FuncOp stepFunction(mlir::ModuleOp module);

/// The bytes of a tensor of static shape (0 for any other type).
int64_t tensorBytes(mlir::Type type);

/// The source position in `loc`, through fused locations and a scan layer's
/// name (LayerLocations.h).
std::string describeLoc(mlir::Location loc);

/// The rules' mesh, from the grid MLIRGen made: its axes in grid order, named
/// by `shardc.axis_names` (by number in IR without them); none for the
/// unpartitioned reference.
Mesh meshOf(mlir::ModuleOp module);

struct Collective {
  std::string kind, axes, dtype, shape, loc;
  std::vector<std::string> axisNames;
  std::vector<std::string> causes; // the rules over its axes, or "constraint"
  std::string cause;               // the arguments among the operands of the op that needed it
  std::string gradient;            // the parameter whose gradient it carries, if one
  std::vector<std::string> bucket; // the parameters whose gradients it carries, if several
  int64_t elements = 0, bytes = 0, count = 0;
  int64_t sent = 0; // bytes each rank sends, by the ring algorithms
  bool reshard = false;
  bool moves = true;                // false: no byte leaves a rank
  bool gradientSync = false;        // reduces a parameter's gradient (--reduce-precision)
  int64_t stage = -1;               // a pipeline's stage whose ranks alone run it (-1: every rank)
  mlir::Operation *first = nullptr; // where --strict reports it

  /// What the report says made it: the gradient it carries, or the operands.
  std::string label() const {
    if (!bucket.empty())
      return "bucket: gradients of " + llvm::join(bucket, ", ");
    return gradient.empty() ? cause : "gradient of " + gradient;
  }
};

/// For each mesh axis, the rules and overrides that split something over it
/// (kAxisRulesAttr), as the report names them: "hidden -> model (tp.rules:4:3)".
std::map<std::string, std::vector<std::string>> axisRulesOf(mlir::ModuleOp module);

/// The names of `fn`'s parameter arguments.
std::set<std::string> parameterNames(mlir::func::FuncOp fn);

/// The collective `op` is, without its count; nothing for any other op.
std::optional<Collective> describeCollective(mlir::Operation *op, const Mesh &mesh,
                                             const std::set<std::string> &paramNames);

//===----------------------------------------------------------------------===//
// The pipeline plan (PipelinePlan.cpp)
//===----------------------------------------------------------------------===//

/// A pipeline's plan (shardc-pipeline-schedule): its schedule drawn, the
/// bubble, the bytes sent between stages and the activations each stage keeps.
struct PipelinePlan {
  int64_t stages = 0, microbatches = 0;
  std::string axis, schedule;
  struct Transfer {
    int64_t from, to, activationBytes = 0, cotangentBytes = 0;
  };
  std::vector<Transfer> transfers;
  std::vector<int64_t> slots, keptBytes; // per stage
  /// Each stage's time slots, forward and backward one slot each: "F3", "B0" or "".
  std::vector<std::vector<std::string>> grid;

  /// (p - 1) / (m + p - 1), the bubble of GPipe and 1F1B (Narayanan et al. 2021).
  double bubble() const { return double(stages - 1) / double(microbatches + stages - 1); }
  /// The idle share of the drawn schedule.
  double drawnBubble() const {
    int64_t idle = 0, total = 0;
    for (const auto &row : grid)
      for (const std::string &cell : row) {
        idle += cell.empty();
        ++total;
      }
    return total ? double(idle) / double(total) : 0;
  }
};

/// The plan of `module`'s pipeline, for its train step `fn`; none without one.
std::optional<PipelinePlan> pipelinePlan(mlir::ModuleOp module, mlir::func::FuncOp fn,
                                         const Mesh &mesh);

//===----------------------------------------------------------------------===//
// The memory plan (MemoryPlan.cpp)
//===----------------------------------------------------------------------===//

/// How many times `op` runs per call of `fn`: the product of the trip counts of
/// the loops around it (the microbatches').
int64_t timesRun(mlir::Operation *op, mlir::func::FuncOp fn);

/// The most bytes of intermediate tensors live at once in `fn`'s body, each
/// from the op that makes it to its last use (a returned one to the end); a
/// result without a buffer of its own (bufferSource) is its source's, which
/// lives as long as either.
int64_t activationsAtPeak(mlir::Block &body);

} // namespace shardc::report

#endif
