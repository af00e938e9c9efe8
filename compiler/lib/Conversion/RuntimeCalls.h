//===- RuntimeCalls.h - calling libshardrt from lowered IR ------*- C++ -*-===//
//
// What the passes that call into libshardrt (shardc-shard-to-runtime,
// shardc-lower-to-kernels) share: declarations of the C functions as private
// func.func with !llvm.ptr / i32 / i64 arguments, and the pointers they take.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_LIB_CONVERSION_RUNTIMECALLS_H
#define SHARDC_LIB_CONVERSION_RUNTIMECALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringMap.h"

namespace shardc::conversion_detail {

/// Declares the runtime functions a module calls, once each, at the top of
/// the module in order of first use.
class RuntimeFunctions {
public:
  explicit RuntimeFunctions(mlir::ModuleOp module);

  /// The declaration of `name` with the given type. Null, with an error at
  /// `at`, when the module has `name` with another type or as another symbol.
  mlir::func::FuncOp getOrDeclare(mlir::Operation *at, llvm::StringRef name,
                                  llvm::ArrayRef<mlir::Type> args,
                                  llvm::ArrayRef<mlir::Type> results);

  /// Where the next declaration goes; other module-level helpers (constant
  /// globals) that are created there keep the order of first use.
  mlir::OpBuilder &declarationBuilder() { return builder; }

private:
  mlir::ModuleOp module;
  mlir::OpBuilder builder;
  llvm::StringMap<mlir::func::FuncOp> functions;
};

/// The address of the first element of `memref` as !llvm.ptr: its aligned
/// pointer (memref.extract_aligned_pointer_as_index, index_cast to i64,
/// llvm.inttoptr) advanced by its offset when the layout has one, and by
/// `extraElements` (an index) when given.
mlir::Value getElementPointer(mlir::OpBuilder &b, mlir::Location loc, mlir::Value memref,
                              mlir::Value extraElements = {});

/// Records that a runtime call of `module` takes `bytes` of the runtime's
/// scratch buffer (kScratchBytesAttr keeps the most).
void needScratch(mlir::ModuleOp module, int64_t bytes);

} // namespace shardc::conversion_detail

#endif
