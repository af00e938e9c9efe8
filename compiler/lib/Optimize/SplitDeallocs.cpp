//===- SplitDeallocs.cpp - one bufferization.dealloc per own allocation ---===//
//
// See shardc-split-deallocs in include/shardc/Optimize/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Optimize/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace shardc {
#define GEN_PASS_DEF_SPLITDEALLOCSPASS
#include "shardc/Optimize/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

/// The buffer `memref` views: through views and extract_strided_metadata's base
/// (which the ownership-based deallocation frees a view by).
Value viewedBuffer(Value memref) {
  while (true) {
    if (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
      memref = view.getViewSource();
    else if (auto metadata = memref.getDefiningOp<memref::ExtractStridedMetadataOp>())
      memref = metadata.getSource();
    else
      return memref;
  }
}

struct SplitDeallocsPass : public shardc::impl::SplitDeallocsPassBase<SplitDeallocsPass> {
  void runOnOperation() override {
    SmallVector<bufferization::DeallocOp> deallocs;
    getOperation().walk([&](bufferization::DeallocOp dealloc) {
      if (dealloc.getRetained().empty() && dealloc.getMemrefs().size() > 1)
        deallocs.push_back(dealloc);
    });
    for (bufferization::DeallocOp dealloc : deallocs)
      split(dealloc);
  }

  /// Each memref whose buffer is a memref.alloc that no other memref of the
  /// dealloc views gets a dealloc of its own; the rest stay together.
  static void split(bufferization::DeallocOp dealloc) {
    SmallVector<Value> buffers = llvm::map_to_vector(dealloc.getMemrefs(), viewedBuffer);
    llvm::DenseMap<Value, unsigned> uses;
    for (Value buffer : buffers)
      ++uses[buffer];
    SmallVector<Value> rest, restConditions;
    OpBuilder b(dealloc);
    for (auto [memref, condition, buffer] :
         llvm::zip_equal(dealloc.getMemrefs(), dealloc.getConditions(), buffers)) {
      if (uses[buffer] == 1 && buffer.getDefiningOp<memref::AllocOp>()) {
        bufferization::DeallocOp::create(b, dealloc.getLoc(), memref, condition, ValueRange{});
        continue;
      }
      rest.push_back(memref);
      restConditions.push_back(condition);
    }
    if (rest.empty()) {
      dealloc.erase();
      return;
    }
    dealloc.getMemrefsMutable().assign(rest);
    dealloc.getConditionsMutable().assign(restConditions);
  }
};

} // namespace
