//===- MemoryPlan.cpp - the bytes each rank needs -------------------------===//
//
// The memory per rank (Report.cpp, 1.): the arguments by their role, the
// arenas and scratch the lowering planned, the runtime's and the process's
// own, and the intermediate tensors live at once at the step's peak.
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

namespace {

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
  return addSaturating(
      addSaturating(addSaturating(parameters, optimizerState), addSaturating(inputs, stepArena())),
      addSaturating(addSaturating(scratch(), convolutionBuffers),
                    addSaturating(onednnMemory(), std::max<int64_t>(process, 0))));
}

std::string shardc::describeTotal(const MemoryPerRank &memory) {
  return formatBytes(memory.parameters) + " of parameters and " +
         formatBytes(memory.optimizerState) + " of optimizer state, " + formatBytes(memory.inputs) +
         " of inputs, " + formatBytes(memory.stepArena()) +
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
  if (!measured.is_object() ||
      !measured.value("process_resident_bytes", json()).is_number_integer())
    return;
  memory.process = measured["process_resident_bytes"].get<int64_t>();
  memory.processRanks = measured.value("ranks", int64_t(0));
  if (measured.value("onednn_resident_bytes", json()).is_number_integer())
    memory.onednnCode = measured["onednn_resident_bytes"].get<int64_t>();
}

int64_t report::timesRun(Operation *op, func::FuncOp fn) {
  int64_t times = 1;
  for (Operation *parent = op->getParentOp(); parent && parent != fn;
       parent = parent->getParentOp())
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

int64_t report::activationsAtPeak(Block &body) {
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
  if (auto decode = module.lookupSymbol<func::FuncOp>(kDecodeFunction))
    for (BlockArgument arg : decode.getArguments())
      if (auto role = decode.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kRoleAttr);
          role && role.getValue() == kCacheRole) {
        memory.kvCacheBytes =
            addSaturating(memory.kvCacheBytes, mulSaturating(2, tensorBytes(arg.getType())));
        ++memory.kvCaches;
      }
  fn.walk([&](linalg::LinalgOp op) {
    int64_t iterations = 1;
    for (int64_t range : op.getStaticLoopRanges())
      if (!ShapedType::isDynamic(range))
        iterations = mulSaturating(iterations, range);
    int64_t flops =
        mulSaturating(op.getNumReductionLoops() ? 2 * iterations : iterations, timesRun(op, fn));
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
