//===- ExpandBf16.cpp - bf16 conversions as integer ops, inline -----------===//
//
// See shardc-expand-bf16 in include/shardc/Optimize/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Optimize/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace shardc {
#define GEN_PASS_DEF_EXPANDBF16PASS
#include "shardc/Optimize/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

bool convertsBf16(Operation *op) {
  return getElementTypeOrSelf(op->getOperand(0).getType()).isBF16() ||
         getElementTypeOrSelf(op->getResult(0).getType()).isBF16();
}

struct ExpandBf16Pass : public shardc::impl::ExpandBf16PassBase<ExpandBf16Pass> {
  void runOnOperation() override {
    SmallVector<Operation *> conversions;
    getOperation().walk([&](Operation *op) {
      if (isa<arith::TruncFOp, arith::ExtFOp>(op) && convertsBf16(op))
        conversions.push_back(op);
    });
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingOps);
    if (failed(applyOpPatternsGreedily(conversions, std::move(patterns), config)))
      return signalPassFailure();
  }
};

} // namespace
