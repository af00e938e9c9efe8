//===- SharedFunctions.cpp - outlined functions, one per distinct body ----===//

#include "SharedFunctions.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include <limits>

using namespace mlir;

func::FuncOp shardc::shareFunction(ModuleOp module, func::FuncOp fn,
                                   llvm::StringMap<func::FuncOp> &shared, StringRef prefix) {
  OpPrintingFlags flags;
  flags.printGenericOpForm().enableDebugInfo(false).skipRegions(false).printNameLocAsPrefix(false);
  flags.elideLargeElementsAttrs(std::numeric_limits<int64_t>::max());
  flags.elideLargeResourceString(std::numeric_limits<int64_t>::max());
  std::string text;
  llvm::raw_string_ostream os(text);
  fn->print(os, flags);
  auto [it, isNew] = shared.try_emplace(text, fn);
  if (!isNew) {
    fn.erase();
    return it->second;
  }
  MLIRContext *ctx = module.getContext();
  fn.setSymName((prefix + "_" + llvm::Twine(shared.size() - 1)).str());
  fn.setPrivate();
  fn.setNoInline(true);
  fn->setAttr("llvm.linkage", LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal));
  module.push_back(fn);
  return fn;
}
