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
/// (positions in the block), `bytes` long, placed at `offset` of the arena or
/// of donated argument `region`. Or, without an alloc, the buffers of a loop's
/// body or of a switch's cases (`inner`, placed within it), live while it runs.
struct Buffer {
  memref::AllocOp alloc;
  memref::DeallocOp dealloc;
  int64_t first, last, bytes, offset = 0;
  std::vector<Buffer> inner;
  int region = -1;

  bool overlapsInTime(const Buffer &other) const {
    return first <= other.last && other.first <= last;
  }
};

/// A layer function's argument that every caller frees right after the call
/// (a saved activation its backward reads last): once the function has read
/// it for the last time, at `lastUse`, its `bytes` take the function's later
/// temporaries, as the unrolled step reused a dead activation's bytes.
struct Donation {
  int64_t lastUse, bytes;
  SmallVector<memref::AllocOp> allocs; // the argument's buffer at each call
};

/// The last op of `body` that reads or writes the bytes of `buffer`: every
/// user of the buffer or of a value made from it (a view, a pointer taken of
/// it, an index computed from that pointer) counts, since any of them may
/// reach the bytes. The dealloc itself does not.
int64_t lastAccess(Value buffer, Block &body, const DenseMap<Operation *, int64_t> &position) {
  int64_t last = -1;
  SmallVector<Value> worklist{buffer};
  DenseSet<Value> seen{buffer};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (isa<memref::DeallocOp>(user))
        continue;
      if (Operation *inBody = body.findAncestorOpInBlock(*user))
        last = std::max(last, position.lookup(inBody));
      // A load yields a number, not a way to the bytes; so does a call's integer
      // result (a reduction's handle: the runtime copies the input before the
      // start returns, and the wait names the output, keeping it in use).
      if (isa<memref::LoadOp>(user))
        continue;
      bool call = isa<func::CallOp>(user);
      for (Value derived : user->getResults())
        if (!(call && derived.getType().isInteger()) && seen.insert(derived).second)
          worklist.push_back(derived);
    }
  }
  return last;
}

/// A buffer the plan can place: static, contiguous, of numbers.
bool isPlannable(MemRefType type) {
  return type.hasStaticShape() && type.getLayout().isIdentity() && !type.getMemorySpace() &&
         type.getElementType().isIntOrFloat();
}

/// The bytes a buffer of `type` takes in the plan: each element in whole bytes,
/// as LLVM stores it (an i1 takes one), the whole aligned.
int64_t plannedBytes(MemRefType type) {
  int64_t elementBytes = (type.getElementTypeBitWidth() + 7) / 8;
  return llvm::alignTo(std::max<int64_t>(type.getNumElements() * elementBytes, 1), kAlignment);
}

DenseMap<Operation *, int64_t> positionsIn(Block &body) {
  DenseMap<Operation *, int64_t> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = i;
  return position;
}

/// The body's allocations of static size that one dealloc of the same body
/// frees, with their live ranges: from the first use (hoisting may have
/// moved the alloc up) to the last access. The deallocation pipeline frees
/// at the end of the block, not after the last use, so the dealloc's
/// position would keep every buffer live to the end.
std::vector<Buffer> collectBuffers(Block &body) {
  DenseMap<Operation *, int64_t> position = positionsIn(body);
  std::vector<Buffer> buffers;
  for (auto alloc : body.getOps<memref::AllocOp>()) {
    MemRefType type = alloc.getType();
    if (!isPlannable(type))
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
    buffers.push_back({alloc, dealloc, firstUse, last, plannedBytes(type), 0, {}});
  }
  return buffers;
}

/// The lowest offset of `region` where `buffer` overlaps none of the `placed`
/// buffers there that are live at the same time.
int64_t lowestOffset(const Buffer &buffer, ArrayRef<Buffer *> placed, int region) {
  SmallVector<Buffer *> live;
  for (Buffer *other : placed)
    if (other->region == region && buffer.overlapsInTime(*other))
      live.push_back(other);
  llvm::sort(live, [](Buffer *a, Buffer *b) { return a->offset < b->offset; });
  int64_t offset = 0;
  for (Buffer *other : live) {
    if (offset + buffer.bytes <= other->offset)
      break;
    offset = std::max(offset, other->offset + other->bytes);
  }
  return offset;
}

/// Greedy by size (the planner of TFLite's arena): largest first, each at the
/// lowest offset where it overlaps no placed buffer that is live at the same
/// time, in a donated argument that is dead by then if one has room, else in
/// the arena. Returns the arena's size.
int64_t placeBuffers(std::vector<Buffer> &buffers, ArrayRef<Donation> donations = {}) {
  SmallVector<Buffer *> order = llvm::map_to_vector(buffers, [](Buffer &b) { return &b; });
  llvm::stable_sort(order, [](Buffer *a, Buffer *b) { return a->bytes > b->bytes; });
  SmallVector<Buffer *> placed;
  int64_t arena = 0;
  for (Buffer *buffer : order) {
    buffer->region = -1;
    for (auto [region, donation] : llvm::enumerate(donations)) {
      if (!buffer->alloc || buffer->first <= donation.lastUse)
        continue;
      int64_t offset = lowestOffset(*buffer, placed, region);
      if (offset + buffer->bytes <= donation.bytes) {
        buffer->region = region;
        buffer->offset = offset;
        break;
      }
    }
    if (buffer->region < 0) {
      buffer->offset = lowestOffset(*buffer, placed, -1);
      arena = std::max(arena, buffer->offset + buffer->bytes);
    }
    placed.push_back(buffer);
  }
  return arena;
}

/// The buffers of `body` and, as one buffer each, those of the loops in it
/// (an iteration's temporaries, planned within the loop's bytes) and of the
/// switches in it (each case's temporaries planned from the switch's first
/// byte: one case runs), placed. Returns the bytes they take of the arena.
int64_t planBlock(Block &body, std::vector<Buffer> &buffers, ArrayRef<Donation> donations = {}) {
  buffers = collectBuffers(body);
  for (auto [i, op] : llvm::enumerate(body)) {
    if (!isa<scf::ForOp, scf::IndexSwitchOp>(op))
      continue;
    Buffer nested;
    nested.first = nested.last = i;
    nested.bytes = 0;
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      nested.bytes = llvm::alignTo(planBlock(*loop.getBody(), nested.inner), kAlignment);
    } else {
      for (Region &region : op.getRegions()) {
        Buffer one;
        one.first = one.last = i;
        one.bytes = llvm::alignTo(planBlock(region.front(), one.inner), kAlignment);
        nested.bytes = std::max(nested.bytes, one.bytes);
        if (!one.inner.empty())
          nested.inner.push_back(std::move(one));
      }
    }
    if (!nested.inner.empty())
      buffers.push_back(std::move(nested));
  }
  return placeBuffers(buffers, donations);
}

/// Each planned alloc becomes a view of `arena` (or of its donated region's
/// bytes, `regions`) at its offset (`base` + its place), and its dealloc goes.
void replaceByViews(std::vector<Buffer> &buffers, Value arena, int64_t base, OpBuilder &b,
                    ArrayRef<Value> regions = {}) {
  for (Buffer &buffer : buffers) {
    if (!buffer.alloc) {
      replaceByViews(buffer.inner, arena, base + buffer.offset, b);
      continue;
    }
    b.setInsertionPoint(buffer.alloc);
    Location loc = buffer.alloc.getLoc();
    bool donated = buffer.region >= 0;
    Value offset =
        arith::ConstantIndexOp::create(b, loc, donated ? buffer.offset : base + buffer.offset);
    Value view =
        memref::ViewOp::create(b, loc, buffer.alloc.getType(),
                               donated ? regions[buffer.region] : arena, offset, ValueRange{});
    buffer.alloc.replaceAllUsesWith(view);
    buffer.alloc.erase();
    buffer.dealloc.erase();
  }
}

/// The memref that the call's operand `index` is, when the caller allocated it
/// in the call's block, frees it there, and does not touch it after the call.
/// `position` holds the positions of the call's block.
memref::AllocOp freedAfter(func::CallOp call, unsigned index,
                           const DenseMap<Operation *, int64_t> &position) {
  Value operand = call.getOperand(index);
  auto alloc = operand.getDefiningOp<memref::AllocOp>();
  Block *block = call->getBlock();
  if (!alloc || alloc->getBlock() != block || llvm::count(call.getOperands(), operand) != 1 ||
      llvm::count_if(alloc->getUsers(), [](Operation *u) { return isa<memref::DeallocOp>(u); }) !=
          1)
    return nullptr;
  return lastAccess(alloc, *block, position) == position.lookup(call) ? alloc : nullptr;
}

/// The arguments of `fn` that every call frees right after it.
SmallVector<Donation> findDonations(func::FuncOp fn, ArrayRef<func::CallOp> calls) {
  SmallVector<Donation> donations;
  if (calls.empty())
    return donations;
  DenseMap<Block *, DenseMap<Operation *, int64_t>> positions;
  for (func::CallOp call : calls)
    if (!positions.count(call->getBlock()))
      positions[call->getBlock()] = positionsIn(*call->getBlock());
  Block &body = fn.getBody().front();
  DenseMap<Operation *, int64_t> position = positionsIn(body);
  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type || !isPlannable(type))
      continue;
    Donation donation{lastAccess(arg, body, position), plannedBytes(type), {}};
    for (func::CallOp call : calls)
      if (memref::AllocOp alloc = freedAfter(call, arg.getArgNumber(), positions[call->getBlock()]))
        donation.allocs.push_back(alloc);
    if (donation.allocs.size() == calls.size())
      donations.push_back(std::move(donation));
  }
  return donations;
}

/// Makes `alloc`, an operand of `call`, a view of a buffer of `bytes` bytes,
/// which the call also passes (last): the function takes its temporaries there.
void donate(func::CallOp call, memref::AllocOp alloc, int64_t bytes) {
  OpBuilder b(alloc);
  Location loc = alloc.getLoc();
  Value raw = memref::AllocOp::create(b, loc, MemRefType::get({bytes}, b.getI8Type()),
                                      b.getI64IntegerAttr(kAlignment));
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value typed = memref::ViewOp::create(b, loc, alloc.getType(), raw, zero, ValueRange{});
  for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
    if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
      b.setInsertionPoint(dealloc);
      memref::DeallocOp::create(b, dealloc.getLoc(), raw);
      dealloc.erase();
    }
  alloc.replaceAllUsesWith(typed);
  alloc.erase();
  call.getOperandsMutable().append(raw);
}

/// Plans `fn`'s buffers; false when its arena argument cannot be added. A
/// function that takes its arena also takes, before it, the bytes of each
/// argument its `calls` free right after it (a donation) that a buffer
/// lands in.
bool planFunction(func::FuncOp fn, ArrayRef<func::CallOp> calls) {
  if (fn.isExternal() || !fn.getBody().hasOneBlock())
    return true;
  Block &body = fn.getBody().front();
  bool argument = fn->hasAttr(shardc::kArenaArgumentAttr);
  SmallVector<Donation> donations;
  if (argument)
    donations = findDonations(fn, calls);
  std::vector<Buffer> buffers;
  int64_t arenaBytes = planBlock(body, buffers, donations);
  OpBuilder b(&body, body.begin());
  fn->setAttr(shardc::kArenaBytesAttr, b.getI64IntegerAttr(arenaBytes));
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
    SmallVector<Value> regions(donations.size());
    for (auto [region, donation] : llvm::enumerate(donations)) {
      if (llvm::none_of(buffers, [&](const Buffer &x) { return x.region == (int)region; }))
        continue;
      auto type = MemRefType::get({donation.bytes}, b.getI8Type());
      if (failed(fn.insertArgument(fn.getNumArguments(), type, {}, loc)))
        return false;
      regions[region] = body.getArguments().back();
      for (auto [call, alloc] : llvm::zip(calls, donation.allocs))
        donate(call, alloc, donation.bytes);
    }
    if (failed(fn.insertArgument(fn.getNumArguments(), arenaType, {}, loc)))
      return false;
    replaceByViews(buffers, body.getArguments().back(), 0, b, regions);
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
    DenseMap<Operation *, SmallVector<func::CallOp>> callsOf;
    module.walk([&](func::CallOp call) {
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
        callsOf[callee].push_back(call);
    });
    for (func::FuncOp fn : order) {
      passArenas(fn, symbols);
      if (!planFunction(fn, callsOf.lookup(fn)))
        return signalPassFailure();
    }
  }
};

} // namespace
