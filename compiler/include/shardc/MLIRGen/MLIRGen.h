//===- MLIRGen.h - the typed program as MLIR --------------------*- C++ -*-===//
//
// Turns a TypedProgram into a module of upstream dialects: a `shard.grid` for
// the rules' mesh and `func.func @forward` computing the loss, the metrics
// and the model's named values, in `linalg` / `tensor` / `arith` / `math`,
// with `shard.shard` annotations on every parameter, input and constrained
// value. `scan` is unrolled: each layer gets its own slice of every stacked
// parameter as a separate function argument (upstream has no sharding model
// for scf.for or tensor.extract_slice).
//
// Every argument carries `shardc.name` (parameter path or input name) and,
// for a layer slice, `shardc.layer`; every result carries `shardc.name`.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_MLIRGEN_MLIRGEN_H
#define SHARDC_MLIRGEN_MLIRGEN_H

#include "shardc/Sema/TypedProgram.h"
#include "shardc/Support/Diagnostics.h"

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

/// The name of the generated function and of the attributes on its
/// arguments and results.
inline constexpr const char *kForwardFunction = "forward";
inline constexpr const char *kNameAttr = "shardc.name";
inline constexpr const char *kLayerAttr = "shardc.layer";
inline constexpr const char *kGridName = "mesh";

/// Loads the dialects it needs into `context`. Returns null after reporting
/// an error (at the offending source location) for what it cannot lower.
mlir::OwningOpRef<mlir::ModuleOp> mlirGen(mlir::MLIRContext &context, const TypedProgram &program,
                                          DiagnosticEngine &diags,
                                          const MLIRGenOptions &options = {});

} // namespace shardc

#endif
