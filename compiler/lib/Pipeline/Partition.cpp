//===- Partition.cpp - sharding propagation and SPMD partitioning ---------===//
//
// Upstream's passes do the work; they must run nested under func.func. The
// project's sharding models (lib/Shard) are attached before upstream's so
// that convolutions, pooling, padding and reshapes propagate too.
//
//===----------------------------------------------------------------------===//

#include "shardc/Pipeline/Pipeline.h"
#include "shardc/Conversion/LinalgToKernels.h"
#include "shardc/Conversion/ShardToRuntime.h"
#include "shardc/Shard/ReplicateUnsharded.h"
#include "shardc/Shard/Reshards.h"
#include "shardc/Shard/ShardingModels.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void shardc::registerPipelineDialects(DialectRegistry &registry) {
  registerShardingModels(registry);
  registerAllDialects(registry);
  registerAllExtensions(registry);
  // Textual pipelines below name upstream passes and ours.
  static bool passesRegistered = [] {
    registerAllPasses();
    registerShardToRuntimePass();
    registerLowerToKernelsPass();
    registerDecomposeReshardsPass();
    registerReplicateUnshardedPass();
    return true;
  }();
  (void)passesRegistered;
}

LogicalResult shardc::runPassPipeline(ModuleOp module, llvm::StringRef pipeline) {
  PassManager pm(module.getContext());
  std::string message;
  llvm::raw_string_ostream os(message);
  if (failed(parsePassPipeline(pipeline, pm, os))) {
    module.emitError() << "internal error: bad pass pipeline: " << message;
    return failure();
  }
  return pm.run(module);
}

// replicate-unsharded anchors what propagation did not reach and propagates
// again from there (include/shardc/Shard/ReplicateUnsharded.h).
LogicalResult shardc::propagateShardings(ModuleOp module) {
  return runPassPipeline(
      module, "func.func(sharding-propagation{traversal=forward-backward},replicate-unsharded)");
}

// decompose-reshards first: shard-partition does a reshard in one step only,
// and silently gets a longer one wrong (include/shardc/Shard/Reshards.h).
// cse after it merges the identical reshards it makes for each use of a value,
// so that the report counts what runs.
LogicalResult shardc::partition(ModuleOp module) {
  return runPassPipeline(module,
                         "func.func(decompose-reshards,shard-partition,canonicalize,cse)");
}
