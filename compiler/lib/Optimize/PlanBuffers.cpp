//===- PlanBuffers.cpp - one arena for a step's temporary buffers ---------===//
//
// See shardc-plan-buffers in include/shardc/Optimize/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Optimize/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include <limits>

namespace shardc {
#define GEN_PASS_DEF_PLANBUFFERSPASS
#include "shardc/Optimize/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

constexpr int64_t kAlignment = 64;

/// A buffer of a block: first used at op `first`, last accessed at op `last`
/// (positions in the block), `bytes` long, placed at `offset`. Or, without an
/// alloc, the buffers of a loop's body (`inner`, placed within it), live while
/// the loop runs.
struct Buffer {
  memref::AllocOp alloc;
  memref::DeallocOp dealloc;
  int64_t first, last, bytes, offset = 0;
  std::vector<Buffer> inner;

  bool overlapsInTime(const Buffer &other) const {
    return first <= other.last && other.first <= last;
  }
};

/// The last op of `body` that reads or writes the bytes of `alloc`: every
/// user of the buffer or of a value made from it (a view, a pointer taken of
/// it, an index computed from that pointer) counts, since any of them may
/// reach the bytes. The dealloc itself does not.
int64_t lastAccess(memref::AllocOp alloc, Block &body,
                   const DenseMap<Operation *, int64_t> &position) {
  int64_t last = -1;
  SmallVector<Value> worklist{alloc.getResult()};
  DenseSet<Value> seen{alloc.getResult()};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (isa<memref::DeallocOp>(user))
        continue;
      if (Operation *inBody = body.findAncestorOpInBlock(*user))
        last = std::max(last, position.lookup(inBody));
      // A load yields a number, not a way to the bytes.
      if (isa<memref::LoadOp>(user))
        continue;
      for (Value derived : user->getResults())
        if (seen.insert(derived).second)
          worklist.push_back(derived);
    }
  }
  return last;
}

/// The body's allocations of static size that one dealloc of the same body
/// frees, with their live ranges: from the first use (hoisting may have
/// moved the alloc up) to the last access. The deallocation pipeline frees
/// at the end of the block, not after the last use, so the dealloc's
/// position would keep every buffer live to the end.
std::vector<Buffer> collectBuffers(Block &body) {
  DenseMap<Operation *, int64_t> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = i;
  std::vector<Buffer> buffers;
  for (auto alloc : body.getOps<memref::AllocOp>()) {
    MemRefType type = alloc.getType();
    if (!type.hasStaticShape() || !type.getLayout().isIdentity() || type.getMemorySpace() ||
        !type.getElementType().isIntOrFloat())
      continue;
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
    int64_t last = lastAccess(alloc, body, position);
    if (last < 0) // never used: live for an instant at its dealloc
      last = position[dealloc];
    firstUse = std::min(firstUse, last);
    // Each element in whole bytes, as LLVM stores it (an i1 takes one).
    int64_t elementBytes = (type.getElementTypeBitWidth() + 7) / 8;
    int64_t bytes =
        llvm::alignTo(std::max<int64_t>(type.getNumElements() * elementBytes, 1), kAlignment);
    buffers.push_back({alloc, dealloc, firstUse, last, bytes, 0, {}});
  }
  return buffers;
}

/// Greedy by size (the planner of TFLite's arena): largest first, each at the
/// lowest offset where it overlaps no placed buffer that is live at the same
/// time. Returns the arena's size.
int64_t placeBuffers(std::vector<Buffer> &buffers) {
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

/// The buffers of `body` and, as one buffer each, those of the loops in it
/// (an iteration's temporaries, planned within the loop's bytes), placed.
/// Returns the bytes they take.
int64_t planBlock(Block &body, std::vector<Buffer> &buffers) {
  buffers = collectBuffers(body);
  for (auto [i, op] : llvm::enumerate(body)) {
    if (!isa<scf::ForOp>(op))
      continue;
    Buffer loop;
    loop.first = loop.last = i;
    loop.bytes = llvm::alignTo(planBlock(*cast<scf::ForOp>(op).getBody(), loop.inner), kAlignment);
    if (!loop.inner.empty())
      buffers.push_back(std::move(loop));
  }
  return placeBuffers(buffers);
}

/// Each planned alloc becomes a view of `arena` at its offset (`base` + its
/// place), and its dealloc goes.
void replaceByViews(std::vector<Buffer> &buffers, Value arena, int64_t base, OpBuilder &b) {
  for (Buffer &buffer : buffers) {
    if (!buffer.alloc) {
      replaceByViews(buffer.inner, arena, base + buffer.offset, b);
      continue;
    }
    b.setInsertionPoint(buffer.alloc);
    Location loc = buffer.alloc.getLoc();
    Value offset = arith::ConstantIndexOp::create(b, loc, base + buffer.offset);
    Value view = memref::ViewOp::create(b, loc, buffer.alloc.getType(), arena, offset, ValueRange{});
    buffer.alloc.replaceAllUsesWith(view);
    buffer.alloc.erase();
    buffer.dealloc.erase();
  }
}

/// Plans `fn`'s buffers; false when its arena argument cannot be added.
bool planFunction(func::FuncOp fn) {
  if (fn.isExternal() || !fn.getBody().hasOneBlock())
    return true;
  Block &body = fn.getBody().front();
  std::vector<Buffer> buffers;
  int64_t arenaBytes = planBlock(body, buffers);
  OpBuilder b(&body, body.begin());
  fn->setAttr(shardc::kArenaBytesAttr, b.getI64IntegerAttr(arenaBytes));
  bool argument = fn->hasAttr(shardc::kArenaArgumentAttr);
  if (buffers.empty()) {
    fn->removeAttr(shardc::kArenaArgumentAttr);
    return true;
  }
  // Nothing to share: the one buffer keeps its alloc.
  if (!argument && buffers.size() == 1 && buffers.front().alloc)
    return true;
  Location loc = fn.getLoc();
  auto arenaType = MemRefType::get({arenaBytes}, b.getI8Type());
  if (argument) {
    if (failed(fn.insertArgument(fn.getNumArguments(), arenaType, {}, loc)))
      return false;
    replaceByViews(buffers, body.getArguments().back(), 0, b);
    return true;
  }
  Value arena = memref::AllocOp::create(b, loc, arenaType, b.getI64IntegerAttr(kAlignment));
  replaceByViews(buffers, arena, 0, b);
  b.setInsertionPoint(body.getTerminator());
  memref::DeallocOp::create(b, loc, arena);
  return true;
}

/// Each call of a function that takes its arena (a planned layer function)
/// passes a buffer of the arena's size, allocated just for the call: the
/// caller's plan then places it like any temporary, live during the call.
void passArenas(func::FuncOp fn, SymbolTable &symbols) {
  fn.walk([&](func::CallOp call) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal() || !callee->hasAttr(shardc::kArenaArgumentAttr))
      return;
    auto bytes = callee->getAttrOfType<IntegerAttr>(shardc::kArenaBytesAttr);
    OpBuilder b(call);
    auto type = MemRefType::get({bytes.getInt()}, b.getI8Type());
    Value arena = memref::AllocOp::create(b, call.getLoc(), type, b.getI64IntegerAttr(kAlignment));
    call.getOperandsMutable().append(arena);
    b.setInsertionPointAfter(call);
    memref::DeallocOp::create(b, call.getLoc(), arena);
  });
}

struct PlanBuffersPass : public shardc::impl::PlanBuffersPassBase<PlanBuffersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // Callees first: a caller's plan holds its callees' arenas.
    SmallVector<func::FuncOp> order;
    DenseSet<Operation *> visited;
    std::function<void(func::FuncOp)> visit = [&](func::FuncOp fn) {
      if (!visited.insert(fn).second)
        return;
      fn.walk([&](func::CallOp call) {
        if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
          visit(callee);
      });
      order.push_back(fn);
    };
    for (auto fn : module.getOps<func::FuncOp>())
      visit(fn);
    for (func::FuncOp fn : order) {
      passArenas(fn, symbols);
      if (!planFunction(fn))
        return signalPassFailure();
    }
  }
};

} // namespace
