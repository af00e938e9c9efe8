//===- PlanBuffers.cpp - one arena for a step's temporary buffers ---------===//
//
// See shardc-plan-buffers in include/shardc/Optimize/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Optimize/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

#include <limits>

namespace shardc {
#define GEN_PASS_DEF_PLANBUFFERSPASS
#include "shardc/Optimize/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

constexpr int64_t kAlignment = 64;

/// A buffer of the function's body: allocated at op `first`, freed at op
/// `last` (positions in the body), `bytes` long, placed at `offset`.
struct Buffer {
  memref::AllocOp alloc;
  memref::DeallocOp dealloc;
  int64_t first, last, bytes, offset = 0;

  bool overlapsInTime(const Buffer &other) const {
    return first <= other.last && other.first <= last;
  }
};

/// The body's allocations of static size that one dealloc of the same body
/// frees, with their live ranges.
SmallVector<Buffer> collectBuffers(Block &body) {
  DenseMap<Operation *, int64_t> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = i;
  SmallVector<Buffer> buffers;
  for (auto alloc : body.getOps<memref::AllocOp>()) {
    MemRefType type = alloc.getType();
    if (!type.hasStaticShape() || !type.getLayout().isIdentity() || type.getMemorySpace() ||
        !type.getElementType().isIntOrFloat())
      continue;
    // Live from its first use (hoisting may have moved the alloc up) to its
    // one dealloc.
    memref::DeallocOp dealloc;
    int64_t firstUse = std::numeric_limits<int64_t>::max();
    bool planned = true;
    for (Operation *user : alloc->getUsers()) {
      Operation *inBody = body.findAncestorOpInBlock(*user);
      auto d = dyn_cast<memref::DeallocOp>(user);
      if (!inBody || (d && (dealloc || inBody != d))) {
        planned = false;
        break;
      }
      if (d)
        dealloc = d;
      else
        firstUse = std::min(firstUse, position[inBody]);
    }
    if (!planned || !dealloc)
      continue;
    firstUse = std::min(firstUse, position[dealloc]);
    // Each element in whole bytes, as LLVM stores it (an i1 takes one).
    int64_t elementBytes = (type.getElementTypeBitWidth() + 7) / 8;
    int64_t bytes =
        llvm::alignTo(std::max<int64_t>(type.getNumElements() * elementBytes, 1), kAlignment);
    buffers.push_back({alloc, dealloc, firstUse, position[dealloc], bytes});
  }
  return buffers;
}

/// Greedy by size (the planner of TFLite's arena): largest first, each at the
/// lowest offset where it overlaps no placed buffer that is live at the same
/// time. Returns the arena's size.
int64_t placeBuffers(SmallVector<Buffer> &buffers) {
  SmallVector<Buffer *> order = llvm::map_to_vector(buffers, [](Buffer &b) { return &b; });
  llvm::stable_sort(order, [](Buffer *a, Buffer *b) { return a->bytes > b->bytes; });
  SmallVector<Buffer *> placed;
  int64_t arena = 0;
  for (Buffer *buffer : order) {
    SmallVector<Buffer *> live;
    for (Buffer *other : placed)
      if (buffer->overlapsInTime(*other))
        live.push_back(other);
    llvm::sort(live, [](Buffer *a, Buffer *b) { return a->offset < b->offset; });
    int64_t offset = 0;
    for (Buffer *other : live) {
      if (offset + buffer->bytes <= other->offset)
        break;
      offset = std::max(offset, other->offset + other->bytes);
    }
    buffer->offset = offset;
    arena = std::max(arena, offset + buffer->bytes);
    placed.push_back(buffer);
  }
  return arena;
}

struct PlanBuffersPass : public shardc::impl::PlanBuffersPassBase<PlanBuffersPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal() || !fn.getBody().hasOneBlock())
      return;
    Block &body = fn.getBody().front();
    SmallVector<Buffer> buffers = collectBuffers(body);
    if (buffers.size() < 2)
      return;
    int64_t arenaBytes = placeBuffers(buffers);

    OpBuilder b(&body, body.begin());
    Location loc = fn.getLoc();
    auto arenaType = MemRefType::get({arenaBytes}, b.getI8Type());
    Value arena = memref::AllocOp::create(b, loc, arenaType, b.getI64IntegerAttr(kAlignment));
    for (Buffer &buffer : buffers) {
      b.setInsertionPoint(buffer.alloc);
      Value offset = arith::ConstantIndexOp::create(b, buffer.alloc.getLoc(), buffer.offset);
      Value view = memref::ViewOp::create(b, buffer.alloc.getLoc(), buffer.alloc.getType(), arena,
                                          offset, ValueRange{});
      buffer.alloc.replaceAllUsesWith(view);
      buffer.alloc.erase();
      buffer.dealloc.erase();
    }
    b.setInsertionPoint(body.getTerminator());
    memref::DeallocOp::create(b, loc, arena);
    fn->setAttr("shardc.arena_bytes", b.getI64IntegerAttr(arenaBytes));
  }
};

} // namespace
