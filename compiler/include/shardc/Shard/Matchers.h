//===- Matchers.h - shapes of partitioned IR the shard passes rewrite -*- C++ -*-===//

#ifndef SHARDC_SHARD_MATCHERS_H
#define SHARDC_SHARD_MATCHERS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

namespace shardc {

/// Whether `op` is out = in0 + in1 elementwise on operands of out's shape (a
/// linalg.add, or a linalg.generic that is one).
bool isElementwiseAdd(mlir::linalg::LinalgOp op);

/// The sum all_reduce that makes `value` for this one use (its input of the
/// result's type), or null.
mlir::shard::AllReduceOp soleSum(mlir::Value value);

} // namespace shardc

#endif
