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

/// On the module: the most of the runtime's scratch buffer that one of its
/// kernel or collective calls takes (shardrt/scratch_regions.h), which the
/// driver maps before the first step.
inline constexpr llvm::StringLiteral kScratchBytesAttr = "shardc.scratch_bytes";

#define GEN_PASS_DECL
#include "shardc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "shardc/Conversion/Passes.h.inc"

} // namespace shardc

#endif
