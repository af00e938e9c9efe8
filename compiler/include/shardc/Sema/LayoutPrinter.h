//===- LayoutPrinter.h - `shardc --emit=layout` ------------------*- C++ -*-===//

#ifndef SHARDC_SEMA_LAYOUTPRINTER_H
#define SHARDC_SEMA_LAYOUTPRINTER_H

#include "shardc/Sema/TypedProgram.h"

#include "llvm/Support/raw_ostream.h"

namespace shardc {

/// For every parameter and input: which rank holds which block, as a grid over
/// its split dimensions (shardrt/layout_grid.h; jax.debug.visualize_array_sharding
/// draws the same).
void printLayouts(const TypedProgram &program, llvm::raw_ostream &os);

} // namespace shardc

#endif
