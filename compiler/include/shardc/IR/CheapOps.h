//===- CheapOps.h - elementwise ops cheaper to repeat than to keep -*- C++ -*-===//
//
// What shardc-fuse-elementwise fuses into every reader and shardc-layer-loop
// computes again in a layer's backward instead of keeping from its forward.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_IR_CHEAPOPS_H
#define SHARDC_IR_CHEAPOPS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace shardc {

/// A generic that only moves data (its body yields one of its inputs): a
/// broadcast or a transpose.
bool onlyMovesData(mlir::linalg::GenericOp op);

/// A body of at most seven additions, products, maxima, selects, compares and
/// conversions of a mask to floats (a bias add, a relu, a dropout's mask, Adam's
/// moment update): cheaper to compute again in each reader than to write to
/// memory and read back. Divisions and transcendentals are not.
bool cheapToRepeat(mlir::linalg::GenericOp op);

} // namespace shardc

#endif
