//===- Report.cpp - the communication plan, before anything runs ----------===//
//
// Read off the partitioned forward function:
// 1. Memory per rank: the local bytes of the parameter and input arguments,
//    and of every intermediate tensor (an upper bound: no buffer reuse).
// 2. Every collective, with its kind, mesh axes, local element count and
//    bytes, the source line of the op that needed it and the parameters among
//    that op's operands (the sharded operands that made it necessary).
//    Collectives with the same kind, axes, shape and cause are counted
//    together: an unrolled scan gives one line per block, times its layers.
// 3. Reshards (all_gather, all_to_all, all_slice) that no constraint or
//    output annotation asked for, which --strict turns into errors.
//
//===----------------------------------------------------------------------===//

#include "shardc/MLIRGen/MLIRGen.h"
#include "shardc/Pipeline/Pipeline.h"
#include "shardc/Sema/TypedPrinter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <nlohmann/json.hpp>

using namespace mlir;
using namespace shardc;
using json = nlohmann::json;

namespace {

int64_t tensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  return t.getNumElements() * std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
}

std::string describeLoc(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    llvm::StringRef name = file.getFilename().getValue();
    // Paths relative to the stdlib or example folder are enough to find it.
    size_t slash = name.rfind('/');
    slash = slash == llvm::StringRef::npos ? 0 : name.rfind('/', slash - 1) + 1;
    return llvm::formatv("{0}:{1}:{2}", name.substr(slash), file.getLine(), file.getColumn());
  }
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string d = describeLoc(inner); !d.empty())
        return d;
  return "";
}

std::string shapeText(RankedTensorType type) {
  std::string text = "[";
  for (auto [i, size] : llvm::enumerate(type.getShape()))
    text += (i ? ", " : "") + std::to_string(size);
  return text + "]";
}

struct Collective {
  std::string kind, axes, dtype, shape, cause, loc;
  int64_t elements = 0, bytes = 0, count = 0;
  bool reshard = false;
};

/// The parameters among the operands of the op that produced `value`, or
/// `value` itself if it is one: the sharded inputs that made the collective
/// necessary. Layers are left out so that the layers of one scan share a line.
std::string causeOf(Value value, func::FuncOp fn) {
  Operation *def = value.getDefiningOp();
  ValueRange candidates = def ? ValueRange(def->getOperands()) : ValueRange(value);
  std::vector<std::string> names;
  for (Value operand : candidates) {
    auto arg = dyn_cast<BlockArgument>(operand);
    if (!arg || arg.getOwner()->getParentOp() != fn)
      continue;
    names.push_back(fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kNameAttr).str());
  }
  return llvm::join(names, ", ");
}

} // namespace

int64_t MemoryPerRank::total() const {
  int64_t held = addSaturating(parameters, optimizerState);
  return addSaturating(addSaturating(held, held), addSaturating(inputs, activations));
}

MemoryPerRank shardc::memoryPerRank(ModuleOp module, const TypedProgram &program) {
  auto fn = module.lookupSymbol<func::FuncOp>(kTrainFunction);
  if (!fn)
    fn = module.lookupSymbol<func::FuncOp>(kEvalFunction);
  MemoryPerRank memory;
  for (BlockArgument arg : fn.getArguments()) {
    std::string name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kNameAttr).str();
    bool isInput = llvm::any_of(program.inputs, [&](const ShardedTensor &t) { return t.path == name; });
    bool isParam = llvm::any_of(program.params, [&](const Parameter &p) { return p.path == name; });
    int64_t *total = isInput ? &memory.inputs
                     : isParam ? &memory.parameters
                     : name.find('/') != std::string::npos ? &memory.optimizerState // `mu/conv1.w`
                                                           : nullptr;
    if (total)
      *total = addSaturating(*total, tensorBytes(arg.getType()));
  }
  fn.walk([&](Operation *op) {
    if (op->getParentOp() != fn || isa<arith::ConstantOp>(op))
      return;
    for (Type t : op->getResultTypes())
      memory.activations = addSaturating(memory.activations, tensorBytes(t));
  });
  return memory;
}

FailureOr<std::string> shardc::buildReport(ModuleOp module, const TypedProgram &program,
                                           const MemoryPerRank &memory,
                                           const llvm::SourceMgr &sourceMgr, bool asJson,
                                           bool strict) {
  // The training step when the model has an optimizer, else the forward pass.
  auto fn = module.lookupSymbol<func::FuncOp>(kTrainFunction);
  if (!fn)
    fn = module.lookupSymbol<func::FuncOp>(kEvalFunction);
  std::string step = fn.getName() == kTrainFunction ? "train" : "eval";
  const int64_t paramBytes = memory.parameters, stateBytes = memory.optimizerState,
                inputBytes = memory.inputs, activationBytes = memory.activations;


  // Where a reshard is asked for: at a constraint or an output's sharding.
  std::set<std::string> requested;
  auto addRequested = [&](SMRange range) {
    if (!range.Start.isValid())
      return;
    unsigned buffer = sourceMgr.FindBufferContainingLoc(range.Start);
    auto [line, col] = sourceMgr.getLineAndColumn(range.Start, buffer);
    requested.insert(describeLoc(FileLineColLoc::get(
        fn.getContext(), sourceMgr.getMemoryBuffer(buffer)->getBufferIdentifier(), line, col)));
  };
  for (const ShardedTensor &t : program.constraints)
    addRequested(t.loc);
  for (const Output &o : program.outputs)
    addRequested(o.loc);

  std::vector<Collective> collectives;
  std::string mesh = program.mesh.str();
  fn.walk([&](Operation *op) {
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
      return;
    }
    std::vector<std::string> names;
    for (int16_t axis : axes)
      names.push_back(program.mesh.axes[axis].first);
    c.axes = llvm::join(names, ", ");
    auto type = cast<RankedTensorType>(input.getType());
    c.shape = shapeText(type);
    llvm::raw_string_ostream(c.dtype) << type.getElementType();
    c.elements = type.getNumElements();
    c.bytes = tensorBytes(type);
    c.loc = describeLoc(op->getLoc());
    c.reshard = c.reshard && !requested.count(c.loc);
    c.cause = causeOf(input, fn);
    c.count = 1;
    for (Collective &seen : collectives)
      if (seen.kind == c.kind && seen.axes == c.axes && seen.shape == c.shape &&
          seen.loc == c.loc && seen.cause == c.cause) {
        ++seen.count;
        return;
      }
    collectives.push_back(c);
  });

  int64_t totalBytes = 0, totalCount = 0;
  for (const Collective &c : collectives) {
    totalBytes = addSaturating(totalBytes, mulSaturating(c.bytes, c.count));
    totalCount += c.count;
  }

  bool strictFailed = false;
  if (strict)
    for (const Collective &c : collectives)
      if (c.reshard) {
        llvm::errs() << (c.loc.empty() ? "shardc" : c.loc) << ": error: --strict: the partitioner "
                     << "inserted a reshard (" << c.kind << " over " << c.axes << ", " << c.dtype
                     << c.shape << ")" << (c.cause.empty() ? "" : " for the use of " + c.cause)
                     << " that no rule or constraint asked for; add a sharding constraint or "
                        "change the rules so that the layouts agree\n";
        strictFailed = true;
      }
  if (strictFailed)
    return failure();

  if (asJson) {
    json report;
    report["model"] = program.modelName;
    report["rules"] = program.rulesPath;
    json meshJson = json::object();
    for (const auto &[name, size] : program.mesh.axes)
      meshJson[name] = size;
    report["mesh"] = meshJson;
    report["ranks"] = program.mesh.numRanks();
    report["step"] = step;
    report["memory_per_rank"] = {{"parameters", paramBytes},
                                 {"optimizer_state", stateBytes},
                                 {"inputs", inputBytes},
                                 {"activations", activationBytes}};
    json list = json::array();
    for (const Collective &c : collectives)
      list.push_back({{"kind", c.kind},
                      {"mesh_axes", c.axes},
                      {"shape", c.shape},
                      {"elements", c.elements},
                      {"bytes", c.bytes},
                      {"count", c.count},
                      {"source", c.loc},
                      {"parameters", c.cause},
                      {"reshard", c.reshard}});
    report["collectives_per_step"] = list;
    report["collective_bytes_per_step"] = totalBytes;
    return report.dump(2) + "\n";
  }

  std::string text;
  llvm::raw_string_ostream os(text);
  os << "communication plan: model " << program.modelName << " under " << program.rulesPath
     << ", mesh " << mesh << ", " << program.mesh.numRanks() << " ranks\n\n";
  os << "memory per rank\n";
  os << "  parameters   " << llvm::right_justify(formatBytes(paramBytes), 12) << "\n";
  os << "  optimizer    " << llvm::right_justify(formatBytes(stateBytes), 12) << "\n";
  os << "  inputs       " << llvm::right_justify(formatBytes(inputBytes), 12) << "\n";
  os << "  activations  " << llvm::right_justify(formatBytes(activationBytes), 12)
     << "  (every intermediate tensor, no buffer reuse)\n\n";
  os << "collectives per " << step << " step: " << totalCount << ", " << formatBytes(totalBytes)
     << " per rank\n";
  for (const Collective &c : collectives) {
    os << llvm::formatv("  {0,2} x {1,-22} over {2,-12} {3,-17} {4,8} elements {5,10}  {6}",
                        c.count, c.kind, c.axes, c.dtype + c.shape, c.elements, formatBytes(c.bytes), c.loc);
    if (!c.cause.empty())
      os << "  (" << c.cause << ")";
    if (c.reshard)
      os << "  [reshard]";
    os << "\n";
  }
  return text;
}
