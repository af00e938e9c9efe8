//===- ShardingModels.cpp - attach the project's sharding models ----------===//

#include "shardc/Shard/ShardingModels.h"

#include "mlir/IR/DialectRegistry.h"

void shardc::registerShardingModels(mlir::DialectRegistry &registry) {}
