//===- Report.cpp - the communication plan, before anything runs ----------===//
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
//===----------------------------------------------------------------------===//

#include "shardc/Report/Report.h"
#include "shardc/IR/Attributes.h"
#include "shardc/Support/Bytes.h"
#include "shardc/Schedule/PipelineSchedules.h"
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
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <nlohmann/json.hpp>

namespace shardc {
#define GEN_PASS_DEF_PRINTCOMMPLANPASS
#include "shardc/Report/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;
using json = nlohmann::json;

namespace {

/// The training step when the model has an optimizer, else the forward pass.
func::FuncOp stepFunction(ModuleOp module) {
  if (auto train = module.lookupSymbol<func::FuncOp>(kTrainFunction))
    return train;
  return module.lookupSymbol<func::FuncOp>(kEvalFunction);
}

int64_t tensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  return t.getNumElements() * std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
}

/// The source position in `loc`, through fused locations and a scan layer's
/// name (LayerLocations.h).
std::string describeLoc(Location loc) {
  auto file = loc->findInstanceOf<FileLineColLoc>();
  if (!file)
    return "";
  llvm::StringRef name = file.getFilename().getValue();
  // Paths relative to the stdlib or example folder are enough to find it.
  size_t slash = name.rfind('/');
  slash = slash == llvm::StringRef::npos ? 0 : name.rfind('/', slash - 1) + 1;
  return llvm::formatv("{0}:{1}:{2}", name.substr(slash), file.getLine(), file.getColumn());
}

std::string shapeText(RankedTensorType type) {
  std::string text = "[";
  for (auto [i, size] : llvm::enumerate(type.getShape()))
    text += (i ? ", " : "") + std::to_string(size);
  return text + "]";
}

/// The rules' mesh, from the grid MLIRGen made: its axes in grid order, named
/// by `shardc.axis_names` (by number in IR without them); none for the
/// unpartitioned reference.
Mesh meshOf(ModuleOp module) {
  Mesh mesh;
  auto grid = module.lookupSymbol<shard::GridOp>(kGridName);
  if (!grid)
    return mesh;
  auto names = grid->getAttrOfType<ArrayAttr>(kAxisNamesAttr);
  for (auto [i, size] : llvm::enumerate(grid.getShape()))
    mesh.axes.emplace_back(names ? cast<StringAttr>(names[i]).str() : std::to_string(i), size);
  return mesh;
}

struct Collective {
  std::string kind, axes, dtype, shape, loc;
  std::vector<std::string> axisNames;
  std::vector<std::string> causes; // the rules over its axes, or "constraint"
  std::string cause;    // the arguments among the operands of the op that needed it
  std::string gradient; // the parameter whose gradient it carries, if one
  std::vector<std::string> bucket; // the parameters whose gradients it carries, if several
  int64_t elements = 0, bytes = 0, count = 0;
  int64_t sent = 0; // bytes each rank sends, by the ring algorithms
  bool reshard = false;
  bool moves = true; // false: no byte leaves a rank
  bool gradientSync = false; // reduces a parameter's gradient (--reduce-precision)
  int64_t stage = -1;         // a pipeline's stage whose ranks alone run it (-1: every rank)
  Operation *first = nullptr; // where --strict reports it

  /// What the report says made it: the gradient it carries, or the operands.
  std::string label() const {
    if (!bucket.empty())
      return "bucket: gradients of " + llvm::join(bucket, ", ");
    return gradient.empty() ? cause : "gradient of " + gradient;
  }
};

/// For each mesh axis, the rules and overrides that split something over it
/// (kAxisRulesAttr), as the report names them: "hidden -> model (tp.rules:4:3)".
std::map<std::string, std::vector<std::string>> axisRulesOf(ModuleOp module) {
  std::map<std::string, std::vector<std::string>> rules;
  auto list = module->getAttrOfType<ArrayAttr>(kAxisRulesAttr);
  if (!list)
    return rules;
  for (auto entry : list.getAsRange<DictionaryAttr>()) {
    auto axis = entry.getAs<StringAttr>("axis");
    auto reason = entry.getAs<StringAttr>("rule");
    auto at = entry.getAs<LocationAttr>("at");
    if (!axis || !reason || !at)
      continue;
    StringRef text = reason.getValue();
    text.consume_front("rule ");
    rules[axis.str()].push_back(text.str() + " (" + describeLoc(at) + ")");
  }
  return rules;
}

/// The arguments among the operands of the op that produced `value`, or
/// `value` itself if it is one: the sharded inputs that made the collective
/// necessary. Layers are left out so that the layers of one scan share a line.
std::string causeOf(Value value, func::FuncOp fn) {
  Operation *def = value.getDefiningOp();
  ValueRange candidates = def ? ValueRange(def->getOperands()) : ValueRange(value);
  std::vector<std::string> names;
  for (Value operand : candidates) {
    // A layer's slice of a stacked argument (the layer loop's) names it too.
    if (auto slice = operand.getDefiningOp<tensor::ExtractSliceOp>())
      operand = slice.getSource();
    auto arg = dyn_cast<BlockArgument>(operand);
    if (!arg || arg.getOwner()->getParentOp() != fn)
      continue;
    if (auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kNameAttr))
      names.push_back(name.str());
  }
  return llvm::join(names, ", ");
}

/// The names of `fn`'s parameter arguments.
std::set<std::string> parameterNames(func::FuncOp fn) {
  std::set<std::string> names;
  for (BlockArgument arg : fn.getArguments()) {
    auto role = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kRoleAttr);
    auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kNameAttr);
    if (role && name && role.getValue() == kParameterRole)
      names.insert(name.str());
  }
  return names;
}

bool isScalar(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return !tensor || tensor.getRank() == 0;
}

/// The parameter whose gradient `value` is part of: the one parameter whose
/// updated value (a result of `fn` named like it) or optimizer state
/// ("mu/NAME") the value flows into, if it flows into one alone (not counting
/// what flows through scalars).
std::optional<std::string> gradientOf(Value value, func::FuncOp fn,
                                      const std::set<std::string> &paramNames) {
  llvm::SmallPtrSet<Operation *, 16> seen;
  llvm::SmallVector<Value> work{value};
  std::set<std::string> reached;
  while (!work.empty() && reached.size() < 2) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      // Yielded by a loop (a layer's gradient into its stack): its result.
      if (auto yield = dyn_cast<scf::YieldOp>(user)) {
        if (auto loop = dyn_cast<scf::ForOp>(yield->getParentOp()))
          work.push_back(loop.getResult(use.getOperandNumber()));
        continue;
      }
      if (!isa<func::ReturnOp>(user)) {
        // A scalar made of it (the clipping norm) reaches every parameter and
        // carries none's gradient.
        if (seen.insert(user).second)
          for (Value result : user->getResults())
            if (!isScalar(result.getType()))
              work.push_back(result);
        continue;
      }
      auto name = fn.getResultAttrOfType<StringAttr>(use.getOperandNumber(), kNameAttr);
      if (!name)
        continue;
      // A parameter's new value, or its state ("mu/NAME"); the loss and the
      // metrics are no parameter's.
      std::string param = name.str();
      if (!paramNames.count(param) && name.getValue().contains('/'))
        param = name.getValue().split('/').second.str();
      if (paramNames.count(param))
        reached.insert(param);
    }
  }
  if (reached.size() != 1)
    return std::nullopt;
  return *reached.begin();
}

/// The parameters whose gradients a bucket (shardc-bucket-all-reduces) carries:
/// each slice of `value` is one's, in the bucket's order; empty for anything else.
std::vector<std::string> bucketOf(Value value, func::FuncOp fn,
                                  const std::set<std::string> &paramNames) {
  std::vector<std::pair<int64_t, std::string>> slices;
  for (Operation *user : value.getUsers()) {
    auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
    std::optional<std::string> param =
        slice ? gradientOf(slice.getResult(), fn, paramNames) : std::nullopt;
    if (!param || slice.getStaticOffsets().size() != 1)
      return {};
    slices.push_back({slice.getStaticOffsets()[0], *param});
  }
  llvm::sort(slices);
  std::vector<std::string> names;
  for (auto &[offset, name] : slices)
    names.push_back(name);
  return names.size() > 1 ? names : std::vector<std::string>{};
}

/// The bytes each of the n ranks of a collective sends, when it runs as a ring
/// (as the runtime's large ones do, and MPI's in bandwidth terms): an
/// all_reduce is a reduce-scatter and an all-gather of its n blocks, 2(n-1)/n
/// of its bytes; a reduce_scatter or all_to_all sends all blocks but its own,
/// (n-1)/n; an all_gather forwards its block and n-2 others, (n-1) times its
/// input.
int64_t sentPerRank(Operation *op, int64_t bytes, int64_t n) {
  if (isa<shard::AllGatherOp>(op))
    return mulSaturating(bytes, n - 1);
  int64_t share = mulSaturating(bytes, n - 1) / n;
  return isa<shard::AllReduceOp>(op) ? mulSaturating(share, 2) : share;
}

/// The pipeline stage whose schedule `op` is part of (shardc-pipeline-schedule's
/// switch on the stage: case S, the last stage the default), or -1.
int64_t stageOf(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent; op = parent, parent = parent->getParentOp())
    if (auto cases = dyn_cast<scf::IndexSwitchOp>(parent)) {
      Region *region = op->getParentRegion();
      for (auto [i, r] : llvm::enumerate(cases.getCaseRegions()))
        if (&r == region)
          return cases.getCases()[i];
      return int64_t(cases.getNumCases());
    }
  return -1;
}

/// The collective `op` is, without its count; nothing for any other op.
std::optional<Collective> describeCollective(Operation *op, const Mesh &mesh,
                                            const std::set<std::string> &paramNames) {
  Collective c;
  Value input;
  ArrayRef<int16_t> axes;
  if (auto r = dyn_cast<shard::AllReduceOp>(op)) {
    c.kind = "all_reduce " + stringifyReductionKind(r.getReduction()).str();
    axes = r.getGridAxes();
    input = r.getInput();
  } else if (auto g = dyn_cast<shard::AllGatherOp>(op)) {
    c.kind = "all_gather dim " + std::to_string(g.getGatherAxis().getZExtValue());
    axes = g.getGridAxes();
    input = g.getInput();
    c.reshard = true;
  } else if (auto s = dyn_cast<shard::ReduceScatterOp>(op)) {
    c.kind = "reduce_scatter dim " + std::to_string(s.getScatterAxis().getZExtValue());
    axes = s.getGridAxes();
    input = s.getInput();
  } else if (auto a = dyn_cast<shard::AllToAllOp>(op)) {
    c.kind = "all_to_all";
    axes = a.getGridAxes();
    input = a.getInput();
    c.reshard = true;
  } else if (auto sl = dyn_cast<shard::AllSliceOp>(op)) {
    c.kind = "all_slice dim " + std::to_string(sl.getSliceAxis().getZExtValue());
    axes = sl.getGridAxes();
    input = sl.getInput();
    c.reshard = true;
  } else {
    return std::nullopt;
  }
  std::vector<std::string> names;
  for (int16_t axis : axes)
    names.push_back(mesh.axes[axis].first);
  c.axes = llvm::join(names, ", ");
  c.axisNames = names;
  auto type = cast<RankedTensorType>(input.getType());
  c.shape = shapeText(type);
  llvm::raw_string_ostream(c.dtype) << type.getElementType();
  c.elements = type.getNumElements();
  c.bytes = tensorBytes(type);
  c.loc = describeLoc(op->getLoc());
  auto fn = op->getParentOfType<func::FuncOp>();
  c.cause = causeOf(input, fn);
  // A parameter moved where it is read (the layer loop's backward reads it
  // apart from its forward) carries no gradient, whatever it flows into.
  if (!paramNames.count(c.cause))
    c.gradient = gradientOf(op->getResult(0), fn, paramNames).value_or("");
  c.bucket = bucketOf(op->getResult(0), fn, paramNames);
  c.gradientSync = op->hasAttr(kGradientSyncAttr);
  // `precision gradients : bf16`: the run sends these in bfloat16.
  if (c.gradientSync && precisionIsBf16(op->getParentOfType<ModuleOp>(), kGradientPrecisionAttr)) {
    c.dtype = "bf16";
    c.bytes = c.elements * 2;
  }
  c.stage = stageOf(op);
  int64_t ranks = 1;
  for (int16_t axis : axes)
    ranks *= mesh.axes[axis].second;
  c.moves = !isa<shard::AllSliceOp>(op) && ranks > 1;
  c.sent = c.moves ? sentPerRank(op, c.bytes, ranks) : 0;
  c.first = op;
  return c;
}

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

std::optional<PipelinePlan> pipelinePlan(ModuleOp module, func::FuncOp fn, const Mesh &mesh) {
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
    (tag.getInt() % 2 ? t.cotangentBytes : t.activationBytes) = tensorBytes(send.getInput().getType());
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

/// Where the bytes of an argument of `role` count; nowhere for the step number.
int64_t *bytesOfRole(MemoryPerRank &memory, StringRef role) {
  if (role == kParameterRole)
    return &memory.parameters;
  if (role == kOptimizerStateRole)
    return &memory.optimizerState;
  if (role == kInputRole)
    return &memory.inputs;
  return nullptr;
}

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

int64_t MemoryPerRank::stepArena() const {
  int64_t largest = -1;
  for (const auto &[role, bytes] : arenas)
    if (role != "grad")
      largest = std::max(largest, bytes);
  return largest < 0 ? activationsAtPeak : shardrt::inHugePages(largest);
}

int64_t MemoryPerRank::onednnMemory() const {
  return callsKernels ? std::max<int64_t>(onednnCode, 0) : 0;
}

int64_t MemoryPerRank::scratch() const { return shardrt::inHugePages(scratchBytes); }

int64_t MemoryPerRank::total() const {
  return addSaturating(addSaturating(addSaturating(parameters, optimizerState),
                                     addSaturating(inputs, stepArena())),
                       addSaturating(addSaturating(scratch(), convolutionBuffers),
                                     addSaturating(onednnMemory(), std::max<int64_t>(process, 0))));
}

std::string shardc::describeTotal(const MemoryPerRank &memory) {
  return formatBytes(memory.parameters) + " of parameters and " +
         formatBytes(memory.optimizerState) + " of optimizer state, " +
         formatBytes(memory.inputs) + " of inputs, " + formatBytes(memory.stepArena()) +
         (memory.arenas.empty() ? " of activations at the peak"
                                 : " of the larger step arena (in whole 2 MiB pages)") +
         (memory.scratchBytes ? ", " + formatBytes(memory.scratch()) + " of the runtime's scratch"
                              : "") +
         (memory.convolutions ? ", " + formatBytes(memory.convolutionBuffers) + " of convolutions"
                              : "") +
         (memory.onednnMemory()
              ? ", " + formatBytes(memory.onednnMemory()) + " of oneDNN's code and buffers"
              : "") +
         (memory.process < 0 ? "" : ", " + formatBytes(memory.process) + " of the process itself");
}

void shardc::addProcessMemory(StringRef runtimeDir, MemoryPerRank &memory) {
  SmallString<128> path(runtimeDir);
  llvm::sys::path::append(path, "shardrt-process.json");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file = llvm::MemoryBuffer::getFile(path);
  if (!file)
    return;
  json measured = json::parse((*file)->getBuffer().str(), nullptr, /*allow_exceptions=*/false);
  if (!measured.is_object() || !measured.value("process_resident_bytes", json()).is_number_integer())
    return;
  memory.process = measured["process_resident_bytes"].get<int64_t>();
  memory.processRanks = measured.value("ranks", int64_t(0));
  if (measured.value("onednn_resident_bytes", json()).is_number_integer())
    memory.onednnCode = measured["onednn_resident_bytes"].get<int64_t>();
}

/// How many times `op` runs per call of `fn`: the product of the trip counts of
/// the loops around it (the microbatches').
static int64_t timesRun(Operation *op, func::FuncOp fn) {
  int64_t times = 1;
  for (Operation *parent = op->getParentOp(); parent && parent != fn; parent = parent->getParentOp())
    if (auto loop = dyn_cast<scf::ForOp>(parent))
      if (std::optional<APInt> trips = loop.getStaticTripCount())
        times = mulSaturating(times, trips->getSExtValue());
  return times;
}

/// The tensor whose buffer `op`'s result `r` is, if it makes none of its own: a
/// reshape's operand, the tensor a slice is written into, a loop's initial
/// value (bufferization writes both in place).
static Value bufferSource(Operation &op, unsigned r) {
  if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp, tensor::CastOp>(op))
    return op.getOperand(0);
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op))
    return insert.getDest();
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return loop.getInitArgs()[r];
  return Value();
}

/// The most bytes of intermediate tensors live at once in `fn`'s body, each
/// from the op that makes it to its last use (a returned one to the end); a
/// result without a buffer of its own (bufferSource) is its source's, which
/// lives as long as either.
static int64_t activationsAtPeak(Block &body) {
  const unsigned end = body.getOperations().size();
  DenseMap<Operation *, unsigned> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = i;
  // Each owner of bytes, from the op that makes it to the last op that reads it
  // or a view of it (the end when returned).
  DenseMap<Value, Value> ownerOf;
  llvm::MapVector<Value, unsigned> lastRead;
  for (Operation &op : body) {
    if (isa<arith::ConstantOp>(op))
      continue;
    for (OpResult result : op.getResults()) {
      Value source = bufferSource(op, result.getResultNumber());
      Value owner = source ? ownerOf.lookup(source) : result;
      if (!owner)
        continue;
      ownerOf[result] = owner;
      unsigned &last = lastRead.try_emplace(owner, position[&op]).first->second;
      for (Operation *user : result.getUsers())
        if (Operation *inBody = body.findAncestorOpInBlock(*user))
          last = std::max(last, isa<func::ReturnOp>(inBody) ? end : position[inBody]);
    }
  }
  // Bytes allocated at each op, and freed after each op.
  SmallVector<int64_t> allocated(end + 1), freed(end + 1);
  for (auto [owner, last] : lastRead) {
    int64_t bytes = tensorBytes(owner.getType());
    allocated[position[owner.getDefiningOp()]] += bytes;
    freed[last] += bytes;
  }
  // A loop's body (one microbatch) peaks while the loop runs.
  for (Operation &op : body)
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      int64_t inner = activationsAtPeak(*loop.getBody());
      allocated[position[&op]] += inner;
      freed[position[&op]] += inner;
    }
  int64_t live = 0, peak = 0;
  for (auto [in, out] : llvm::zip_equal(allocated, freed)) {
    live = addSaturating(live, in);
    peak = std::max(peak, live);
    live -= out;
  }
  return peak;
}

MemoryPerRank shardc::memoryPerRank(ModuleOp module) {
  MemoryPerRank memory;
  func::FuncOp fn = stepFunction(module);
  if (!fn)
    return memory;
  for (BlockArgument arg : fn.getArguments()) {
    auto role = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kRoleAttr);
    if (int64_t *total = role ? bytesOfRole(memory, role.getValue()) : nullptr)
      *total = addSaturating(*total, tensorBytes(arg.getType()));
  }
  fn.walk([&](Operation *op) {
    // The function's ops and a microbatch loop's (once: the same bytes each time).
    if (!isa<func::FuncOp, scf::ForOp>(op->getParentOp()) || isa<arith::ConstantOp>(op))
      return;
    for (Type t : op->getResultTypes())
      memory.activations = addSaturating(memory.activations, tensorBytes(t));
  });
  memory.activationsAtPeak = activationsAtPeak(fn.getBody().front());
  fn.walk([&](linalg::LinalgOp op) {
    int64_t iterations = 1;
    for (int64_t range : op.getStaticLoopRanges())
      if (!ShapedType::isDynamic(range))
        iterations = mulSaturating(iterations, range);
    int64_t flops = mulSaturating(op.getNumReductionLoops() ? 2 * iterations : iterations,
                                  timesRun(op, fn));
    memory.stepFlops = addSaturating(memory.stepFlops, flops);
    // What shardc-lower-to-kernels runs on sgemm: contractions, convolutions and
    // their gradients (generics that name their kernel).
    if (op.getNumReductionLoops() &&
        (linalg::isaContractionOpInterface(op) || linalg::isaConvolutionOpInterface(op) ||
         op->hasAttr("library_call")))
      memory.contractionFlops = addSaturating(memory.contractionFlops, flops);
    if (op->hasAttr(kRematAttr)) {
      memory.rematFlops = addSaturating(memory.rematFlops, flops);
      ++memory.rematOps;
    }
  });
  return memory;
}

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

FailureOr<std::string> shardc::buildReport(ModuleOp module, const MemoryPerRank &memory,
                                           bool asJson, bool strict) {
  func::FuncOp fn = stepFunction(module);
  if (!fn)
    return emitError(module.getLoc(), "no ") << kTrainFunction << " or " << kEvalFunction
                                              << " function to report on";
  std::string step = fn.getName() == kTrainFunction ? "train" : "eval";
  std::string model = module.getName().value_or("").str();
  std::string rules;
  if (auto path = module->getAttrOfType<StringAttr>(kRulesAttr))
    rules = path.str();
  const Mesh mesh = meshOf(module);

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

  // Per rank: what every rank runs, plus the busiest pipeline stage's own.
  struct Totals {
    int64_t bytes = 0, sent = 0, count = 0, local = 0, gradientSent = 0, gradientCount = 0;
  };
  std::map<int64_t, Totals> byStage; // -1: every rank
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
    for (const Collective &c : collectives) {
      list.push_back({{"kind", c.kind},
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
                      {"sent_bytes", c.sent}});
      if (c.stage >= 0)
        list.back()["pipeline_stage"] = c.stage;
    }
    report["collectives_per_step"] = list;
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
    os << "target: " << targetCpu.getValue() << " (" << llvm::join(targetFeatures, " ")
       << ")\n";
  os << "\nmemory per rank\n";
  os << "  parameters   " << llvm::right_justify(formatBytes(memory.parameters), 12) << "\n";
  os << "  optimizer    " << llvm::right_justify(formatBytes(memory.optimizerState), 12) << "\n";
  os << "  inputs       " << llvm::right_justify(formatBytes(memory.inputs), 12) << "\n";
  os << "  activations  " << llvm::right_justify(formatBytes(memory.activations), 12)
     << "  (every intermediate tensor, no buffer reuse)\n";
  os << "               " << llvm::right_justify(formatBytes(memory.activationsAtPeak), 12)
     << "  at the peak (each tensor freed after its last use)\n";
  for (const auto &[role, bytes] : memory.arenas)
    os << "  " << llvm::left_justify(role + " arena", 13) << llvm::right_justify(formatBytes(bytes), 12)
       << "  (planned: the " << role << " step's buffers, reused by liveness)\n";
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
  for (const Collective &c : collectives) {
    os << llvm::formatv("  {0,2} x {1,-22} over {2,-12} {3,-17} {4,8} elements {5,10}  {6}",
                        c.count, c.kind, c.axes, c.dtype + c.shape, c.elements, formatBytes(c.bytes), c.loc);
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
  return text;
}
