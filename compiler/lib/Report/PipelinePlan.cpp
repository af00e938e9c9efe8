//===- PipelinePlan.cpp - a pipeline's schedule drawn ---------------------===//
//
// A pipeline's plan (shardc-pipeline-schedule): its schedule drawn, the
// bubble, the bytes sent between stages and the activations each stage keeps.
//
//===----------------------------------------------------------------------===//

#include "ReportImpl.h"

#include "shardc/IR/Attributes.h"
#include "shardc/Schedule/PipelineSchedules.h"
#include "shardc/Support/Bytes.h"
#include "shardc/Support/Mesh.h"
#include "shardrt/huge_pages.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <nlohmann/json.hpp>

using namespace mlir;
using namespace shardc;
using json = nlohmann::json;

using namespace shardc::report;

std::optional<PipelinePlan> report::pipelinePlan(ModuleOp module, func::FuncOp fn,
                                                 const Mesh &mesh) {
  auto attr = module->getAttrOfType<DictionaryAttr>(kPipelineAttr);
  auto count = module->getAttrOfType<IntegerAttr>(kMicrobatchesAttr);
  if (!attr || !count || fn.getName() != kTrainFunction)
    return std::nullopt;
  PipelinePlan plan;
  plan.stages = attr.getAs<IntegerAttr>("stages").getInt();
  plan.axis = mesh.axes[attr.getAs<IntegerAttr>("axis").getInt()].first;
  plan.schedule = attr.getAs<StringAttr>("schedule").str();
  plan.microbatches = count.getInt();
  for (mlir::Attribute t : attr.getAs<ArrayAttr>("transfers")) {
    ArrayRef<int64_t> fromTo = cast<DenseI64ArrayAttr>(t).asArrayRef();
    plan.transfers.push_back({fromTo[0], fromTo[1]});
  }
  fn.walk([&](shard::SendOp send) {
    auto tag = send->getAttrOfType<IntegerAttr>(kTransferAttr);
    if (!tag || size_t(tag.getInt() / 2) >= plan.transfers.size())
      return;
    PipelinePlan::Transfer &t = plan.transfers[tag.getInt() / 2];
    (tag.getInt() % 2 ? t.cotangentBytes : t.activationBytes) =
        tensorBytes(send.getInput().getType());
  });
  const int64_t p = plan.stages, m = plan.microbatches;
  auto kept = attr.getAs<DenseI64ArrayAttr>("kept_bytes");
  for (int64_t s = 0; s < p; ++s) {
    plan.slots.push_back(pipelineSlots(plan.schedule, s, p, m));
    plan.keptBytes.push_back(kept && s < kept.size() ? plan.slots.back() * kept[s] : 0);
  }
  // Each action starts when its stage is free and its input is there: a
  // forward after the stage before's forward of the microbatch, a backward
  // after the stage after's backward.
  std::vector<std::vector<std::pair<bool, int64_t>>> actions(p);
  for (int64_t s = 0; s < p; ++s)
    for (const PipelineLoop &loop : pipelineSchedule(plan.schedule, s, p, m))
      for (int64_t i = 0; i < loop.count; ++i)
        for (const PipelineAction &a : loop.actions)
          actions[s].push_back({a.forward, a.scale * i + a.offset});
  std::vector<std::vector<int64_t>> forwardDone(p, std::vector<int64_t>(m, -1)),
      backwardDone(p, std::vector<int64_t>(m, -1));
  std::vector<size_t> next(p, 0);
  std::vector<int64_t> freeAt(p, 0);
  plan.grid.assign(p, {});
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t s = 0; s < p; ++s) {
      if (next[s] == actions[s].size())
        continue;
      auto [forward, j] = actions[s][next[s]];
      int64_t ready = forward ? (s ? forwardDone[s - 1][j] : 0)
                              : (s + 1 < p ? backwardDone[s + 1][j] : forwardDone[s][j]);
      if (ready < 0)
        continue;
      int64_t start = std::max(freeAt[s], ready);
      (forward ? forwardDone : backwardDone)[s][j] = start + 1;
      freeAt[s] = start + 1;
      plan.grid[s].resize(start + 1);
      plan.grid[s][start] = (forward ? "F" : "B") + std::to_string(j);
      ++next[s];
      progress = true;
    }
  }
  size_t width = 0;
  for (const auto &row : plan.grid)
    width = std::max(width, row.size());
  for (auto &row : plan.grid)
    row.resize(width);
  return plan;
}
