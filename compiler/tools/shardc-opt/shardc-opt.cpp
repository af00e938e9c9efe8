//===- shardc-opt.cpp - mlir-opt with shardc's passes and models ----------===//
//
// Runs any upstream pass plus the project's own passes, with the project's
// sharding models attached, so that lit tests can exercise each piece on
// hand-written IR (like mlir-opt / iree-opt).
//
//===----------------------------------------------------------------------===//

#include "shardc/Conversion/LinalgToKernels.h"
#include "shardc/Conversion/ShardToRuntime.h"
#include "shardc/Report/Report.h"
#include "shardc/Shard/ReplicateUnsharded.h"
#include "shardc/Shard/Reshards.h"
#include "shardc/Shard/ShardingModels.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  // Ours first: the first sharding model attached to an op wins.
  shardc::registerShardingModels(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllPasses();
  shardc::registerShardToRuntimePass();
  shardc::registerLowerToKernelsPass();
  shardc::registerDecomposeReshardsPass();
  shardc::registerReplicateUnshardedPass();
  shardc::registerPrintCommPlanPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "shardc optimizer driver\n", registry));
}
