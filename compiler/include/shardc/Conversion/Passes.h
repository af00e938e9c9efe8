//===- Passes.h - shardc's lowerings to libshardrt --------------*- C++ -*-===//
//
// Declarations generated from Passes.td: createShardToRuntimePass(),
// createLowerToKernelsPass() and registerShardcConversionPasses().
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_CONVERSION_PASSES_H
#define SHARDC_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace shardc {

#define GEN_PASS_DECL
#include "shardc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "shardc/Conversion/Passes.h.inc"

} // namespace shardc

#endif
