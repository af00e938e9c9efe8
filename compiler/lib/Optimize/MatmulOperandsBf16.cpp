//===- MatmulOperandsBf16.cpp - matrix products on bfloat16 operands -----===//
//
// See shardc-matmul-operands-bf16 in include/shardc/Optimize/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/IR/Attributes.h"
#include "shardc/Optimize/Passes.h"
#include "shardc/Support/MultiplyAccumulate.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace shardc {
#define GEN_PASS_DEF_MATMULOPERANDSBF16PASS
#include "shardc/Optimize/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

bool isF32Tensor(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getElementType().isF32();
}

/// An f32 matrix product on tensors: two inputs and an init, a body
/// `out + in0 * in1`, a reduction, each operand read through a permutation of
/// some of the loops (not a convolution's gradient, whose input is read at
/// sums of loops).
bool isF32Product(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() == 0 || !llvm::all_of(op->getOperands(), isF32Tensor))
    return false;
  return llvm::all_of(op.getIndexingMapsArray(),
                      [](AffineMap map) {
                        return map.isProjectedPermutation(/*allowZeroInResults=*/false);
                      }) &&
         shardc::isMultiplyAccumulateBody(*op.getBlock());
}

class Bf16Operands {
public:
  explicit Bf16Operands(MLIRContext *ctx) : rewriter(ctx) {}

  /// `op` as a product of its operands rounded to bf16, accumulated in f32.
  void round(linalg::LinalgOp op) {
    Location loc = op.getLoc();
    SmallVector<Value> inputs =
        llvm::map_to_vector(op.getDpsInputs(), [&](Value in) { return inBf16(in, op); });
    rewriter.setInsertionPoint(op);
    Type f32 = rewriter.getF32Type();
    auto product = linalg::GenericOp::create(
        rewriter, loc, op->getResultTypes(), inputs, op.getDpsInits(), op.getIndexingMapsArray(),
        op.getIteratorTypesArray(), [&](OpBuilder &b, Location at, ValueRange args) {
          Value x = arith::ExtFOp::create(b, at, f32, args[0]);
          Value y = arith::ExtFOp::create(b, at, f32, args[1]);
          Value sum = arith::AddFOp::create(b, at, args[2], arith::MulFOp::create(b, at, x, y));
          linalg::YieldOp::create(b, at, sum);
        });
    product->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    rewriter.replaceOp(op, product->getResults());
  }

private:
  /// `value` rounded to bf16 for `reader`: one rounding per value and block,
  /// before the block's first product that reads it (the walk meets it
  /// first), at that product's location, which shardc-fuse-elementwise reads
  /// to keep a scan layer's ops apart.
  Value inBf16(Value value, Operation *reader) {
    Value &rounded = roundings[{value, reader->getBlock()}];
    if (rounded)
      return rounded;
    rewriter.setInsertionPoint(reader);
    Location loc = reader->getLoc();
    auto type = cast<RankedTensorType>(value.getType());
    auto bf16Type = type.clone(rewriter.getBF16Type());
    Value init =
        tensor::EmptyOp::create(rewriter, loc, bf16Type.getShape(), bf16Type.getElementType());
    AffineMap identity = rewriter.getMultiDimIdentityMap(type.getRank());
    SmallVector<utils::IteratorType> parallel(type.getRank(), utils::IteratorType::parallel);
    rounded =
        linalg::GenericOp::create(
            rewriter, loc, bf16Type, value, init, ArrayRef{identity, identity}, parallel,
            [&](OpBuilder &b, Location at, ValueRange args) {
              linalg::YieldOp::create(
                  b, at, arith::TruncFOp::create(b, at, b.getBF16Type(), args[0]).getResult());
            })
            .getResult(0);
    return rounded;
  }

  IRRewriter rewriter;
  DenseMap<std::pair<Value, Block *>, Value> roundings;
};

struct MatmulOperandsBf16Pass : shardc::impl::MatmulOperandsBf16PassBase<MatmulOperandsBf16Pass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!shardc::precisionIsBf16(module, shardc::kMatmulPrecisionAttr))
      return;
    SmallVector<linalg::LinalgOp> products;
    module.walk([&](linalg::LinalgOp op) {
      if (isF32Product(op))
        products.push_back(op);
    });
    Bf16Operands operands(&getContext());
    for (linalg::LinalgOp op : products)
      operands.round(op);
  }
};

} // namespace
