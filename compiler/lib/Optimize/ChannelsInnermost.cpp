//===- ChannelsInnermost.cpp - pooling as generics, channels innermost ----===//
//
// See shardc-channels-innermost in include/shardc/Optimize/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Optimize/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace shardc {
#define GEN_PASS_DEF_CHANNELSINNERMOSTPASS
#include "shardc/Optimize/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

struct ChannelsInnermostPass
    : public shardc::impl::ChannelsInnermostPassBase<ChannelsInnermostPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> pools;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isa<linalg::PoolingNhwcSumOp, linalg::PoolingNhwcMaxOp>(op.getOperation()) &&
          op.hasPureTensorSemantics())
        pools.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp pool : pools) {
      rewriter.setInsertionPoint(pool);
      FailureOr<linalg::GenericOp> generic = linalg::generalizeNamedOp(rewriter, pool);
      // Loops (n, oh, ow, c, kh, kw) -> (n, oh, ow, kh, kw, c).
      if (failed(generic) ||
          failed(linalg::interchangeGenericOp(rewriter, *generic, {0, 1, 2, 4, 5, 3})))
        return signalPassFailure();
    }
  }
};

} // namespace
