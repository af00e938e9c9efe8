//===- Passes.h - shardc's passes around upstream's partitioner -*- C++ -*-===//
//
// The create*Pass() functions and registerShardcShardPasses() that
// Passes.td declares.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_SHARD_PASSES_H
#define SHARDC_SHARD_PASSES_H

#include "mlir/Pass/Pass.h"

namespace shardc {

#define GEN_PASS_DECL
#include "shardc/Shard/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "shardc/Shard/Passes.h.inc"

} // namespace shardc

#endif
