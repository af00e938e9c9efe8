//===- Registration.cpp - dialects, passes and pipelines for both tools ---===//
//
// shardc and shardc-opt register the same things here, so that a pipeline
// the tests run by name is the one shardc runs.
//
//===----------------------------------------------------------------------===//

#include "shardc/Conversion/Passes.h"
#include "shardc/Optimize/Passes.h"
#include "shardc/Pipeline/Pipeline.h"
#include "shardc/Report/Report.h"
#include "shardc/Schedule/Passes.h"
#include "shardc/Shard/Passes.h"
#include "shardc/Shard/ShardingModels.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void shardc::registerDialects(DialectRegistry &registry) {
  // Ours first: the first sharding model attached to an op wins.
  registerShardingModels(registry);
  registerAllDialects(registry);
  registerAllExtensions(registry);
}

void shardc::registerPasses() {
  registerAllPasses();
  registerShardcOptimizePasses();
  registerShardcConversionPasses();
  registerShardcShardPasses();
  registerShardcSchedulePasses();
  registerShardcReportPasses();
  PassPipelineRegistration<>("shardc-propagate",
                             "Annotate every value with a sharding (shardc --emit=sharded)",
                             buildPropagatePipeline);
  PassPipelineRegistration<>("shardc-partition",
                             "Partition a propagated module into SPMD form with explicit "
                             "collectives (shardc --emit=spmd)",
                             buildPartitionPipeline);
  PassPipelineRegistration<>("shardc-bufferize",
                             "The first part of shardc-lower-to-llvm: inline, collectives to "
                             "libshardrt calls, bufferize and free every temporary",
                             buildBufferizePipeline);
  PassPipelineRegistration<LowerToLLVMPipelineOptions>(
      "shardc-lower-to-llvm",
      "Lower a partitioned module to the LLVM dialect (shardc --emit=llvm, less the entry "
      "points and main)",
      buildLowerToLLVMPipeline);
}
