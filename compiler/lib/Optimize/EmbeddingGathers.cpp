//===- EmbeddingGathers.cpp - one-hot contractions as gathers, scatter-adds -===//
//
// See shardc-embedding-gathers in include/shardc/Optimize/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "shardc/Optimize/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace shardc {
#define GEN_PASS_DEF_EMBEDDINGGATHERSPASS
#include "shardc/Optimize/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

/// The ids of a one-hot generic (MLIRGen's oneHot): f32 [ids' dims, classes] from i32
/// ids, 1 where the last index equals the id. Null for any other value.
Value oneHotIds(Value value) {
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumLoops() == 0 || generic.getNumParallelLoops() != generic.getNumLoops())
    return {};
  unsigned rank = generic.getNumLoops();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, generic.getContext());
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  Block &body = generic.getRegion().front();
  if (maps[1] != identity || maps[0] != identity.dropResult(rank - 1) ||
      body.getOperations().size() != 5)
    return {};
  auto toFloat = body.getTerminator()->getOperand(0).getDefiningOp<arith::UIToFPOp>();
  auto equal = toFloat ? toFloat.getIn().getDefiningOp<arith::CmpIOp>() : nullptr;
  if (!equal || equal.getPredicate() != arith::CmpIPredicate::eq)
    return {};
  auto isLastIndex = [&](Value v) {
    auto cast = v.getDefiningOp<arith::IndexCastOp>();
    auto index = cast ? cast.getIn().getDefiningOp<linalg::IndexOp>() : nullptr;
    return index && index.getDim() == rank - 1;
  };
  Value id = body.getArgument(0);
  if ((equal.getLhs() == id && isLastIndex(equal.getRhs())) ||
      (equal.getRhs() == id && isLastIndex(equal.getLhs())))
    return generic.getDpsInputs()[0];
  return {};
}

/// A contraction's operand that is a one-hot of ids, whole or sliced over its class
/// axis by partitioning (a vocabulary split over mesh axes).
struct OneHot {
  Value ids;
  shard::AllSliceOp slice; // null: every class
};

std::optional<OneHot> matchOneHot(Value value) {
  OneHot oneHot;
  if (auto slice = value.getDefiningOp<shard::AllSliceOp>()) {
    if (slice.getSliceAxis().getSExtValue() != slice.getResult().getType().getRank() - 1)
      return std::nullopt;
    oneHot.slice = slice;
    value = slice.getInput();
  }
  oneHot.ids = oneHotIds(value);
  if (!oneHot.ids)
    return std::nullopt;
  return oneHot;
}

/// The loop dimension of each result of `map`, or nothing when one is not a plain
/// dimension.
std::optional<SmallVector<unsigned>> loopDims(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults()) {
    auto dim = dyn_cast<AffineDimExpr>(e);
    if (!dim)
      return std::nullopt;
    dims.push_back(dim.getPosition());
  }
  return dims;
}

/// How a contraction's body folds in its product: out + a * b, or out + -(a * b)
/// (the cross-entropy's sum of labels times log-probabilities, negated).
enum class Fold { none, add, subtract };

Fold foldOf(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  auto add = body.getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return Fold::none;
  Value out = body.getArgument(2);
  Value term = add.getLhs() == out ? add.getRhs() : add.getRhs() == out ? add.getLhs() : Value();
  Fold fold = Fold::add;
  if (auto negate = term ? term.getDefiningOp<arith::NegFOp>() : nullptr) {
    term = negate.getOperand();
    fold = Fold::subtract;
  }
  auto product = term ? term.getDefiningOp<arith::MulFOp>() : nullptr;
  Value a = body.getArgument(0), b = body.getArgument(1);
  if (!product || body.getOperations().size() != (fold == Fold::add ? 3u : 4u) ||
      !((product.getLhs() == a && product.getRhs() == b) ||
        (product.getLhs() == b && product.getRhs() == a)))
    return Fold::none;
  return fold;
}

/// The first class this rank's one-hot holds, as i32: 0, or for a sliced one the
/// first element of the same slice of the classes [0, classes).
Value firstClass(OpBuilder &b, Location loc, OneHot oneHot) {
  if (!oneHot.slice)
    return arith::ConstantIntOp::create(b, loc, 0, 32);
  int64_t classes = oneHot.slice.getInput().getType().getShape().back();
  int64_t local = oneHot.slice.getResult().getType().getShape().back();
  auto i32 = b.getI32Type();
  Value empty = tensor::EmptyOp::create(b, loc, {classes}, i32);
  AffineMap identity = b.getMultiDimIdentityMap(1);
  auto iota = linalg::GenericOp::create(
      b, loc, TypeRange{empty.getType()}, ValueRange{}, ValueRange{empty},
      ArrayRef<AffineMap>{identity}, ArrayRef<utils::IteratorType>{utils::IteratorType::parallel},
      [](OpBuilder &n, Location l, ValueRange) {
        Value index = linalg::IndexOp::create(n, l, 0);
        linalg::YieldOp::create(
            n, l, ValueRange{arith::IndexCastOp::create(n, l, n.getI32Type(), index)});
      });
  auto mine =
      shard::AllSliceOp::create(b, loc, RankedTensorType::get({local}, i32), iota.getResult(0),
                                oneHot.slice.getGrid(), oneHot.slice.getGridAxes(), 0);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  return tensor::ExtractOp::create(b, loc, mine.getResult(), ValueRange{zero});
}

/// The row of this rank's classes that `id` picks, and whether it holds it.
std::pair<Value, Value> localRow(OpBuilder &b, Location loc, Value id, Value first,
                                 int64_t localClasses) {
  Value row = arith::SubIOp::create(b, loc, id, first);
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
  Value size = arith::ConstantIntOp::create(b, loc, localClasses, 32);
  Value notBelow = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, row, zero);
  Value below = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, row, size);
  Value held = arith::AndIOp::create(b, loc, notBelow, below);
  // A row out of range still indexes the table's first row, whose value is dropped.
  Value safe = arith::SelectOp::create(b, loc, held, row, zero);
  return {arith::IndexCastOp::create(b, loc, b.getIndexType(), safe), held};
}

/// The contraction `op` of a one-hot (operand 0) and a table, summing over the
/// classes: out[o] += table[..., id - first, ...] (or -= for Fold::subtract), an
/// element of the table per element of out (out unchanged for an id this rank's
/// classes do not hold). The sum had one nonzero term, so the result is the same.
LogicalResult rewriteAsGather(linalg::GenericOp op, Fold fold, const OneHot &oneHot,
                              ArrayRef<unsigned> oneHotDims, ArrayRef<unsigned> tableDims,
                              ArrayRef<unsigned> outDims) {
  unsigned classLoop = oneHotDims.back();
  // The classes' loop is the one reduction, and every other loop the table or the ids
  // read is one of the output's.
  auto inOut = [&](unsigned d) { return d == classLoop || llvm::is_contained(outDims, d); };
  if (op.getNumReductionLoops() != 1 ||
      op.getIteratorTypesArray()[classLoop] != utils::IteratorType::reduction ||
      !llvm::all_of(tableDims, inOut) || !llvm::all_of(oneHotDims, inOut))
    return failure();
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value table = op.getDpsInputs()[1];
  int64_t localClasses = cast<RankedTensorType>(op.getDpsInputs()[0].getType()).getShape().back();
  Value first = firstClass(b, loc, oneHot);
  // The new loops are the output's, in its order.
  SmallVector<int64_t> newLoop(op.getNumLoops(), -1);
  for (auto [i, d] : llvm::enumerate(outDims))
    newLoop[d] = i;
  SmallVector<AffineExpr> idsExprs;
  for (unsigned d : oneHotDims.drop_back())
    idsExprs.push_back(b.getAffineDimExpr(newLoop[d]));
  unsigned rank = outDims.size();
  AffineMap idsMap = AffineMap::get(rank, 0, idsExprs, b.getContext());
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  Value init = op.getDpsInits()[0];
  auto gather = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{oneHot.ids}, ValueRange{init},
      ArrayRef<AffineMap>{idsMap, identity},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &n, Location l, ValueRange args) {
        auto [row, held] = localRow(n, l, args[0], first, localClasses);
        SmallVector<Value> at;
        for (unsigned d : tableDims)
          at.push_back(d == classLoop ? row : linalg::IndexOp::create(n, l, newLoop[d]));
        Value term = tensor::ExtractOp::create(n, l, table, at);
        if (fold == Fold::subtract)
          term = arith::NegFOp::create(n, l, term);
        Value sum = arith::AddFOp::create(n, l, args[1], term);
        linalg::YieldOp::create(n, l,
                                ValueRange{arith::SelectOp::create(n, l, held, sum, args[1])});
      });
  op.getResult(0).replaceAllUsesWith(gather.getResult(0));
  op.erase();
  return success();
}

/// The slice of a tensor of `shape` indexed by loops `dims` that fixes the loops
/// `fixed` gives an index for (one element along them) and keeps every other
/// dimension whole.
tensor::ExtractSliceOp rowSlice(OpBuilder &b, Location loc, RankedTensorType rowType, Value tensor,
                                ArrayRef<unsigned> dims,
                                function_ref<OpFoldResult(unsigned)> fixed) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(tensor.getType()).getShape();
  SmallVector<OpFoldResult> offsets, sizes, strides(dims.size(), b.getIndexAttr(1));
  for (auto [i, d] : llvm::enumerate(dims)) {
    OpFoldResult offset = fixed(d);
    offsets.push_back(offset ? offset : b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(offset ? 1 : shape[i]));
  }
  return tensor::ExtractSliceOp::create(b, loc, rowType, tensor, offsets, sizes, strides);
}

/// The contraction `op` of a one-hot (operand 0) and `rows` summing over the ids:
/// out[..., id - first, ...] += rows[id's index, ...] for each id this rank's classes
/// hold, one row at a time in the order of the ids.
LogicalResult rewriteAsScatterAdd(linalg::GenericOp op, const OneHot &oneHot,
                                  ArrayRef<unsigned> oneHotDims, ArrayRef<unsigned> rowsDims,
                                  ArrayRef<unsigned> outDims) {
  unsigned classLoop = oneHotDims.back();
  ArrayRef<unsigned> idsLoops = oneHotDims.drop_back();
  // The ids' loops are the reductions, and rows and out hold the same other dims
  // in the same order.
  SmallVector<unsigned> rowsRest, outRest;
  for (unsigned d : rowsDims)
    if (!llvm::is_contained(idsLoops, d))
      rowsRest.push_back(d);
  for (unsigned d : outDims)
    if (d != classLoop)
      outRest.push_back(d);
  if (op.getNumReductionLoops() != idsLoops.size() || rowsRest != outRest ||
      !llvm::all_of(idsLoops,
                    [&](unsigned d) {
                      return op.getIteratorTypesArray()[d] == utils::IteratorType::reduction &&
                             llvm::is_contained(rowsDims, d);
                    }) ||
      !llvm::is_contained(outDims, classLoop))
    return failure();
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value rows = op.getDpsInputs()[1];
  auto outType = cast<RankedTensorType>(op.getResult(0).getType());
  int64_t localClasses = outType.getShape()[llvm::find(outDims, classLoop) - outDims.begin()];
  Value first = firstClass(b, loc, oneHot);
  SmallVector<int64_t> restShape;
  for (unsigned d : rowsRest)
    restShape.push_back(op.getStaticLoopRanges()[d]);
  auto rowType = RankedTensorType::get(restShape, outType.getElementType());

  // One loop per ids dim, the innermost adding a row.
  ArrayRef<int64_t> idsShape = cast<RankedTensorType>(oneHot.ids.getType()).getShape();
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t size : idsShape) {
    lbs.push_back(arith::ConstantIndexOp::create(b, loc, 0));
    ubs.push_back(arith::ConstantIndexOp::create(b, loc, size));
    steps.push_back(arith::ConstantIndexOp::create(b, loc, 1));
  }
  auto addRow = [&](OpBuilder &n, Location l, ValueRange at,
                    ValueRange carried) -> scf::ValueVector {
    Value sum = carried[0];
    Value id = tensor::ExtractOp::create(n, l, oneHot.ids, at);
    auto [row, held] = localRow(n, l, id, first, localClasses);
    auto add = scf::IfOp::create(
        n, l, held,
        [&](OpBuilder &t, Location tl) {
          tensor::ExtractSliceOp rowIn = rowSlice(t, tl, rowType, rows, rowsDims, [&](unsigned d) {
            auto it = llvm::find(idsLoops, d);
            return it == idsLoops.end() ? OpFoldResult() : OpFoldResult(at[it - idsLoops.begin()]);
          });
          tensor::ExtractSliceOp sumRow = rowSlice(t, tl, rowType, sum, outDims, [&](unsigned d) {
            return d == classLoop ? OpFoldResult(row) : OpFoldResult();
          });
          Value added = linalg::AddOp::create(t, tl, ValueRange{sumRow, rowIn}, ValueRange{sumRow})
                            .getResult(0);
          scf::YieldOp::create(t, tl,
                               ValueRange{tensor::InsertSliceOp::create(
                                   t, tl, added, sum, sumRow.getMixedOffsets(),
                                   sumRow.getMixedSizes(), sumRow.getMixedStrides())});
        },
        [&](OpBuilder &t, Location tl) { scf::YieldOp::create(t, tl, ValueRange{sum}); });
    return {add.getResult(0)};
  };
  scf::LoopNest nest =
      scf::buildLoopNest(b, loc, lbs, ubs, steps, ValueRange{op.getDpsInits()[0]}, addRow);
  op.getResult(0).replaceAllUsesWith(nest.results[0]);
  op.erase();
  return success();
}

/// `op` as a gather or a scatter-add when it contracts a one-hot with a table.
void rewrite(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      !getElementTypeOrSelf(op.getResult(0).getType()).isF32())
    return;
  Fold fold = foldOf(op);
  if (fold == Fold::none)
    return;
  std::optional<OneHot> oneHot = matchOneHot(op.getDpsInputs()[0]);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  std::optional<SmallVector<unsigned>> oneHotDims = loopDims(maps[0]),
                                       otherDims = loopDims(maps[1]), outDims = loopDims(maps[2]);
  if (!oneHot || !oneHotDims || !otherDims || !outDims)
    return;
  unsigned classLoop = oneHotDims->back();
  Operation *oneHotOp = op.getDpsInputs()[0].getDefiningOp();
  bool scatter = llvm::is_contained(*outDims, classLoop);
  if (scatter ? fold != Fold::add ||
                    failed(rewriteAsScatterAdd(op, *oneHot, *oneHotDims, *otherDims, *outDims))
              : failed(rewriteAsGather(op, fold, *oneHot, *oneHotDims, *otherDims, *outDims)))
    return;
  // The one-hot (and its slice), unless something else reads it.
  if (oneHotOp->use_empty()) {
    Operation *whole = oneHot->slice ? oneHot->slice.getInput().getDefiningOp() : nullptr;
    oneHotOp->erase();
    if (whole && whole->use_empty())
      whole->erase();
  }
}

struct EmbeddingGathersPass : public shardc::impl::EmbeddingGathersPassBase<EmbeddingGathersPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics)
      rewrite(op);
  }
};

} // namespace
