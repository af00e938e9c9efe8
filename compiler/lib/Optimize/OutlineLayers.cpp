//===- OutlineLayers.cpp - each scan layer's part in a function -----------===//
//
// See shardc-outline-layers in include/shardc/Optimize/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "SharedFunctions.h"
#include "shardc/IR/Attributes.h"
#include "shardc/IR/LayerLocations.h"
#include "shardc/Optimize/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Debug.h"

#include <map>

#define DEBUG_TYPE "shardc-outline-layers"

namespace shardc {
#define GEN_PASS_DEF_OUTLINELAYERSPASS
#include "shardc/Optimize/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;

namespace {

/// What `op` and the ops nested in it read from outside `op`.
SetVector<Value> usedValues(Operation *op) {
  SetVector<Value> used(op->operand_begin(), op->operand_end());
  getUsedValuesDefinedAbove(op->getRegions(), used);
  return used;
}

/// Restarts the numbers of attribute `name` (which only keep cse from merging
/// ops) in `fn`, in order of first appearance.
void renumber(func::FuncOp fn, StringRef name) {
  DenseMap<mlir::Attribute, int64_t> numbers;
  fn.walk([&](Operation *op) {
    auto number = op->getAttrOfType<IntegerAttr>(name);
    if (!number)
      return;
    auto [it, isNew] = numbers.try_emplace(number, numbers.size());
    op->setAttr(name, IntegerAttr::get(number.getType(), it->second));
  });
}

struct OutlineLayersPass : public shardc::impl::OutlineLayersPassBase<OutlineLayersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Block *> blocks;
    // Not the layer loop's loops (shardc-layer-loop): their body is one layer
    // already, which a call would only make copy its slices of the stacks.
    module.walk([&](Operation *op) {
      if (isa<func::FuncOp, scf::ForOp>(op) && !op->hasAttr(shardc::kLayerLoopAttr))
        for (Region &region : op->getRegions())
          for (Block &block : region)
            blocks.push_back(&block);
    });
    for (Block *block : blocks) {
      clonedOps.clear();
      std::map<LayerPart, SmallVector<Operation *>> parts;
      for (Operation &op : *block)
        if (std::optional<LayerPart> part = partOf(&op))
          parts[*part].push_back(&op);
      for (auto &[key, ops] : parts)
        outlinePart(module, *block, ops);
    }
    LLVM_DEBUG(llvm::dbgs() << calls << " layer parts, " << functions.size() << " functions\n");
  }

  /// A pure op computed from nothing (a constant, tensor.empty, the process's
  /// index, a fill of an empty tensor with a constant, the partitioner's
  /// "the first process's init, zeros elsewhere"): each function makes its own
  /// copy instead of taking it. Never a collective, which would run again.
  bool isCloned(Operation *op) {
    if (!op)
      return false;
    if (auto it = clonedOps.find(op); it != clonedOps.end())
      return it->second;
    bool collective = isa<shard::ShardDialect>(op->getDialect()) && op->getNumOperands() > 0;
    bool cloned =
        isMemoryEffectFree(op) && !collective &&
        llvm::all_of(usedValues(op), [&](Value v) { return isCloned(v.getDefiningOp()); });
    return clonedOps[op] = cloned;
  }

  /// `op` (a cloned one) after what it is computed from, into `ops`.
  void collectCloned(Operation *op, SetVector<Operation *> &ops) {
    if (ops.contains(op))
      return;
    for (Value v : usedValues(op))
      collectCloned(v.getDefiningOp(), ops);
    ops.insert(op);
  }

  /// The layer part `op` belongs to by its location. Not a collective's: the
  /// partitioner gives one the location of the value it reshards or of the op
  /// that reads it, which may be another part's (a gradient's reduce_scatter
  /// can read `layer 3 update`); and not what each function clones.
  std::optional<LayerPart> partOf(Operation *op) {
    if (isa<shard::ShardDialect>(op->getDialect()) || isCloned(op))
      return std::nullopt;
    return layerOf(op->getLoc());
  }

  /// Whether `op`, between a part's ops, may join the part: no part's own,
  /// and not one that every function copies.
  bool joins(Operation *op) { return !partOf(op) && !isCloned(op); }

  /// Makes `ops` one call, as Passes.td describes; leaves
  /// them where they are when an op between them both reads from them and is
  /// read by them.
  void outlinePart(ModuleOp module, Block &block, SmallVector<Operation *> ops) {
    clonedOps.clear();
    // Outlining an earlier part may have moved some of these.
    llvm::sort(ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    DenseSet<Operation *> inPart(ops.begin(), ops.end());
    Operation *first = ops.front(), *last = ops.back();
    SmallVector<Operation *> between;
    for (Operation *op = first; op != last; op = op->getNextNode()) // none for one op
      if (!inPart.count(op))
        between.push_back(op);

    // What reads from the part: joins it when it reads only the part, else
    // moves after the call.
    auto madeBy = [&](Value v, const DenseSet<Operation *> &set) {
      Operation *def = v.getDefiningOp();
      return def && set.count(block.findAncestorOpInBlock(*def));
    };
    auto readInPart = [&](OpOperand &use) {
      Operation *inBlock = block.findAncestorOpInBlock(*use.getOwner());
      return inBlock && inPart.count(inBlock);
    };
    DenseSet<Operation *> after;
    for (Operation *op : between) {
      SetVector<Value> used = usedValues(op);
      if (!llvm::any_of(used, [&](Value v) { return madeBy(v, inPart) || madeBy(v, after); }))
        continue;
      bool fromPartOnly = llvm::all_of(used, [&](Value v) { return madeBy(v, inPart); });
      (fromPartOnly && joins(op) ? inPart : after).insert(op);
    }
    // What only the part reads (a parameter's gather) joins it, last first so
    // that a chain of such ops joins whole.
    for (Operation *op : llvm::reverse(between)) {
      if (inPart.count(op) || after.count(op) || op->use_empty() || !joins(op))
        continue;
      if (llvm::all_of(op->getUses(), readInPart))
        inPart.insert(op);
    }
    SmallVector<Operation *> part, moved;
    for (Operation *op = first; op != last->getNextNode(); op = op->getNextNode())
      (inPart.count(op) ? part : moved).push_back(op);
    llvm::erase_if(moved, [&](Operation *op) { return !after.count(op); });
    // What stores the part's values into the entry's result buffers (written
    // there alone) joins it from further down: the function then writes a
    // new parameter where the runtime reads it, not into a temporary that
    // lives to the step's end to be copied there.
    for (Operation *op = last->getNextNode(); op; op = op->getNextNode()) {
      if (op->getNumResults() != 0 || op->hasTrait<OpTrait::IsTerminator>() || !joins(op))
        continue;
      SetVector<Value> used = usedValues(op);
      bool stores =
          llvm::any_of(used, [&](Value v) { return madeBy(v, inPart); }) &&
          llvm::all_of(used, [&](Value v) {
            return madeBy(v, inPart) || (isa<BaseMemRefType>(v.getType()) && v.hasOneUse());
          });
      if (stores) {
        inPart.insert(op);
        part.push_back(op);
      }
    }
    // Arguments in order of first use, what is computed from nothing cloned
    // in, results the values used outside.
    SetVector<Value> args;
    SetVector<Operation *> cloned;
    for (Operation *op : part)
      for (Value v : usedValues(op)) {
        if (madeBy(v, after))
          return; // the part reads what reads from it
        if (madeBy(v, inPart))
          continue;
        if (isCloned(v.getDefiningOp()))
          collectCloned(v.getDefiningOp(), cloned);
        else
          args.insert(v);
      }
    SmallVector<Value> results;
    for (Operation *op : part)
      for (Value r : op->getResults())
        if (!llvm::all_of(r.getUses(), readInPart))
          results.push_back(r);

    // The moved ops go after the last op of the part, the call before them.
    Operation *anchor = last->getNextNode();
    for (Operation *op : moved)
      op->moveBefore(anchor);
    MLIRContext *ctx = module.getContext();
    OpBuilder detached(ctx);
    auto fn = func::FuncOp::create(detached, first->getLoc(), "shardc_layer",
                                   FunctionType::get(ctx, ValueRange(args.getArrayRef()).getTypes(),
                                                     ValueRange(results).getTypes()));
    Block *body = fn.addEntryBlock();
    OpBuilder inside = OpBuilder::atBlockBegin(body);
    IRMapping map;
    for (Operation *op : cloned)
      map.map(op->getResults(), inside.clone(*op)->getResults());
    OpBuilder b(moved.empty() ? anchor : moved.front());
    auto call = func::CallOp::create(b, first->getLoc(), fn, args.getArrayRef());
    for (auto [result, value] : llvm::zip(results, call.getResults()))
      result.replaceUsesWithIf(value, [&](OpOperand &use) { return !readInPart(use); });
    for (Operation *op : part)
      op->moveBefore(body, body->end());
    for (auto [arg, value] : llvm::zip(body->getArguments(), args.getArrayRef()))
      Value(value).replaceUsesWithIf(
          arg, [&](OpOperand &use) { return fn->isAncestor(use.getOwner()); });
    for (auto [original, copy] : map.getValueMap())
      original.replaceUsesWithIf(copy,
                                 [&](OpOperand &use) { return fn->isAncestor(use.getOwner()); });
    inside.setInsertionPointToEnd(body);
    func::ReturnOp::create(inside, fn.getLoc(), ValueRange(results));
    ++calls;
    share(module, fn, call);
    // The originals of what the function copied, when nothing else reads
    // them: a fill left here would still be bufferized and run.
    for (Operation *op : llvm::reverse(cloned))
      if (op->use_empty())
        op->erase();
  }

  /// Calls `fn`, or an earlier layer function that prints like it; the
  /// function takes its arena from its callers.
  void share(ModuleOp module, func::FuncOp fn, func::CallOp call) {
    renumber(fn, kRematAttr);
    renumber(fn, kRegatherAttr);
    func::FuncOp shared = shareFunction(module, fn, functions, "shardc_layer");
    shared->setAttr(kArenaArgumentAttr, UnitAttr::get(module.getContext()));
    call.setCallee(shared.getSymName());
  }

  llvm::StringMap<func::FuncOp> functions;
  /// isCloned's answers, for one part at a time (outlining erases ops).
  DenseMap<Operation *, bool> clonedOps;
  int64_t calls = 0;
};

} // namespace
