//===- SplatsToFills.cpp - splat tensor constants as fills ----------------===//
//
// See shardc-splats-to-fills in include/shardc/Optimize/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Optimize/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace shardc {
#define GEN_PASS_DEF_SPLATSTOFILLSPASS
#include "shardc/Optimize/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

/// The value every element of `v` has when `v` is a splat constant or a fill
/// with a constant.
Attribute splatValue(Value v) {
  if (auto constant = v.getDefiningOp<arith::ConstantOp>())
    if (auto splat = dyn_cast<SplatElementsAttr>(constant.getValue()))
      return splat.getSplatValue<Attribute>();
  if (auto fill = v.getDefiningOp<linalg::FillOp>()) {
    Attribute scalar;
    if (matchPattern(fill.getInputs()[0], m_Constant(&scalar)))
      return scalar;
  }
  return {};
}

/// shard-partition makes a sharded reduction's init `scf.if (first process)
/// init else neutral element`; when the init is the neutral element already
/// (a sum from zero) both branches yield the same splat, and the result is
/// that splat. Without this, the branches' different buffers give the init a
/// dynamic layout that no kernel takes.
void foldEqualSplatBranches(scf::IfOp op) {
  if (op.getElseRegion().empty())
    return;
  for (auto [i, result] : llvm::enumerate(op.getResults())) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    Attribute value = splatValue(op.thenYield().getOperand(i));
    if (!type || !value || value != splatValue(op.elseYield().getOperand(i)))
      continue;
    OpBuilder b(op);
    result.replaceAllUsesWith(
        arith::ConstantOp::create(b, op.getLoc(), SplatElementsAttr::get(type, value)));
  }
}

struct SplatsToFillsPass : public shardc::impl::SplatsToFillsPassBase<SplatsToFillsPass> {
  void runOnOperation() override {
    SmallVector<scf::IfOp> ifs;
    getOperation().walk([&](scf::IfOp op) { ifs.push_back(op); });
    for (scf::IfOp op : ifs) {
      foldEqualSplatBranches(op);
      if (isOpTriviallyDead(op))
        op->erase();
    }
    SmallVector<arith::ConstantOp> splats;
    getOperation().walk([&](arith::ConstantOp constant) {
      auto type = dyn_cast<RankedTensorType>(constant.getType());
      auto value = dyn_cast<SplatElementsAttr>(constant.getValue());
      if (type && type.hasStaticShape() && value)
        splats.push_back(constant);
    });
    // One fill per use, just before it: a use that writes into its operand
    // (an init) then writes into a buffer of its own instead of a copy.
    for (arith::ConstantOp constant : splats) {
      auto type = cast<RankedTensorType>(constant.getType());
      auto value = cast<SplatElementsAttr>(constant.getValue());
      for (OpOperand &use : llvm::make_early_inc_range(constant->getUses())) {
        OpBuilder b(use.getOwner());
        Location loc = constant.getLoc();
        Value scalar = arith::ConstantOp::create(b, loc, value.getSplatValue<TypedAttr>());
        Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
        use.set(linalg::FillOp::create(b, loc, scalar, empty).getResult(0));
      }
      constant.erase();
    }
  }
};

} // namespace
