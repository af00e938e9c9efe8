//===- RuntimeCalls.cpp - calling libshardrt from lowered IR --------------===//

#include "RuntimeCalls.h"
#include "shardc/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

namespace shardc::conversion_detail {

RuntimeFunctions::RuntimeFunctions(ModuleOp module)
    : module(module), builder(OpBuilder::atBlockBegin(module.getBody())) {}

func::FuncOp RuntimeFunctions::getOrDeclare(Operation *at, StringRef name, ArrayRef<Type> args,
                                            ArrayRef<Type> results) {
  if (func::FuncOp fn = functions.lookup(name))
    return fn;
  auto type = FunctionType::get(module.getContext(), args, results);
  if (auto existing = module.lookupSymbol<func::FuncOp>(name)) {
    if (existing.getFunctionType() != type) {
      at->emitOpError("needs runtime function @")
          << name << " of type " << type << ", but the module declares "
          << existing.getFunctionType();
      return nullptr;
    }
    functions[name] = existing;
    return existing;
  }
  if (module.lookupSymbol(name)) {
    at->emitOpError("needs runtime function @")
        << name << ", but the module defines that symbol otherwise";
    return nullptr;
  }
  auto fn = func::FuncOp::create(builder, module.getLoc(), name, type);
  fn.setPrivate();
  builder.setInsertionPointAfter(fn);
  functions[name] = fn;
  return fn;
}

Value getElementPointer(OpBuilder &b, Location loc, Value memref, Value extraElements) {
  auto type = cast<MemRefType>(memref.getType());
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  auto [strides, offset] = type.getStridesAndOffset();
  Value elements = extraElements;
  if (offset != 0) {
    Value own = ShapedType::isDynamic(offset)
                    ? memref::ExtractStridedMetadataOp::create(b, loc, memref).getOffset()
                    : arith::ConstantIndexOp::create(b, loc, offset).getResult();
    elements = elements ? arith::AddIOp::create(b, loc, elements, own) : own;
  }
  if (elements) {
    Value bytes = arith::MulIOp::create(
        b, loc, elements,
        arith::ConstantIndexOp::create(b, loc, type.getElementTypeBitWidth() / 8));
    address = arith::AddIOp::create(b, loc, address, bytes);
  }
  Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), address).getResult();
  return LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()), asInt);
}

void needScratch(ModuleOp module, int64_t bytes) {
  auto planned = module->getAttrOfType<IntegerAttr>(kScratchBytesAttr);
  if (bytes > (planned ? planned.getInt() : 0))
    module->setAttr(kScratchBytesAttr, Builder(module).getI64IntegerAttr(bytes));
}

} // namespace shardc::conversion_detail
