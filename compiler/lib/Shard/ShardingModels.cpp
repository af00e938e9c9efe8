//===- ShardingModels.cpp - attach the project's sharding models ----------===//
//
// Registration entry point and the helpers the per-dialect models share
// (LinalgShardingModels.cpp, TensorShardingModels.cpp).
//
//===----------------------------------------------------------------------===//

#include "shardc/Shard/ShardingModels.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::shard;

void shardc::registerShardingModels(DialectRegistry &registry) {
  registerLinalgShardingModels(registry);
  registerTensorShardingModels(registry);
}

namespace shardc::shard_detail {

LoopShardingBuilder::LoopShardingBuilder(unsigned numLoops) : loops(numLoops) {}

LogicalResult LoopShardingBuilder::addTensor(const Sharding &sharding) {
  if (!sharding)
    return success();
  if (grid && grid != sharding.getGridAttr())
    return failure();
  // A halo or an uneven split changes local shapes in ways the models do not
  // compute; refuse rather than partition wrongly.
  if (!sharding.getStaticHaloSizes().empty() || !sharding.getDynamicHaloSizes().empty() ||
      !sharding.getStaticShardedDimsOffsets().empty() ||
      !sharding.getDynamicShardedDimsOffsets().empty())
    return failure();
  grid = sharding.getGridAttr();
  return success();
}

LogicalResult LoopShardingBuilder::addLoop(unsigned loop, ArrayRef<GridAxis> axes) {
  if (axes.empty())
    return success();
  if (loop >= loops.size())
    return failure();
  if (!loops[loop].empty() && ArrayRef<GridAxis>(loops[loop]) != axes)
    return failure();
  for (auto [other, otherAxes] : llvm::enumerate(loops)) {
    if (other == loop)
      continue;
    for (GridAxis axis : axes)
      if (llvm::is_contained(otherAxes, axis))
        return failure();
  }
  if (loops[loop].empty())
    loops[loop].assign(axes.begin(), axes.end());
  return success();
}

LogicalResult
LoopShardingBuilder::addTensorDims(const Sharding &sharding, int64_t rank,
                                   function_ref<std::optional<unsigned>(int64_t dim)> loopOf) {
  if (failed(addTensor(sharding)))
    return failure();
  for (int64_t dim = 0; dim < rank; ++dim)
    if (std::optional<unsigned> loop = loopOf(dim))
      if (failed(addLoop(*loop, splitAxesOfDim(sharding, dim))))
        return failure();
  return success();
}

ShardingOption LoopShardingBuilder::finish() {
  if (!grid)
    return ShardingOption::makeEmpty();
  ShardingArray array = loops;
  removeTrailingEmptySubArray(array);
  return ShardingOption(std::move(array), grid);
}

ArrayRef<GridAxis> splitAxesOfDim(const Sharding &sharding, int64_t dim) {
  if (!sharding || dim >= static_cast<int64_t>(sharding.getSplitAxes().size()))
    return {};
  return sharding.getSplitAxes()[dim].asArrayRef();
}

std::optional<int64_t> deviceCountOfAxes(Operation *op, const Sharding &sharding,
                                         ArrayRef<GridAxis> axes) {
  SymbolTableCollection symbolTable;
  GridOp grid = getGridOrNull(op, sharding.getGridAttr(), symbolTable);
  if (!grid)
    return std::nullopt;
  int64_t count = collectiveProcessGroupSize(axes, grid);
  if (ShapedType::isDynamic(count))
    return std::nullopt;
  return count;
}

} // namespace shardc::shard_detail
