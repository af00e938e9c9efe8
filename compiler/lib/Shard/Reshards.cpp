//===- Reshards.cpp - one-step reshards for shard-partition ---------------===//
//
// See shardc-decompose-reshards in include/shardc/Shard/Passes.td. A
// sharding is read as one list of grid axes per tensor dimension. Upstream's
// three reshard patterns go from C to
//   split    C[d] + [a]                      (a unused in C)    all_slice
//   unsplit  C[d] without its last axis                         all_gather
//   move     C[i] without its last axis a, C[j] + [a], and only when
//            C[i] without a equals C[j] (upstream's detection)   all_to_all
// and nothing else. The chain to the target T keeps every dimension a prefix
// of either C[d] or T[d], so no intermediate needs a divisibility the two
// ends do not already need:
//   1. split a dimension whose axes are a prefix of T[d] by T[d]'s next
//      axis, if that axis is free;
//   2. else move the last axis of a dimension that is not a prefix of T[d]
//      to the dimension whose next target axis it is, if upstream sees it;
//   3. else unsplit the last axis of a dimension that is not a prefix of
//      T[d].
// One of them applies while C != T, and each brings C closer to T.
//
//===----------------------------------------------------------------------===//

#include "shardc/Shard/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

namespace shardc {
#define GEN_PASS_DEF_DECOMPOSERESHARDSPASS
#include "shardc/Shard/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace mlir::shard;

namespace {

using Axes = SmallVector<GridAxis>;
using Layout = SmallVector<Axes>;

Layout layoutOf(const Sharding &sharding, size_t rank) {
  Layout layout(rank);
  for (auto [dim, axes] : llvm::enumerate(sharding.getSplitAxes()))
    if (dim < rank)
      layout[dim].assign(axes.asArrayRef().begin(), axes.asArrayRef().end());
  return layout;
}

bool isPrefix(ArrayRef<GridAxis> prefix, ArrayRef<GridAxis> full) {
  return prefix.size() <= full.size() && llvm::equal(prefix, full.take_front(prefix.size()));
}

bool isUsed(const Layout &layout, GridAxis axis) {
  return llvm::any_of(layout, [&](const Axes &axes) { return llvm::is_contained(axes, axis); });
}

// The next target axis of a dimension that is on its way to T[d], if any.
std::optional<GridAxis> nextAxis(const Axes &current, const Axes &target) {
  if (!isPrefix(current, target) || current.size() == target.size())
    return std::nullopt;
  return target[current.size()];
}

// The single steps from `source` to `target` (the last one is `target`).
SmallVector<Layout> planSteps(Layout current, const Layout &target) {
  SmallVector<Layout> steps;
  size_t rank = current.size();
  while (current != target) {
    bool stepped = false;
    // 1. Split.
    for (size_t d = 0; d < rank && !stepped; ++d)
      if (std::optional<GridAxis> axis = nextAxis(current[d], target[d]);
          axis && !isUsed(current, *axis)) {
        current[d].push_back(*axis);
        stepped = true;
      }
    // 2. Move, where upstream recognises it.
    for (size_t i = 0; i < rank && !stepped; ++i) {
      if (current[i].empty() || isPrefix(current[i], target[i]))
        continue;
      GridAxis axis = current[i].back();
      ArrayRef<GridAxis> rest = ArrayRef<GridAxis>(current[i]).drop_back();
      for (size_t j = 0; j < rank && !stepped; ++j)
        if (j != i && nextAxis(current[j], target[j]) == axis && llvm::equal(rest, current[j])) {
          current[i].pop_back();
          current[j].push_back(axis);
          stepped = true;
        }
    }
    // 3. Unsplit.
    for (size_t d = 0; d < rank && !stepped; ++d)
      if (!isPrefix(current[d], target[d])) {
        current[d].pop_back();
        stepped = true;
      }
    if (!stepped) // Unreachable for valid shardings (unique axes).
      return {};
    steps.push_back(current);
  }
  return steps;
}

bool hasHalosOrOffsets(const Sharding &sharding) {
  return !sharding.getStaticHaloSizes().empty() || !sharding.getDynamicHaloSizes().empty() ||
         !sharding.getStaticShardedDimsOffsets().empty() ||
         !sharding.getDynamicShardedDimsOffsets().empty();
}

void decompose(ShardOp target) {
  auto source = target.getSrc().getDefiningOp<ShardOp>();
  if (!source)
    return;
  Sharding from(source.getSharding()), to(target.getSharding());
  if (!from || !to || from.getGridAttr() != to.getGridAttr() || hasHalosOrOffsets(from) ||
      hasHalosOrOffsets(to))
    return;
  size_t rank = std::max({static_cast<size_t>(target.getResult().getType().getRank()),
                          from.getSplitAxes().size(), to.getSplitAxes().size()});
  SmallVector<Layout> steps = planSteps(layoutOf(from, rank), layoutOf(to, rank));
  if (steps.size() <= 1)
    return; // Nothing to do, or one step: upstream's own business.

  MLIRContext *ctx = target.getContext();
  OpBuilder builder(target);
  Location loc = target.getLoc();
  Value value = target.getSrc();
  for (const Layout &step : ArrayRef<Layout>(steps).drop_back()) {
    SmallVector<GridAxesAttr> splitAxes;
    for (const Axes &axes : step)
      splitAxes.push_back(GridAxesAttr::get(ctx, axes));
    while (splitAxes.size() > 1 && splitAxes.back().empty())
      splitAxes.pop_back();
    Value sharding = ShardingOp::create(builder, loc, to.getGridAttr(), splitAxes);
    value = ShardOp::create(builder, loc, value.getType(), value, sharding,
                            /*annotate_for_users=*/false);
  }
  target.getSrcMutable().assign(value);
}

struct DecomposeReshardsPass
    : public shardc::impl::DecomposeReshardsPassBase<DecomposeReshardsPass> {
  void runOnOperation() override {
    SmallVector<ShardOp> shardOps;
    getOperation()->walk([&](ShardOp op) { shardOps.push_back(op); });
    for (ShardOp op : shardOps)
      decompose(op);
  }
};

} // namespace
