//===- ShardToRuntime.cpp - lower shard collectives to libshardrt ---------===//

#include "shardc/Conversion/ShardToRuntime.h"

#include "mlir/Pass/Pass.h"

std::unique_ptr<mlir::Pass> shardc::createShardToRuntimePass() { return nullptr; }
void shardc::registerShardToRuntimePass() {}
