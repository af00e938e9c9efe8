//===- FirstReader.h - where a collective started early waits ---*- C++ -*-===//
//
// Shared by shardc-prefetch-gathers, which starts a collective early, and
// shardc-shard-to-runtime, which waits for it before its first reader.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_IR_FIRSTREADER_H
#define SHARDC_IR_FIRSTREADER_H

#include "mlir/IR/Block.h"

namespace shardc {

/// The first op of `block` that reads `value` (itself or an op nested in it), else
/// the block's terminator: where a collective started early waits
/// (shardc-prefetch-gathers, shardc-shard-to-runtime).
inline mlir::Operation *firstReaderInBlock(mlir::Value value, mlir::Block *block) {
  mlir::Operation *first = block->getTerminator();
  for (mlir::Operation *user : value.getUsers())
    if (mlir::Operation *reader = block->findAncestorOpInBlock(*user))
      if (reader->isBeforeInBlock(first))
        first = reader;
  return first;
}

} // namespace shardc

#endif
