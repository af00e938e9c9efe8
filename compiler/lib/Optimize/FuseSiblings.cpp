//===- FuseSiblings.cpp - elementwise loops over the same tensors, one loop ===//
//
// See shardc-fuse-siblings in include/shardc/Optimize/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/IR/LayerLocations.h"
#include "shardc/Optimize/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/CSE.h"

namespace shardc {
#define GEN_PASS_DEF_FUSESIBLINGSPASS
#include "shardc/Optimize/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

/// Every loop parallel and every operand read or written whole at the loop's
/// point (an identity map) or a scalar: one pass over same-shaped tensors.
bool isElementwise(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumLoops() == 0 ||
      op.getNumParallelLoops() != op.getNumLoops())
    return false;
  return llvm::all_of(op.getIndexingMapsArray(),
                      [](AffineMap map) { return map.isIdentity() || map.getNumResults() == 0; });
}

/// Ops that may stand between two siblings: other elementwise loops, empty
/// tensors, constants. Anything else (a kernel-to-be, a reduction, a collective,
/// a call) ends the search: moving the first sibling past it would keep the
/// first's inputs alive across it and reorder the loop with communication.
bool mayStandBetween(Operation &op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  return (generic && isElementwise(generic)) || isa<tensor::EmptyOp, arith::ConstantOp>(op);
}

bool readsSameTensor(linalg::GenericOp first, linalg::GenericOp second) {
  return llvm::any_of(first.getDpsInputs(), [&](Value input) {
    auto type = dyn_cast<RankedTensorType>(input.getType());
    return type && type.getRank() > 0 && llvm::is_contained(second.getDpsInputs(), input);
  });
}

/// Whether `first`, earlier in the block, may move down to `second` and
/// become one loop with it: the same loops, one layer part (as
/// shardc-fuse-elementwise's sameLayer, for shardc-outline-layers), a tensor
/// both read, and no reader of `first`'s results at or before `second`.
bool canFuse(linalg::GenericOp first, linalg::GenericOp second) {
  if (first.getStaticLoopRanges() != second.getStaticLoopRanges() ||
      llvm::is_contained(first.getStaticLoopRanges(), ShapedType::kDynamic))
    return false;
  std::optional<shardc::LayerPart> a = shardc::layerOf(first.getLoc()),
                                   b = shardc::layerOf(second.getLoc());
  if (a.has_value() != b.has_value() || (a && (a->layer != b->layer || a->stage != b->stage)))
    return false;
  if (!readsSameTensor(first, second))
    return false;
  Block *block = second->getBlock();
  return llvm::all_of(first->getUsers(), [&](Operation *user) {
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    return inBlock && second->isBeforeInBlock(inBlock);
  });
}

/// One generic at `second`'s place computing both ops' results: their inputs
/// once each, `first`'s outputs then `second`'s, the two bodies one after the
/// other (common subexpressions, such as a moment both updates compute, once).
linalg::GenericOp fuse(linalg::GenericOp first, linalg::GenericOp second, IRRewriter &rewriter) {
  SmallVector<Value> inputs, outputs;
  SmallVector<AffineMap> inputMaps, outputMaps;
  // Each op's block argument -> the fused op's operand position.
  SmallVector<SmallVector<unsigned>> argumentOf(2);
  linalg::GenericOp ops[] = {first, second};
  for (auto [which, op] : llvm::enumerate(ops))
    for (OpOperand *operand : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(operand);
      unsigned at = 0;
      while (at < inputs.size() && (inputs[at] != operand->get() || inputMaps[at] != map))
        ++at;
      if (at == inputs.size()) {
        inputs.push_back(operand->get());
        inputMaps.push_back(map);
      }
      argumentOf[which].push_back(at);
    }
  for (auto [which, op] : llvm::enumerate(ops))
    for (OpOperand &operand : op.getDpsInitsMutable()) {
      argumentOf[which].push_back(inputs.size() + outputs.size());
      outputs.push_back(operand.get());
      outputMaps.push_back(op.getMatchingIndexingMap(&operand));
    }
  SmallVector<AffineMap> maps(inputMaps);
  maps.append(outputMaps);
  SmallVector<Type> resultTypes(first.getResultTypes());
  llvm::append_range(resultTypes, second.getResultTypes());

  rewriter.setInsertionPoint(second);
  auto fused = linalg::GenericOp::create(rewriter, first.getLoc(), resultTypes, inputs, outputs,
                                         maps, second.getIteratorTypesArray());
  SmallVector<Type> argumentTypes;
  SmallVector<Location> argumentLocs;
  for (Value operand : llvm::concat<Value>(inputs, outputs)) {
    argumentTypes.push_back(getElementTypeOrSelf(operand.getType()));
    argumentLocs.push_back(operand.getLoc());
  }
  Block *body = rewriter.createBlock(&fused.getRegion(), {}, argumentTypes, argumentLocs);
  SmallVector<Value> yielded;
  for (auto [which, op] : llvm::enumerate(ops)) {
    IRMapping mapping;
    for (auto [argument, at] : llvm::zip_equal(op.getBody()->getArguments(), argumentOf[which]))
      mapping.map(argument, body->getArgument(at));
    for (Operation &inner : op.getBody()->without_terminator())
      rewriter.clone(inner, mapping);
    for (Value value : op.getBody()->getTerminator()->getOperands())
      yielded.push_back(mapping.lookupOrDefault(value));
  }
  linalg::YieldOp::create(rewriter, fused.getLoc(), yielded);

  rewriter.replaceOp(first, fused.getResults().take_front(first->getNumResults()));
  rewriter.replaceOp(second, fused.getResults().drop_front(first->getNumResults()));
  DominanceInfo dominance;
  mlir::eliminateCommonSubExpressions(rewriter, dominance, fused);
  return fused;
}

void fuseSiblingsIn(Block &block, IRRewriter &rewriter) {
  // The elementwise loops since the last op that may not stand between two.
  SmallVector<linalg::GenericOp> open;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (!mayStandBetween(op)) {
      open.clear();
      continue;
    }
    auto generic = dyn_cast<linalg::GenericOp>(op);
    if (!generic)
      continue;
    auto sibling =
        llvm::find_if(open, [&](linalg::GenericOp earlier) { return canFuse(earlier, generic); });
    if (sibling != open.end()) {
      generic = fuse(*sibling, generic, rewriter);
      open.erase(sibling);
    }
    open.push_back(generic);
  }
}

struct FuseSiblingsPass : public shardc::impl::FuseSiblingsPassBase<FuseSiblingsPass> {
  void runOnOperation() override {
    SmallVector<Block *> blocks;
    getOperation().walk([&](Block *block) {
      if (!isa<linalg::GenericOp>(block->getParentOp()))
        blocks.push_back(block);
    });
    IRRewriter rewriter(&getContext());
    for (Block *block : blocks)
      fuseSiblingsIn(*block, rewriter);
  }
};

} // namespace
