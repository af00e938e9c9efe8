//===- ExpandTanh.cpp - tanh as exp, rewriting the tanh ops alone ---------===//
//
// See shardc-expand-tanh in include/shardc/Optimize/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Optimize/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace shardc {
#define GEN_PASS_DEF_EXPANDTANHPASS
#include "shardc/Optimize/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

struct ExpandTanhPass : public shardc::impl::ExpandTanhPassBase<ExpandTanhPass> {
  void runOnOperation() override {
    SmallVector<Operation *> tanhs;
    getOperation().walk([&](math::TanhOp tanh) { tanhs.push_back(tanh); });
    RewritePatternSet patterns(&getContext());
    math::populateExpansionPatterns(patterns, {"tanh"});
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingOps);
    if (failed(applyOpPatternsGreedily(tanhs, std::move(patterns), config)))
      return signalPassFailure();
  }
};

} // namespace
