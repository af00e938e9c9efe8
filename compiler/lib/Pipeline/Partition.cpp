//===- Partition.cpp - sharding propagation and SPMD partitioning ---------===//
//
// Upstream's passes do the work, with shardc's around them: the
// shardc-propagate and shardc-partition pipelines (PassPipelines.cpp). The
// project's sharding models (lib/Shard) are attached before upstream's so
// that convolutions, pooling, padding and reshapes propagate too
// (Registration.cpp).
//
//===----------------------------------------------------------------------===//

#include "shardc/Pipeline/Pipeline.h"
#include "shardc/Schedule/Passes.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

// The IR is verified once after each stage's pipeline. Verifying after every
// pass, as mlir-opt does, makes a large step noticeably slower to compile
// (bench/compile): that is for finding the pass that broke it.
static llvm::cl::opt<bool> verifyEachPass(
    "verify-each-pass",
    llvm::cl::desc("Verify the IR after every pass of a stage, not only after the stage"),
    llvm::cl::init(false));

LogicalResult shardc::runPipeline(ModuleOp module,
                                  llvm::function_ref<void(OpPassManager &)> buildPipeline) {
  PassManager pm(module.getContext());
  // --mlir-print-ir-after-all, --mlir-timing and the like from shardc's
  // command line.
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  applyDefaultTimingPassManagerCLOptions(pm);
  pm.enableVerifier(verifyEachPass);
  buildPipeline(pm);
  if (failed(pm.run(module)))
    return failure();
  return verify(module);
}

LogicalResult shardc::checkPassManagerOptions(MLIRContext &context) {
  PassManager pm(&context);
  return applyPassManagerCLOptions(pm);
}

LogicalResult shardc::propagateShardings(ModuleOp module) {
  return runPipeline(module, buildPropagatePipeline);
}

LogicalResult shardc::partition(ModuleOp module) {
  return runPipeline(module, buildPartitionPipeline);
}

LogicalResult shardc::buildReferenceTrainStep(ModuleOp module) {
  return runPipeline(module, [](OpPassManager &pm) {
    pm.addPass(createAccumulateMicrobatchesPass());
    pm.addPass(createLayerLoopPass());
  });
}
