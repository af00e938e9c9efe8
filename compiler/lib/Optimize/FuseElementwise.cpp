//===- FuseElementwise.cpp - elementwise fusion that keeps the kernels ----===//
//
// See shardc-fuse-elementwise in include/shardc/Optimize/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/IR/CheapOps.h"
#include "shardc/IR/LayerLocations.h"
#include "shardc/Optimize/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace shardc {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "shardc/Optimize/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

/// A multiply-accumulate with a reduction: what shardc-lower-to-kernels
/// turns into sgemm (contractions, convolution gradients).
bool becomesKernel(linalg::GenericOp op) {
  if (op.getNumReductionLoops() == 0)
    return false;
  return linalg::detail::isContractionBody(*op.getBody(), [](Operation *first, Operation *second) {
    return isa<arith::MulFOp>(first) && isa<arith::AddFOp>(second);
  });
}

bool takesFusion(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  return generic && !becomesKernel(generic);
}

/// Whether `producer` and `consumer` are of one scan layer, or both of none
/// (LayerLocations.h). Fused across layers, the first and last layers' ops
/// would differ from the others' and share no function with them
/// (shardc-outline-layers); within a layer, a forward op fused into its
/// backward is recomputed there instead of kept from the forward.
bool sameLayer(Operation *producer, Operation *consumer) {
  std::optional<shardc::LayerPart> from = shardc::layerOf(producer->getLoc()),
                                   to = shardc::layerOf(consumer->getLoc());
  return from && to ? from->layer == to->layer : !from && !to;
}

/// Fused into its only reader, or into every reader when it is cheap to repeat
/// and each of them takes it (then no buffer of it is left).
bool shouldFuse(OpOperand *fused) {
  auto producer = fused->get().getDefiningOp<linalg::GenericOp>();
  if (!producer || !takesFusion(fused->getOwner()) || !sameLayer(producer, fused->getOwner()))
    return false;
  if (fused->get().hasOneUse())
    return true;
  return (shardc::onlyMovesData(producer) || shardc::cheapToRepeat(producer)) &&
         llvm::all_of(fused->get().getUsers(), takesFusion);
}

struct FuseElementwisePass : public shardc::impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    // A step is one block of thousands of ops: simplifying its region after
    // every round (block merging, dead-value sweeps) cost more than the fusion.
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    config.setUseTopDownTraversal();
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
  }
};

} // namespace
