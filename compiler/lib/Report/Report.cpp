//===- Report.cpp - the communication plan, printed -----------------------===//
//
// Read off the partitioned module alone, with what MLIRGen stamped on it
// (shardc/IR/Attributes.h):
// 1. Memory per rank: the local bytes of the parameter, optimizer state and
//    input arguments (by their `shardc.role`), and of every intermediate
//    tensor: all of them (no buffer reuse) and those live at once at the
//    step's peak (each freed after its last use; a reshape is a view of its
//    operand, as bufferization makes it).
// 2. Every collective, with its kind, mesh axes, local element count and
//    bytes, the source line of the op that needed it and its cause: the
//    parameter whose gradient it carries (when its result flows into the
//    update of that one parameter alone), or else the arguments among the
//    operands of the op that needed it (the sharded operands that made it
//    necessary). Collectives with the same kind, axes, shape and cause are
//    counted together: an unrolled scan gives one line per block, times its
//    layers. Traffic counts what moves between ranks: an all_slice (each rank
//    keeps its part) and a collective over mesh axes of size 1 move nothing.
// 3. Reshards (all_gather, all_to_all, all_slice) at no location in the
//    module's `shardc.requested_layouts` (the constraints and the outputs'
//    shardings), which --strict turns into errors.
//
// The plans are read in CommunicationPlan.cpp, MemoryPlan.cpp and
// PipelinePlan.cpp (ReportImpl.h); this file prints them, as text or JSON, and
// is the pass that does (shardc-print-comm-plan).
//
//===----------------------------------------------------------------------===//

#include "shardc/Report/Report.h"
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

namespace shardc {
#define GEN_PASS_DEF_PRINTCOMMPLANPASS
#include "shardc/Report/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;
using json = nlohmann::json;

using namespace shardc::report;

namespace {

struct PrintCommPlanPass : shardc::impl::PrintCommPlanPassBase<PrintCommPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<std::string> plan = buildReport(module, memoryPerRank(module), asJson, strict);
    if (failed(plan))
      return signalPassFailure();
    llvm::outs() << *plan;
    markAllAnalysesPreserved();
  }
};

} // namespace

static void printPipeline(const PipelinePlan &plan, llvm::raw_ostream &os) {
  const int64_t p = plan.stages, m = plan.microbatches;
  os << "pipeline: " << p << " stages along '" << plan.axis << "', " << m << " microbatches, "
     << plan.schedule << " schedule (a forward and a backward drawn one slot each)\n";
  size_t cell = 1 + std::to_string(m - 1).size();
  for (int64_t s = 0; s < p; ++s) {
    os << "  stage " << s << " |";
    for (const std::string &slot : plan.grid[s])
      os << " " << llvm::left_justify(slot.empty() ? "." : slot, cell);
    os << "\n";
  }
  os << llvm::formatv("  bubble: (p - 1) / (m + p - 1) = {0} / {1} = {2:F1} % of each stage's "
                      "time idle\n",
                      p - 1, m + p - 1, 100.0 * plan.bubble());
  for (const PipelinePlan::Transfer &t : plan.transfers)
    os << "  sent per microbatch: stage " << t.from << " -> " << t.to << " "
       << formatBytes(t.activationBytes) << ", its cotangent back " << formatBytes(t.cotangentBytes)
       << " (" << formatBytes(m * (t.activationBytes + t.cotangentBytes)) << " per step)\n";
  os << "  kept for the backward pass (the activations received, what the backward reads):";
  for (int64_t s = 0; s < p; ++s)
    os << (s ? "," : "") << " stage " << s << " " << formatBytes(plan.keptBytes[s]) << " ("
       << plan.slots[s] << (plan.slots[s] == 1 ? " microbatch)" : " microbatches)");
  os << "\n  each stage holds its own layers' parameters and optimizer state; the parameters "
        "outside the scan are on every rank, their gradients summed over the stages ([stage N]: "
        "collectives only that stage's ranks run)\n\n";
}

/// Every collective `fn` runs, once per distinct one with its count, each with the
/// rules that split tensors over its mesh axes, or the constraint that asked for it.
static std::vector<Collective> collectivesOf(func::FuncOp fn, ModuleOp module, const Mesh &mesh) {
  std::set<std::string> requested;
  if (auto locations = module->getAttrOfType<ArrayAttr>(kRequestedLayoutsAttr))
    for (auto loc : locations.getAsRange<LocationAttr>())
      if (std::string d = describeLoc(loc); !d.empty())
        requested.insert(d);

  std::vector<Collective> collectives;
  const std::set<std::string> paramNames = parameterNames(fn);
  const std::map<std::string, std::vector<std::string>> axisRules = axisRulesOf(module);
  fn.walk([&](Operation *op) {
    std::optional<Collective> c = describeCollective(op, mesh, paramNames);
    if (!c)
      return;
    // A reshard where a constraint (or an output's layout) asks for one is its doing;
    // anything else follows from the rules that split tensors over its mesh axes.
    const bool asked = c->reshard && requested.count(c->loc);
    c->reshard = c->reshard && !asked;
    if (asked)
      c->causes.push_back("constraint");
    else
      for (const std::string &axis : c->axisNames)
        if (auto rules = axisRules.find(axis); rules != axisRules.end())
          for (const std::string &rule : rules->second)
            if (!llvm::is_contained(c->causes, rule))
              c->causes.push_back(rule);
    for (Collective &seen : collectives)
      if (seen.kind == c->kind && seen.axes == c->axes && seen.shape == c->shape &&
          seen.loc == c->loc && seen.label() == c->label() &&
          seen.gradientSync == c->gradientSync && seen.stage == c->stage) {
        seen.count += timesRun(op, fn);
        return;
      }
    c->count = timesRun(op, fn);
    collectives.push_back(*c);
  });
  return collectives;
}

/// What collectives move per step and rank, per pipeline stage whose ranks alone
/// run them (-1: every rank).
struct Totals {
  int64_t bytes = 0, sent = 0, count = 0, local = 0, gradientSent = 0, gradientCount = 0;
};
static std::map<int64_t, Totals> totalsByStage(const std::vector<Collective> &collectives) {
  std::map<int64_t, Totals> byStage;
  for (const Collective &c : collectives) {
    Totals &t = byStage[c.stage];
    if (!c.moves) {
      t.local += c.count;
      continue;
    }
    t.bytes = addSaturating(t.bytes, mulSaturating(c.bytes, c.count));
    t.sent = addSaturating(t.sent, mulSaturating(c.sent, c.count));
    t.count += c.count;
    if (c.gradientSync) {
      t.gradientSent = addSaturating(t.gradientSent, mulSaturating(c.sent, c.count));
      t.gradientCount += c.count;
    }
  }
  return byStage;
}

static json collectiveJson(const Collective &c) {
  json entry = {{"kind", c.kind},
                {"mesh_axes", c.axes},
                {"shape", c.shape},
                {"elements", c.elements},
                {"bytes", c.bytes},
                {"count", c.count},
                {"source", c.loc},
                {"parameters", c.cause},
                {"gradient_of", c.gradient.empty() ? json(nullptr) : json(c.gradient)},
                {"bucket", c.bucket},
                {"caused_by", c.causes},
                {"reshard", c.reshard},
                {"gradient_sync", c.gradientSync},
                {"traffic", c.moves},
                {"sent_bytes", c.sent}};
  if (c.stage >= 0)
    entry["pipeline_stage"] = c.stage;
  return entry;
}

static void printCollective(const Collective &c, llvm::raw_ostream &os) {
  os << llvm::formatv("  {0,2} x {1,-22} over {2,-12} {3,-17} {4,8} elements {5,10}  {6}", c.count,
                      c.kind, c.axes, c.dtype + c.shape, c.elements, formatBytes(c.bytes), c.loc);
  if (!c.label().empty())
    os << "  (" << c.label() << ")";
  if (!c.causes.empty())
    os << "  by " << llvm::join(c.causes, "; ");
  if (c.gradientSync)
    os << "  [gradient]";
  if (c.stage >= 0)
    os << "  [stage " << c.stage << "]";
  if (c.reshard)
    os << "  [reshard]";
  if (!c.moves)
    os << "  [local: no traffic]";
  os << "\n";
}

FailureOr<std::string> shardc::buildReport(ModuleOp module, const MemoryPerRank &memory,
                                           bool asJson, bool strict) {
  func::FuncOp fn = stepFunction(module);
  if (!fn)
    return emitError(module.getLoc(), "no ")
           << kTrainFunction << " or " << kEvalFunction << " function to report on";
  std::string step = fn.getName() == kTrainFunction ? "train" : "eval";
  std::string model = module.getName().value_or("").str();
  std::string rules;
  if (auto path = module->getAttrOfType<StringAttr>(kRulesAttr))
    rules = path.str();
  const Mesh mesh = meshOf(module);

  const std::vector<Collective> collectives = collectivesOf(fn, module, mesh);
  auto decode = module.lookupSymbol<func::FuncOp>(kDecodeFunction);
  const std::vector<Collective> decodeCollectives =
      decode ? collectivesOf(decode, module, mesh) : std::vector<Collective>();

  // Per rank: what every rank runs, plus the busiest pipeline stage's own.
  std::map<int64_t, Totals> byStage = totalsByStage(collectives); // -1: every rank
  const Totals decodeTotals = totalsByStage(decodeCollectives)[-1];
  Totals busiest;
  for (const auto &[stage, t] : byStage)
    if (stage >= 0 && t.sent >= busiest.sent)
      busiest = t;
  const Totals &all = byStage[-1];
  const int64_t totalBytes = addSaturating(all.bytes, busiest.bytes);
  const int64_t totalSent = addSaturating(all.sent, busiest.sent);
  const int64_t totalCount = all.count + busiest.count, localCount = all.local + busiest.local;
  const int64_t gradientSent = addSaturating(all.gradientSent, busiest.gradientSent);
  const int64_t gradientCount = all.gradientCount + busiest.gradientCount;

  const std::optional<PipelinePlan> pipeline = pipelinePlan(module, fn, mesh);

  bool strictFailed = false;
  if (strict)
    for (const Collective &c : collectives)
      if (c.reshard) {
        // At the location alone: the message is about the source, not the op.
        emitError(c.first->getLoc())
            << "--strict: the partitioner inserted a reshard (" << c.kind << " over " << c.axes
            << ", " << c.dtype << c.shape << ")"
            << (!c.gradient.empty() ? " for the gradient of " + c.gradient
                : c.cause.empty()   ? ""
                                    : " for the use of " + c.cause)
            << " that no rule or constraint asked for; add a sharding constraint or change the "
               "rules so that the layouts agree";
        strictFailed = true;
      }
  if (strictFailed)
    return failure();

  const bool matmulInBf16 = precisionIsBf16(module, kMatmulPrecisionAttr);
  const bool gradientsInBf16 = precisionIsBf16(module, kGradientPrecisionAttr);
  auto targetCpu = module->getAttrOfType<StringAttr>(kTargetCpuAttr);
  std::vector<std::string> targetFeatures;
  if (auto features = module->getAttrOfType<ArrayAttr>(kTargetFeaturesAttr))
    for (auto feature : features.getAsValueRange<StringAttr>())
      targetFeatures.push_back(feature.str());
  if (asJson) {
    json report;
    report["model"] = model;
    report["rules"] = rules;
    report["matmul_precision"] = matmulInBf16 ? "bf16" : "f32";
    report["gradient_precision"] = gradientsInBf16 ? "bf16" : "f32";
    if (targetCpu)
      report["target"] = {{"cpu", targetCpu.str()}, {"features", targetFeatures}};
    json meshJson = json::object();
    for (const auto &[name, size] : mesh.axes)
      meshJson[name] = size;
    report["mesh"] = meshJson;
    report["ranks"] = mesh.numRanks();
    report["step"] = step;
    report["memory_per_rank"] = {{"parameters", memory.parameters},
                                 {"optimizer_state", memory.optimizerState},
                                 {"inputs", memory.inputs},
                                 {"activations", memory.activations},
                                 {"activations_at_peak", memory.activationsAtPeak},
                                 {"total", memory.total()},
                                 {"step_flops", memory.stepFlops},
                                 {"contraction_flops", memory.contractionFlops},
                                 {"remat_flops", memory.rematFlops}};
    for (const auto &[role, bytes] : memory.arenas)
      report["memory_per_rank"][role + "_arena"] = bytes;
    if (memory.scratchBytes)
      report["memory_per_rank"]["scratch"] = memory.scratch();
    if (memory.process >= 0)
      report["memory_per_rank"]["process"] = memory.process;
    if (memory.convolutions)
      report["memory_per_rank"]["convolutions"] = memory.convolutionBuffers;
    if (memory.onednnMemory())
      report["memory_per_rank"]["onednn"] = memory.onednnMemory();
    json list = json::array();
    for (const Collective &c : collectives)
      list.push_back(collectiveJson(c));
    report["collectives_per_step"] = list;
    if (decode) {
      json decodeList = json::array();
      for (const Collective &c : decodeCollectives)
        decodeList.push_back(collectiveJson(c));
      report["decode"] = {{"kv_cache_bytes", memory.kvCacheBytes},
                          {"caches", memory.kvCaches},
                          {"collective_bytes_per_step", decodeTotals.bytes},
                          {"collectives_per_step", decodeList}};
    }
    if (pipeline) {
      json transfers = json::array();
      for (const PipelinePlan::Transfer &t : pipeline->transfers)
        transfers.push_back({{"from_stage", t.from},
                             {"to_stage", t.to},
                             {"activation_bytes_per_microbatch", t.activationBytes},
                             {"cotangent_bytes_per_microbatch", t.cotangentBytes}});
      report["pipeline"] = {{"axis", pipeline->axis},
                            {"stages", pipeline->stages},
                            {"microbatches", pipeline->microbatches},
                            {"schedule", pipeline->schedule},
                            {"bubble_fraction", pipeline->bubble()},
                            {"drawn_bubble_fraction", pipeline->drawnBubble()},
                            {"kept_microbatches_per_stage", pipeline->slots},
                            {"kept_activation_bytes_per_stage", pipeline->keptBytes},
                            {"schedule_slots", pipeline->grid},
                            {"transfers", transfers}};
    }
    report["collective_bytes_per_step"] = totalBytes;
    report["sent_bytes_per_rank_per_step"] = totalSent;
    report["gradient_sync_sent_bytes_per_rank_per_step"] = gradientSent;
    return report.dump(2) + "\n";
  }

  std::string text;
  llvm::raw_string_ostream os(text);
  os << "communication plan: model " << model << " under " << rules << ", mesh " << mesh.str()
     << ", " << mesh.numRanks() << " ranks\n";
  if (matmulInBf16)
    os << "precision: every matrix product and convolution reads its operands in bfloat16 and "
          "accumulates in f32 (precision matmul : bf16)\n";
  if (gradientsInBf16)
    os << "precision: the gradients are reduced across ranks in bfloat16, summed in f32 "
          "(precision gradients : bf16)\n";
  if (targetCpu)
    os << "target: " << targetCpu.getValue() << " (" << llvm::join(targetFeatures, " ") << ")\n";
  os << "\nmemory per rank\n";
  os << "  parameters   " << llvm::right_justify(formatBytes(memory.parameters), 12) << "\n";
  os << "  optimizer    " << llvm::right_justify(formatBytes(memory.optimizerState), 12) << "\n";
  os << "  inputs       " << llvm::right_justify(formatBytes(memory.inputs), 12) << "\n";
  os << "  activations  " << llvm::right_justify(formatBytes(memory.activations), 12)
     << "  (every intermediate tensor, no buffer reuse)\n";
  os << "               " << llvm::right_justify(formatBytes(memory.activationsAtPeak), 12)
     << "  at the peak (each tensor freed after its last use)\n";
  for (const auto &[role, bytes] : memory.arenas)
    os << "  " << llvm::left_justify(role + " arena", 13)
       << llvm::right_justify(formatBytes(bytes), 12) << "  (planned: the " << role
       << " step's buffers, reused by liveness)\n";
  if (memory.scratchBytes)
    os << "  scratch      " << llvm::right_justify(formatBytes(memory.scratch()), 12)
       << "  (planned: the runtime's buffer for im2col chunks and collectives' packed blocks, "
       << formatBytes(memory.scratchBytes) << " at most in one call, in whole 2 MiB pages)\n";
  if (memory.convolutions)
    os << "  convolutions " << llvm::right_justify(formatBytes(memory.convolutionBuffers), 12)
       << "  (oneDNN's copies of " << memory.convolutions << " convolutions' operands in its "
       << "blocked layouts, kept for the run)\n";
  if (memory.onednnMemory())
    os << "  oneDNN       " << llvm::right_justify(formatBytes(memory.onednnMemory()), 12)
       << "  (what a rank's first oneDNN products and convolutions add: its code, generated "
          "kernels and buffers; measured on this machine)\n";
  if (memory.process < 0)
    os << "  process      not measured (shardrt-process.json beside libshardrt.so: "
          "shardrt-calibrate --process-memory, which the build runs)\n";
  else
    os << "  process      " << llvm::right_justify(formatBytes(memory.process), 12)
       << "  (a rank's own before the program's: MPI, the runtime, the libraries' code; "
          "measured on "
       << memory.processRanks << " ranks of this machine)\n";
  os << "  total        " << llvm::right_justify(formatBytes(memory.total()), 12) << "  ("
     << describeTotal(memory) << ")\n\n";
  if (memory.rematOps)
    os << llvm::formatv("remat: the backward pass recomputes {0} ops, {1:F2} GFLOP per rank and "
                        "step ({2:F1} % of the step's {3:F2})\n\n",
                        memory.rematOps, memory.rematFlops / 1e9,
                        100.0 * memory.rematFlops / std::max<int64_t>(memory.stepFlops, 1),
                        memory.stepFlops / 1e9);
  if (pipeline)
    printPipeline(*pipeline, os);
  os << "collectives per " << step << " step: " << totalCount << ", " << formatBytes(totalBytes)
     << " per rank" << (pipeline ? " (on the stage that sends the most)" : "");
  if (localCount)
    os << " (and " << localCount << " local, moving nothing)";
  os << "; each rank sends " << formatBytes(totalSent) << " by ring algorithms";
  if (gradientCount)
    os << ", " << formatBytes(gradientSent) << " of them in the " << gradientCount
       << " that reduce gradients [gradient]"
       << (gradientsInBf16 ? " (in bfloat16: precision gradients : bf16)"
                           : " (half with --reduce-precision bf16)");
  os << "\n";
  for (const Collective &c : collectives)
    printCollective(c, os);
  if (decode) {
    os << "\n--generate's decode step: one position of every sample, its keys and values "
          "kept in "
       << memory.kvCaches << " caches, " << formatBytes(memory.kvCacheBytes)
       << " per rank (each read and written anew: twice their size)\n";
    os << "collectives per decode step: " << decodeTotals.count << ", "
       << formatBytes(decodeTotals.bytes) << " per rank\n";
    for (const Collective &c : decodeCollectives)
      printCollective(c, os);
  }
  return text;
}
