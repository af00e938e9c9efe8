//===- SharedFunctions.h - outlined functions, one per distinct body -*- C++ -*-===//
//
// shardc-outline-kernels and shardc-outline-layers move code into detached
// functions; functions that print alike share one.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_LIB_OPTIMIZE_SHAREDFUNCTIONS_H
#define SHARDC_LIB_OPTIMIZE_SHAREDFUNCTIONS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringMap.h"

namespace shardc {

/// `fn` (detached) added to `module` as `<prefix>_<n>`: private, `no_inline`
/// and of internal linkage (func-to-llvm gives private functions external
/// linkage, and two step modules linked together would both define
/// `<prefix>_0`). Or, when it prints like a function in `shared` (the generic
/// form, without locations, nothing elided, whatever --mlir-print-* options
/// ask of the IR's own printing), `fn` erased and that function.
mlir::func::FuncOp shareFunction(mlir::ModuleOp module, mlir::func::FuncOp fn,
                                 llvm::StringMap<mlir::func::FuncOp> &shared,
                                 llvm::StringRef prefix);

} // namespace shardc

#endif
