//===- Passes.h - shardc's schedule transforms ------------------*- C++ -*-===//
//
// The create*Pass() functions and registerShardcSchedulePasses() that
// Passes.td declares.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_SCHEDULE_PASSES_H
#define SHARDC_SCHEDULE_PASSES_H

#include "mlir/Pass/Pass.h"

namespace shardc {

#define GEN_PASS_DECL
#include "shardc/Schedule/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "shardc/Schedule/Passes.h.inc"

} // namespace shardc

#endif
