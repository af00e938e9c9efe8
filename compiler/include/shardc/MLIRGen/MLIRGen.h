//===- MLIRGen.h - the typed program as MLIR --------------------*- C++ -*-===//
//
// Turns the step program (lib/Train) into a module of upstream dialects: a
// `shard.grid` for the rules' mesh and one `func.func` per step function
// (@train_step, @eval_step, @grad_step) in `linalg` / `tensor` / `arith` /
// `math`, with `shard.shard` annotations on every parameter, optimizer state,
// input, constrained value and non-scalar result.
//
// Every argument and result carries `shardc.name` (parameter path, `mu/` +
// path, input name, `loss`, ...), a layer slice of a scanned parameter
// `shardc.layer`, a per-example eval result `shardc.per_example`, every
// argument its `shardc.role`; the module its rules file and where layouts
// were asked for, the grid its axis names (IR/Attributes.h).
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_MLIRGEN_MLIRGEN_H
#define SHARDC_MLIRGEN_MLIRGEN_H

#include "shardc/IR/Attributes.h"
#include "shardc/Sema/TypedProgram.h"
#include "shardc/Support/Diagnostics.h"
#include "shardc/Train/StepFunctions.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace shardc {

struct MLIRGenOptions {
  /// The unpartitioned reference: no grid and no sharding annotations.
  bool reference = false;
};

/// Loads the dialects it needs into `context`. Returns null after reporting
/// an error (at the offending source location) for what it cannot lower.
mlir::OwningOpRef<mlir::ModuleOp> mlirGen(mlir::MLIRContext &context, const TypedProgram &program,
                                          const StepProgram &steps, DiagnosticEngine &diags,
                                          const MLIRGenOptions &options = {});

} // namespace shardc

#endif
