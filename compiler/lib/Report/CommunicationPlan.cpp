//===- CommunicationPlan.cpp - every collective and its cause -------------===//
//
// Every collective of the partitioned step, with its kind, mesh axes, local
// element count and bytes, the source line of the op that needed it and its
// cause (Report.cpp, 2.).
//
//===----------------------------------------------------------------------===//

#include "ReportImpl.h"

#include "shardc/IR/Attributes.h"
#include "shardc/Schedule/PipelineSchedules.h"
#include "shardc/Support/Bytes.h"
#include "shardc/Support/Mesh.h"
#include "shardrt/huge_pages.h"
#include "shardrt/ring_traffic.h"

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

namespace shardc::report {

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

/// The bytes each of the n ranks of a collective sends, when it runs as a ring (as
/// the runtime's large ones do, and MPI's in bandwidth terms): shardrt/ring_traffic.h,
/// which the runtime's count of a run's traffic shares.
int64_t sentPerRank(Operation *op, int64_t bytes, int64_t n) {
  using shardrt::RingCollective;
  RingCollective kind = isa<shard::AllGatherOp>(op)   ? RingCollective::AllGather
                        : isa<shard::AllReduceOp>(op) ? RingCollective::AllReduce
                                                      : RingCollective::ReduceScatter;
  return shardrt::ringSentBytes(kind, bytes, n);
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

} // namespace shardc::report
