//===- MLIRGen.cpp - the typed program as MLIR ----------------------------===//
//
// One emit function per kind of node, as in the Toy tutorial's MLIRGen. Every
// op is a linalg structured op (or a tensor reshape/pad) so that upstream's
// sharding propagation, or the project's models in lib/Shard, can place it:
//   elementwise ops        linalg.generic, broadcasting by axis names
//   matmul                 linalg.matmul (2-D) or a contraction linalg.generic
//   sum/mean/max/argmax    reduction linalg.generic
//   conv2d / avg_pool      tensor.pad (SAME) + linalg.conv_2d_nhwc_hwcf /
//                          linalg.pooling_nhwc_sum
//   flatten / reshape      tensor.collapse_shape / tensor.expand_shape
// Scalar constants are folded into the bodies of the generics that use them.
//
//===----------------------------------------------------------------------===//

#include "MLIRGenImpl.h"
#include "shardc/IR/LayerLocations.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Verifier.h"

#include <limits>
#include <set>
#include <tuple>

using namespace mlir;
using namespace shardc;

//===----------------------------------------------------------------------===//
// Locations, types, shardings
//===----------------------------------------------------------------------===//

Location MLIRGenImpl::loc(SMRange range) {
  llvm::SourceMgr &sm = diags.getSourceMgr();
  if (!range.Start.isValid())
    return b.getUnknownLoc();
  unsigned buffer = sm.FindBufferContainingLoc(range.Start);
  auto [line, col] = sm.getLineAndColumn(range.Start, buffer);
  return FileLineColLoc::get(b.getStringAttr(sm.getMemoryBuffer(buffer)->getBufferIdentifier()),
                             line, col);
}

Type MLIRGenImpl::elementType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return b.getF32Type();
  case DType::I32:
    return b.getI32Type();
  case DType::Bool:
    return b.getI1Type();
  }
  llvm_unreachable("unknown dtype");
}

RankedTensorType MLIRGenImpl::tensorType(const shardc::TensorType &type) {
  SmallVector<int64_t> shape;
  for (const Dim &d : type.dims)
    shape.push_back(d.size);
  return RankedTensorType::get(shape, elementType(type.dtype));
}

void MLIRGenImpl::error(SMRange range, const llvm::Twine &message) {
  diags.error(range, message);
  failed = true;
}

/// `shard.shard %value to (shard.sharding @mesh split_axes = ...)`.
/// Scalars stay unannotated: they are replicated, and shard-partition crashes
/// on a sharding with no split axes (`split_axes = []`, which the printer
/// also writes in a form the parser rejects).
Value MLIRGenImpl::annotate(Value value, const Sharding &sharding, Location at) {
  if (options.reference || cast<RankedTensorType>(value.getType()).getRank() == 0)
    return value;
  SmallVector<shard::GridAxesAttr> split;
  for (const DimSharding &dim : sharding.dims) {
    SmallVector<int16_t> axes;
    for (const std::string &axis : dim.meshAxes)
      axes.push_back(static_cast<int16_t>(program.mesh.indexOf(axis)));
    split.push_back(b.getDenseI16ArrayAttr(axes));
  }
  Value spec =
      shard::ShardingOp::create(b, at, FlatSymbolRefAttr::get(b.getContext(), kGridName), split);
  return shard::ShardOp::create(b, at, value, spec);
}

/// Each rule or override that split a parameter, input or constrained value over
/// a mesh axis, once per axis (kAxisRulesAttr).
ArrayAttr MLIRGenImpl::axisRules() {
  SmallVector<mlir::Attribute> rules;
  std::set<std::tuple<std::string, std::string, const char *>> seen;
  auto add = [&](const ShardedTensor &tensor) {
    for (const DimSharding &dim : tensor.sharding.dims)
      for (const std::string &axis : dim.meshAxes)
        if (dim.cause.isValid() &&
            seen.insert({axis, dim.reason, dim.cause.Start.getPointer()}).second)
          rules.push_back(b.getDictionaryAttr({b.getNamedAttr("axis", b.getStringAttr(axis)),
                                               b.getNamedAttr("rule", b.getStringAttr(dim.reason)),
                                               b.getNamedAttr("at", loc(dim.cause))}));
  };
  llvm::for_each(program.params, add);
  llvm::for_each(program.inputs, add);
  llvm::for_each(program.constraints, add);
  return b.getArrayAttr(rules);
}

ArrayAttr MLIRGenImpl::transfersAttr(const std::vector<PipelineTransfer> &transfers) {
  SmallVector<mlir::Attribute> fromTo;
  for (const PipelineTransfer &t : transfers)
    fromTo.push_back(b.getDenseI64ArrayAttr({t.from, t.to}));
  return b.getArrayAttr(fromTo);
}

DictionaryAttr MLIRGenImpl::pipelineAttr(const PipelineSteps &pipeline) {
  return b.getDictionaryAttr(
      {b.getNamedAttr("axis", b.getI64IntegerAttr(program.mesh.indexOf(pipeline.axis))),
       b.getNamedAttr("stages", b.getI64IntegerAttr(int64_t(pipeline.stages.size()))),
       b.getNamedAttr("schedule", b.getStringAttr(pipeline.schedule)),
       b.getNamedAttr("transfers", transfersAttr(pipeline.transfers))});
}

/// A sharding constraint holds for the value itself, so every user reads the
/// annotated value: earlier ones (the gradient of `v - w` uses one cotangent
/// twice, then constrains it) and later ones (the gradient reuses forward
/// values). A value with a second, unannotated use gets two shardings from
/// propagation, and shard-partition then fails without a message or crashes.
/// The annotation goes right after the definition so that it dominates them all.
Value MLIRGenImpl::constrain(Value value, const Sharding &sharding, Location at) {
  OpBuilder::InsertionGuard guard(b);
  if (Operation *definition = value.getDefiningOp())
    b.setInsertionPointAfter(definition);
  else
    b.setInsertionPointToStart(cast<BlockArgument>(value).getOwner());
  Value annotated = annotate(value, sharding, at);
  if (annotated != value)
    value.replaceAllUsesExcept(annotated, annotated.getDefiningOp());
  return annotated;
}

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

Value MLIRGenImpl::empty(ArrayRef<int64_t> shape, Type element, Location at) {
  return tensor::EmptyOp::create(b, at, shape, element);
}

/// A splat constant rather than tensor.empty + linalg.fill: shard-partition
/// crashes on the latter when cse has merged two empties. A 0-d one is a
/// linalg.generic that yields the value instead: 0-d values are never annotated
/// (see annotate), and upstream's arith.constant model fails shard-partition
/// without a message on a tensor constant that propagation left without a
/// sharding (a scalar parameter's constant gradient, a sum over no axes), where
/// linalg's model replicates.
Value MLIRGenImpl::filled(ArrayRef<int64_t> shape, Type element, TypedAttr value, Location at) {
  if (!shape.empty())
    return arith::ConstantOp::create(
        b, at, DenseElementsAttr::get(RankedTensorType::get(shape, element), value));
  return generic({}, {}, empty({}, element, at), AffineMap::get(b.getContext()), {}, at,
                 [&](OpBuilder &n, Location l, ValueRange) -> Value {
                   return arith::ConstantOp::create(n, l, value);
                 });
}

Value MLIRGenImpl::scalar(Type type, double value, Location at) {
  if (isa<FloatType>(type))
    return arith::ConstantOp::create(b, at, b.getFloatAttr(type, value));
  return arith::ConstantOp::create(b, at, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

Value MLIRGenImpl::generic(ValueRange inputs, ArrayRef<AffineMap> inputMaps, Value init,
                           AffineMap initMap, ArrayRef<utils::IteratorType> iterators, Location at,
                           BodyBuilder body) {
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(initMap);
  auto op =
      linalg::GenericOp::create(b, at, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
                                iterators, [&](OpBuilder &nested, Location l, ValueRange args) {
                                  linalg::YieldOp::create(nested, l, body(nested, l, args));
                                });
  return op.getResult(0);
}

/// Over the result's dims; each operand maps to the result's dims of its axis
/// names (sema checked that they are there, in order); scalar constants become
/// constants in the body.
Value MLIRGenImpl::elementwise(ArrayRef<unsigned> operands, ArrayRef<Value> values,
                               const shardc::TensorType &resultType, Location at,
                               BodyBuilder body) {
  const Graph &graph = steps.graph;
  RankedTensorType type = tensorType(resultType);
  unsigned rank = type.getRank();
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (unsigned id : operands) {
    const Node &operand = graph.nodes[id];
    if (operand.op == OpKind::constant)
      continue;
    SmallVector<AffineExpr> exprs;
    for (const Dim &d : operand.type.dims)
      exprs.push_back(b.getAffineDimExpr(resultType.axisIndex(d.axis)));
    maps.push_back(AffineMap::get(rank, 0, exprs, b.getContext()));
    inputs.push_back(values[id]);
  }
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  return generic(inputs, maps, empty(type.getShape(), type.getElementType(), at),
                 b.getMultiDimIdentityMap(rank), iterators, at,
                 [&](OpBuilder &nested, Location l, ValueRange args) {
                   SmallVector<Value> scalars;
                   unsigned next = 0;
                   for (unsigned id : operands) {
                     const Node &operand = graph.nodes[id];
                     if (operand.op == OpKind::constant)
                       scalars.push_back(scalar(elementType(operand.type.dtype),
                                                std::get<double>(operand.attrs.at("value")), l));
                     else
                       scalars.push_back(args[next++]);
                   }
                   return body(nested, l, scalars);
                 });
}

/// Same-shape elementwise map.
Value MLIRGenImpl::map(ValueRange inputs, Type resultElement, Location at, BodyBuilder body) {
  auto type = cast<RankedTensorType>(inputs.front().getType());
  unsigned rank = type.getRank();
  SmallVector<AffineMap> maps(inputs.size(), b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  return generic(inputs, maps, empty(type.getShape(), resultElement, at),
                 b.getMultiDimIdentityMap(rank), iterators, at, body);
}

/// Reduces same-shape `inputs` over the dims marked in `reduced`, starting
/// from `init`. The body gets the inputs' elements, then the accumulator.
Value MLIRGenImpl::reduce(ValueRange inputs, ArrayRef<bool> reduced, TypedAttr init, Location at,
                          BodyBuilder combine) {
  auto type = cast<RankedTensorType>(inputs.front().getType());
  unsigned rank = type.getRank();
  SmallVector<int64_t> shape;
  SmallVector<AffineExpr> kept;
  SmallVector<utils::IteratorType> iterators;
  for (unsigned d = 0; d < rank; ++d) {
    iterators.push_back(reduced[d] ? utils::IteratorType::reduction
                                   : utils::IteratorType::parallel);
    if (!reduced[d]) {
      shape.push_back(type.getDimSize(d));
      kept.push_back(b.getAffineDimExpr(d));
    }
  }
  SmallVector<AffineMap> maps(inputs.size(), b.getMultiDimIdentityMap(rank));
  return generic(inputs, maps, filled(shape, init.getType(), init, at),
                 AffineMap::get(rank, 0, kept, b.getContext()), iterators, at, combine);
}

/// The mask of x's last dim.
SmallVector<bool> MLIRGenImpl::lastAxis(Value x) {
  SmallVector<bool> reduced(cast<RankedTensorType>(x.getType()).getRank(), false);
  reduced.back() = true;
  return reduced;
}

/// The mask of `type`'s dims named in `over`.
SmallVector<bool> MLIRGenImpl::axesNamed(const shardc::TensorType &type,
                                         const std::vector<std::string> &over) {
  SmallVector<bool> reduced;
  for (const Dim &d : type.dims)
    reduced.push_back(llvm::is_contained(over, d.axis));
  return reduced;
}

/// body(full...[i...], reducedValue[i... without the reduced dims]) over the shape of `full`.
Value MLIRGenImpl::broadcastReduced(ValueRange full, Value reducedValue, ArrayRef<bool> reduced,
                                    Location at, BodyBuilder body) {
  auto type = cast<RankedTensorType>(full.front().getType());
  unsigned rank = type.getRank();
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  SmallVector<AffineExpr> kept;
  for (unsigned d = 0; d < rank; ++d)
    if (!reduced[d])
      kept.push_back(b.getAffineDimExpr(d));
  SmallVector<Value> inputs(full);
  inputs.push_back(reducedValue);
  SmallVector<AffineMap> maps(full.size(), identity);
  maps.push_back(AffineMap::get(rank, 0, kept, b.getContext()));
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  return generic(inputs, maps, empty(type.getShape(), type.getElementType(), at), identity,
                 iterators, at, body);
}

/// body(x[kept dims]) over the shape `to`; `missing` marks the dims of `to`
/// that x lacks.
Value MLIRGenImpl::broadcastTo(Value x, ArrayRef<bool> missing, RankedTensorType to, Location at,
                               BodyBuilder body) {
  unsigned rank = to.getRank();
  SmallVector<AffineExpr> kept;
  for (unsigned d = 0; d < rank; ++d)
    if (!missing[d])
      kept.push_back(b.getAffineDimExpr(d));
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  return generic({x}, {AffineMap::get(rank, 0, kept, b.getContext())},
                 empty(to.getShape(), to.getElementType(), at), b.getMultiDimIdentityMap(rank),
                 iterators, at, body);
}

Value MLIRGenImpl::sumOver(ValueRange inputs, ArrayRef<bool> reduced, Location at) {
  return reduce(inputs, reduced, b.getF32FloatAttr(0), at,
                [](OpBuilder &n, Location l, ValueRange a) -> Value {
                  Value term = a[0];
                  for (Value factor : a.drop_front().drop_back())
                    term = arith::MulFOp::create(n, l, term, factor);
                  return arith::AddFOp::create(n, l, a.back(), term);
                });
}

Value MLIRGenImpl::extremum(Value x, ArrayRef<bool> reduced, bool largest, Location at) {
  float init =
      largest ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  return reduce(x, reduced, b.getF32FloatAttr(init), at,
                [&](OpBuilder &n, Location l, ValueRange a) -> Value {
                  if (largest)
                    return arith::MaximumFOp::create(n, l, a[0], a[1]);
                  return arith::MinimumFOp::create(n, l, a[0], a[1]);
                });
}

Value MLIRGenImpl::geluTanhArgument(OpBuilder &n, Location at, Value x) {
  Value cube = arith::MulFOp::create(n, at, x, arith::MulFOp::create(n, at, x, x));
  Value inner = arith::AddFOp::create(
      n, at, x, arith::MulFOp::create(n, at, cube, scalar(n.getF32Type(), kGeluCubic, at)));
  return arith::MulFOp::create(n, at, inner, scalar(n.getF32Type(), kGeluScale, at));
}

Value MLIRGenImpl::padded(Value x, ArrayRef<int64_t> low, ArrayRef<int64_t> high, Location at) {
  if (llvm::all_of(low, [](int64_t v) { return v == 0; }) &&
      llvm::all_of(high, [](int64_t v) { return v == 0; }))
    return x;
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(type.getShape());
  for (size_t d = 0; d < shape.size(); ++d)
    shape[d] += low[d] + high[d];
  auto result = RankedTensorType::get(shape, type.getElementType());
  return tensor::PadOp::create(b, at, result, x, getAsIndexOpFoldResult(b.getContext(), low),
                               getAsIndexOpFoldResult(b.getContext(), high),
                               scalar(type.getElementType(), 0, at));
}

//===----------------------------------------------------------------------===//
// Operations
//===----------------------------------------------------------------------===//

/// The map from `loops` loops to the listed ones.
AffineMap MLIRGenImpl::loopMap(ArrayRef<unsigned> dims, unsigned loops) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : dims)
    exprs.push_back(b.getAffineDimExpr(d));
  return AffineMap::get(loops, 0, exprs, b.getContext());
}

/// sum(lhs * rhs) into a zero tensor of type `result`. The loops are the result's
/// dims (in order), then the summed ones.
Value MLIRGenImpl::contract(Value lhs, Value rhs, ArrayRef<AffineMap> maps, RankedTensorType result,
                            Location at) {
  unsigned loops = maps.front().getNumDims(), rank = result.getRank();
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  iterators.append(loops - rank, utils::IteratorType::reduction);
  Value init = filled(result.getShape(), b.getF32Type(), b.getF32FloatAttr(0), at);
  return generic({lhs, rhs}, maps, init,
                 loopMap(llvm::to_vector(llvm::seq<unsigned>(0, rank)), loops), iterators, at,
                 [&](OpBuilder &n, Location l, ValueRange a) -> Value {
                   Value product = arith::MulFOp::create(n, l, a[0], a[1]);
                   return arith::AddFOp::create(n, l, a[2], product);
                 });
}

/// f32 [ids' dims, classes]: 1 where the last index equals the id, else 0. Its
/// linalg.index is globalized by the sharding models, so a split class axis keeps
/// global classes; the embedding and its gradient are contractions with it, which the
/// sharding models split like any other: a table split over vocab is Megatron's
/// vocab-parallel embedding. After partitioning, shardc-embedding-gathers makes them a
/// gather and a scatter-add.
Value MLIRGenImpl::oneHot(Value ids, int64_t classes, Location at) {
  auto idsType = cast<RankedTensorType>(ids.getType());
  SmallVector<int64_t> shape(idsType.getShape());
  shape.push_back(classes);
  unsigned rank = shape.size();
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  return generic({ids}, {identity.dropResult(rank - 1)}, empty(shape, b.getF32Type(), at), identity,
                 iterators, at, [&](OpBuilder &n, Location l, ValueRange a) -> Value {
                   Value index = linalg::IndexOp::create(n, l, rank - 1);
                   Value asI32 = arith::IndexCastOp::create(n, l, n.getI32Type(), index);
                   Value hit;
                   if (isa<FloatType>(a[0].getType()))
                     hit = arith::CmpFOp::create(
                         n, l, arith::CmpFPredicate::OEQ, a[0],
                         arith::SIToFPOp::create(n, l, a[0].getType(), asI32));
                   else
                     hit = arith::CmpIOp::create(n, l, arith::CmpIPredicate::eq, a[0], asI32);
                   return arith::UIToFPOp::create(n, l, n.getF32Type(), hit);
                 });
}

/// `a @ b` contracts the last dim of a with the first of b: loops are a's
/// free dims, b's free dims, then the contracted one.
Value MLIRGenImpl::matmul(Value lhs, Value rhs, RankedTensorType result, Location at) {
  auto lt = cast<RankedTensorType>(lhs.getType()), rt = cast<RankedTensorType>(rhs.getType());
  if (lt.getRank() == 2 && rt.getRank() == 2) {
    Value init = filled(result.getShape(), b.getF32Type(), b.getF32FloatAttr(0), at);
    return linalg::MatmulOp::create(b, at, ValueRange{lhs, rhs}, ValueRange{init}).getResult(0);
  }
  unsigned lFree = lt.getRank() - 1, rFree = rt.getRank() - 1, k = lFree + rFree;
  SmallVector<unsigned> lDims = llvm::to_vector(llvm::seq<unsigned>(0, lFree)), rDims{k};
  lDims.push_back(k);
  llvm::append_range(rDims, llvm::seq<unsigned>(lFree, k));
  return contract(lhs, rhs, {loopMap(lDims, k + 1), loopMap(rDims, k + 1)}, result, at);
}

/// Sums lhs * rhs into `result` by axis names: loops are the result's axes, then the
/// operands' axes it lacks (reduced), in the order the operands name them.
Value MLIRGenImpl::contractByName(Value lhs, Value rhs, const shardc::TensorType &lhsType,
                                  const shardc::TensorType &rhsType,
                                  const shardc::TensorType &resultType, Location at) {
  std::vector<std::string> loops;
  for (const shardc::TensorType *type : {&resultType, &lhsType, &rhsType})
    for (const Dim &d : type->dims)
      if (!llvm::is_contained(loops, d.axis))
        loops.push_back(d.axis);
  auto dimsOf = [&](const shardc::TensorType &type) {
    SmallVector<unsigned> dims;
    for (const Dim &d : type.dims)
      dims.push_back(unsigned(llvm::find(loops, d.axis) - loops.begin()));
    return loopMap(dims, loops.size());
  };
  return contract(lhs, rhs, {dimsOf(lhsType), dimsOf(rhsType)}, tensorType(resultType), at);
}

/// Just above ln(FLT_MIN): exp's smallest normal result.
constexpr float kSmallestNormalExp = -87.33f;

/// log_softmax (or softmax) over the `reduced` dims, stabilised by the maximum.
Value MLIRGenImpl::logSoftmax(Value x, ArrayRef<bool> reduced, Location at, bool softmax) {
  Type f32 = b.getF32Type();
  Value max = extremum(x, reduced, /*largest=*/true, at);
  Value shifted =
      broadcastReduced(x, max, reduced, at, [](OpBuilder &n, Location l, ValueRange a) -> Value {
        return arith::SubFOp::create(n, l, a[0], a[1]);
      });
  // exp of what lies more than ln(FLT_MIN) below the maximum (a causal mask's
  // -inf) is 0, not taken: glibc's vector expf computes such lanes one by one
  // in scalar code (half of every attention row; 3 % of W4's step).
  Value exps = map(shifted, f32, at, [](OpBuilder &n, Location l, ValueRange a) -> Value {
    auto constant = [&](float v) { return arith::ConstantOp::create(n, l, n.getF32FloatAttr(v)); };
    Value smallest = constant(kSmallestNormalExp);
    Value underflows = arith::CmpFOp::create(n, l, arith::CmpFPredicate::OLT, a[0], smallest);
    Value exp = math::ExpOp::create(n, l, arith::MaximumFOp::create(n, l, a[0], smallest));
    return arith::SelectOp::create(n, l, underflows, constant(0.0f), exp);
  });
  Value total = sumOver(exps, reduced, at);
  if (softmax)
    return broadcastReduced(exps, total, reduced, at,
                            [](OpBuilder &n, Location l, ValueRange a) -> Value {
                              return arith::DivFOp::create(n, l, a[0], a[1]);
                            });
  return broadcastReduced(
      shifted, total, reduced, at, [](OpBuilder &n, Location l, ValueRange a) -> Value {
        return arith::SubFOp::create(n, l, a[0], math::LogOp::create(n, l, a[1]));
      });
}

/// The index of the first maximum along the last dim: max, then the least
/// index holding it (both are reductions upstream knows how to split).
Value MLIRGenImpl::argmax(Value x, Location at) {
  Value max = extremum(x, lastAxis(x), /*largest=*/true, at);
  auto type = cast<RankedTensorType>(x.getType());
  unsigned rank = type.getRank();
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  SmallVector<utils::IteratorType> iterators(rank - 1, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  Type i32 = b.getI32Type();
  Value init = filled(type.getShape().drop_back(), i32,
                      b.getI32IntegerAttr(std::numeric_limits<int32_t>::max()), at);
  return generic({x, max}, {identity, identity.dropResult(rank - 1)}, init,
                 identity.dropResult(rank - 1), iterators, at,
                 [&](OpBuilder &n, Location l, ValueRange a) -> Value {
                   Value index = linalg::IndexOp::create(n, l, rank - 1);
                   Value asI32 = arith::IndexCastOp::create(n, l, i32, index);
                   Value isMax = arith::CmpFOp::create(n, l, arith::CmpFPredicate::OEQ, a[0], a[1]);
                   Value none = arith::ConstantOp::create(
                       n, l, n.getI32IntegerAttr(std::numeric_limits<int32_t>::max()));
                   Value candidate = arith::SelectOp::create(n, l, isMax, asI32, none);
                   return arith::MinSIOp::create(n, l, a[2], candidate);
                 });
}

/// The running sum along `over`: loops are x's dims, then j along `over`, summed
/// where j is at or before the result's position (after, for `reverse`; strictly,
/// for `exclusive`).
Value MLIRGenImpl::cumsum(Value x, const Node &node, Location at) {
  auto type = cast<RankedTensorType>(x.getType());
  unsigned rank = type.getRank();
  unsigned over = node.type.axisIndex(attr<std::string>(node, "over"));
  bool exclusive = attr<int64_t>(node, "exclusive"), reverse = attr<int64_t>(node, "reverse");
  SmallVector<unsigned> xDims = llvm::to_vector(llvm::seq<unsigned>(0, rank));
  xDims[over] = rank;
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  using arith::CmpIPredicate;
  CmpIPredicate summed = reverse ? (exclusive ? CmpIPredicate::ugt : CmpIPredicate::uge)
                                 : (exclusive ? CmpIPredicate::ult : CmpIPredicate::ule);
  return generic({x}, {loopMap(xDims, rank + 1)},
                 filled(type.getShape(), b.getF32Type(), b.getF32FloatAttr(0), at),
                 loopMap(llvm::to_vector(llvm::seq<unsigned>(0, rank)), rank + 1), iterators, at,
                 [&](OpBuilder &n, Location l, ValueRange a) -> Value {
                   Value j = linalg::IndexOp::create(n, l, rank);
                   Value i = linalg::IndexOp::create(n, l, over);
                   Value keep = arith::CmpIOp::create(n, l, summed, j, i);
                   Value term =
                       arith::SelectOp::create(n, l, keep, a[0], scalar(n.getF32Type(), 0, l));
                   return arith::AddFOp::create(n, l, a[1], term);
                 });
}

/// f32 [x's dims, into]: 1 where x's element is the c-th largest along `over` (c the
/// index along `into`; ties: the lower index first), else 0. Each element's place is
/// the count of elements along `over` that come before it: larger, or equal at a lower
/// index (a reduction over a second loop along `over`, small for a router's experts).
Value MLIRGenImpl::topKMask(Value x, const Node &node, Location at) {
  auto type = cast<RankedTensorType>(x.getType());
  unsigned rank = type.getRank();
  const Node &input = steps.graph.nodes[node.operands[0]];
  unsigned over = input.type.axisIndex(attr<std::string>(node, "over"));
  int64_t k = attr<int64_t>(node, "k");
  SmallVector<unsigned> own = llvm::to_vector(llvm::seq<unsigned>(0, rank)), other = own;
  other[over] = rank;
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  Value place = generic(
      {x, x}, {loopMap(own, rank + 1), loopMap(other, rank + 1)},
      filled(type.getShape(), b.getF32Type(), b.getF32FloatAttr(0), at), loopMap(own, rank + 1),
      iterators, at, [&](OpBuilder &n, Location l, ValueRange a) -> Value {
        using arith::CmpFPredicate;
        Value larger = arith::CmpFOp::create(n, l, CmpFPredicate::OGT, a[1], a[0]);
        Value equal = arith::CmpFOp::create(n, l, CmpFPredicate::OEQ, a[1], a[0]);
        Value lower = arith::CmpIOp::create(n, l, arith::CmpIPredicate::ult,
                                            linalg::IndexOp::create(n, l, rank),
                                            linalg::IndexOp::create(n, l, over));
        Value before =
            arith::OrIOp::create(n, l, larger, arith::AndIOp::create(n, l, equal, lower));
        return arith::AddFOp::create(n, l, a[2],
                                     arith::UIToFPOp::create(n, l, n.getF32Type(), before));
      });
  SmallVector<int64_t> shape(type.getShape());
  shape.push_back(k);
  SmallVector<utils::IteratorType> parallel(rank + 1, utils::IteratorType::parallel);
  return generic({place}, {loopMap(own, rank + 1)}, empty(shape, b.getF32Type(), at),
                 b.getMultiDimIdentityMap(rank + 1), parallel, at,
                 [&](OpBuilder &n, Location l, ValueRange a) -> Value {
                   Value c = arith::IndexCastOp::create(n, l, n.getI32Type(),
                                                        linalg::IndexOp::create(n, l, rank));
                   Value chosen =
                       arith::CmpFOp::create(n, l, arith::CmpFPredicate::OEQ, a[0],
                                             arith::SIToFPOp::create(n, l, n.getF32Type(), c));
                   return arith::UIToFPOp::create(n, l, n.getF32Type(), chosen);
                 });
}

/// top_k's values (a contraction of x with its mask over `over`) or top_k_indices'
/// indices (the mask's index along `over` where it is 1).
Value MLIRGenImpl::topK(Value x, const shardc::TensorType &xType, const Node &node, Location at) {
  const std::string &over = attr<std::string>(node, "over");
  shardc::TensorType maskType = xType;
  maskType.dims.push_back(Dim{attr<std::string>(node, "into"), attr<int64_t>(node, "k")});
  Value mask = topKMask(x, node, at);
  if (node.op == OpKind::top_k)
    return contractByName(mask, x, maskType, xType, node.type, at);
  // Loops: the result's axes, then `over`.
  unsigned rank = node.type.dims.size();
  SmallVector<unsigned> maskDims;
  for (const Dim &d : maskType.dims)
    maskDims.push_back(d.axis == over ? rank : unsigned(node.type.axisIndex(d.axis)));
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  RankedTensorType result = tensorType(node.type);
  return generic({mask}, {loopMap(maskDims, rank + 1)},
                 filled(result.getShape(), b.getI32Type(), b.getI32IntegerAttr(0), at),
                 loopMap(llvm::to_vector(llvm::seq<unsigned>(0, rank)), rank + 1), iterators, at,
                 [&](OpBuilder &n, Location l, ValueRange a) -> Value {
                   Value index = arith::IndexCastOp::create(n, l, n.getI32Type(),
                                                            linalg::IndexOp::create(n, l, rank));
                   Value chosen = arith::CmpFOp::create(n, l, arith::CmpFPredicate::OGT, a[0],
                                                        scalar(n.getF32Type(), 0.5, l));
                   Value term =
                       arith::SelectOp::create(n, l, chosen, index, scalar(n.getI32Type(), 0, l));
                   return arith::AddIOp::create(n, l, a[1], term);
                 });
}

/// Zero padding of NHWC height and width as XLA's SAME: the output has
/// ceil(in / stride) positions; the extra padding goes to the high side.
/// VALID: none.
std::array<std::pair<int64_t, int64_t>, 2> MLIRGenImpl::samePadding(RankedTensorType x,
                                                                    std::array<int64_t, 2> window,
                                                                    int64_t stride, bool same) {
  std::array<std::pair<int64_t, int64_t>, 2> pads{};
  if (!same)
    return pads;
  for (int d : {1, 2}) {
    int64_t size = x.getDimSize(d), out = llvm::divideCeil(size, stride);
    int64_t total = std::max<int64_t>((out - 1) * stride + window[d - 1] - size, 0);
    pads[d - 1] = {total / 2, total - total / 2};
  }
  return pads;
}

Value MLIRGenImpl::padSpatial(Value x, std::array<std::pair<int64_t, int64_t>, 2> pads,
                              Location at) {
  return padded(x, {0, pads[0].first, pads[1].first, 0}, {0, pads[0].second, pads[1].second, 0},
                at);
}

Value MLIRGenImpl::conv2d(Value x, Value w, const Node &node, Location at) {
  int64_t stride = std::get<int64_t>(node.attrs.at("stride"));
  auto wType = cast<RankedTensorType>(w.getType());
  bool same = std::get<std::string>(node.attrs.at("padding")) == "SAME";
  x = padSpatial(x,
                 samePadding(cast<RankedTensorType>(x.getType()),
                             {wType.getDimSize(0), wType.getDimSize(1)}, stride, same),
                 at);
  RankedTensorType out = tensorType(node.type);
  Value init = filled(out.getShape(), b.getF32Type(), b.getF32FloatAttr(0), at);
  auto conv =
      linalg::Conv2DNhwcHwcfOp::create(b, at, TypeRange{out}, ValueRange{x, w}, ValueRange{init});
  conv.setStridesAttr(b.getI64TensorAttr({stride, stride}));
  conv.setDilationsAttr(b.getI64TensorAttr({1, 1}));
  return conv.getResult(0);
}

/// Sum over each window, then divided by the window's size (padding counts,
/// as Flax's avg_pool with count_include_pad).
Value MLIRGenImpl::avgPool(Value x, const Node &node, Location at) {
  int64_t window = std::get<int64_t>(node.attrs.at("window"));
  int64_t stride = std::get<int64_t>(node.attrs.at("stride"));
  bool same = std::get<std::string>(node.attrs.at("padding")) == "SAME";
  x = padSpatial(
      x, samePadding(cast<RankedTensorType>(x.getType()), {window, window}, stride, same), at);
  RankedTensorType out = tensorType(node.type);
  Value init = filled(out.getShape(), b.getF32Type(), b.getF32FloatAttr(0), at);
  Value windowShape = empty({window, window}, b.getF32Type(), at);
  auto pool = linalg::PoolingNhwcSumOp::create(b, at, TypeRange{out}, ValueRange{x, windowShape},
                                               ValueRange{init});
  pool.setStridesAttr(b.getI64TensorAttr({stride, stride}));
  pool.setDilationsAttr(b.getI64TensorAttr({1, 1}));
  float scale = 1.0f / static_cast<float>(window * window);
  return map(pool.getResult(0), b.getF32Type(), at,
             [&](OpBuilder &n, Location l, ValueRange a) -> Value {
               return arith::MulFOp::create(n, l, a[0], scalar(n.getF32Type(), scale, l));
             });
}

/// A collapse or an expand when one is enough; else both, through 1-D.
Value MLIRGenImpl::reshapeTo(Value x, RankedTensorType to, Location at) {
  auto from = cast<RankedTensorType>(x.getType());
  if (from == to)
    return x;
  if (from.getRank() > to.getRank())
    if (auto groups = getReassociationIndicesForCollapse(from.getShape(), to.getShape()))
      return tensor::CollapseShapeOp::create(b, at, to, x, *groups);
  if (from.getRank() < to.getRank())
    if (auto groups = getReassociationIndicesForCollapse(to.getShape(), from.getShape()))
      return tensor::ExpandShapeOp::create(b, at, to, x, *groups);
  auto flat = RankedTensorType::get({from.getNumElements()}, from.getElementType());
  return reshapeTo(reshapeTo(x, flat, at), to, at);
}

//===----------------------------------------------------------------------===//
// Nodes
//===----------------------------------------------------------------------===//

/// A node's value; a constant is made where it is first used as a tensor
/// (elementwise ops fold scalar constants into their bodies instead, and
/// shard-partition fails on an unused, unannotated 0-d constant).
Value MLIRGenImpl::valueOf(unsigned id, std::vector<Value> &values) {
  const Node &node = steps.graph.nodes[id];
  if (!values[id] && node.op == OpKind::constant)
    values[id] = filled(tensorType(node.type).getShape(), b.getF32Type(),
                        b.getFloatAttr(b.getF32Type(), std::get<double>(node.attrs.at("value"))),
                        loc(node.loc));
  return values[id];
}

Value MLIRGenImpl::emitNode(const Node &node, std::vector<Value> &values) {
  const Graph &graph = steps.graph;
  Location at = loc(node.loc);
  auto operand = [&](unsigned i) { return valueOf(node.operands[i], values); };
  auto each = [&](BodyBuilder body) {
    return elementwise(node.operands, values, node.type, at, body);
  };
  bool isFloat =
      graph.nodes[node.operands.empty() ? node.id : node.operands[0]].type.dtype == DType::F32;
  // Elementwise arithmetic and comparisons, on floats or integers.
  auto binary = [&](auto floatOp, auto intOp) {
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      if (isFloat)
        return decltype(floatOp)::create(n, l, a[0], a[1]);
      return decltype(intOp)::create(n, l, a[0], a[1]);
    });
  };
  auto compare = [&](arith::CmpFPredicate fp, arith::CmpIPredicate ip) {
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      if (isFloat)
        return arith::CmpFOp::create(n, l, fp, a[0], a[1]);
      return arith::CmpIOp::create(n, l, ip, a[0], a[1]);
    });
  };
  using arith::CmpFPredicate, arith::CmpIPredicate;

  switch (node.op) {
  case OpKind::sharding_constraint:
    return values[node.operands[0]] =
               constrain(operand(0), program.constraints[node.constraint].sharding, at);
  case OpKind::add:
    return binary(arith::AddFOp(), arith::AddIOp());
  case OpKind::sub:
    return binary(arith::SubFOp(), arith::SubIOp());
  case OpKind::mul:
    return binary(arith::MulFOp(), arith::MulIOp());
  case OpKind::div:
    return binary(arith::DivFOp(), arith::DivSIOp());
  case OpKind::eq:
    return compare(CmpFPredicate::OEQ, CmpIPredicate::eq);
  case OpKind::ne:
    return compare(CmpFPredicate::UNE, CmpIPredicate::ne);
  case OpKind::lt:
    return compare(CmpFPredicate::OLT, CmpIPredicate::slt);
  case OpKind::le:
    return compare(CmpFPredicate::OLE, CmpIPredicate::sle);
  case OpKind::gt:
    return compare(CmpFPredicate::OGT, CmpIPredicate::sgt);
  case OpKind::ge:
    return compare(CmpFPredicate::OGE, CmpIPredicate::sge);
  case OpKind::neg:
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      if (isFloat)
        return arith::NegFOp::create(n, l, a[0]);
      return arith::SubIOp::create(n, l, scalar(a[0].getType(), 0, l), a[0]);
    });
  case OpKind::relu:
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      return arith::MaximumFOp::create(n, l, a[0], scalar(n.getF32Type(), 0, l));
    });
  case OpKind::exp:
    return each([](OpBuilder &n, Location l, ValueRange a) -> Value {
      return math::ExpOp::create(n, l, a[0]);
    });
  case OpKind::log:
    return each([](OpBuilder &n, Location l, ValueRange a) -> Value {
      return math::LogOp::create(n, l, a[0]);
    });
  case OpKind::tanh:
    return each([](OpBuilder &n, Location l, ValueRange a) -> Value {
      return math::TanhOp::create(n, l, a[0]);
    });
  case OpKind::sigmoid:
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      Value one = scalar(n.getF32Type(), 1, l);
      Value e = math::ExpOp::create(n, l, arith::NegFOp::create(n, l, a[0]));
      return arith::DivFOp::create(n, l, one, arith::AddFOp::create(n, l, one, e));
    });
  case OpKind::sqrt:
    return each([](OpBuilder &n, Location l, ValueRange a) -> Value {
      return math::SqrtOp::create(n, l, a[0]);
    });
  case OpKind::rsqrt: // as 1 / sqrt: math.rsqrt lowers to a libm rsqrtf that glibc lacks
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      return arith::DivFOp::create(n, l, scalar(n.getF32Type(), 1, l),
                                   math::SqrtOp::create(n, l, a[0]));
    });
  case OpKind::gelu:
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      Value half = arith::MulFOp::create(n, l, a[0], scalar(n.getF32Type(), 0.5, l));
      Value t = math::TanhOp::create(n, l, geluTanhArgument(n, l, a[0]));
      return arith::MulFOp::create(n, l, half,
                                   arith::AddFOp::create(n, l, t, scalar(n.getF32Type(), 1, l)));
    });
  case OpKind::matmul:
    return matmul(operand(0), operand(1), tensorType(node.type), at);
  case OpKind::contract:
    return contractByName(operand(0), operand(1), graph.nodes[node.operands[0]].type,
                          graph.nodes[node.operands[1]].type, node.type, at);
  case OpKind::rename: // names live in sema's types only
    return operand(0);
  case OpKind::embedding: { // loops: ids' dims, the table's other dims, then vocab
    unsigned idsRank = graph.nodes[node.operands[0]].type.dims.size();
    unsigned rank = node.type.dims.size(), vocab = rank;
    SmallVector<unsigned> oneHotDims = llvm::to_vector(llvm::seq<unsigned>(0, idsRank));
    oneHotDims.push_back(vocab);
    SmallVector<unsigned> tableDims{vocab};
    llvm::append_range(tableDims, llvm::seq<unsigned>(idsRank, rank));
    Value table = operand(1);
    int64_t classes = cast<RankedTensorType>(table.getType()).getShape()[0];
    return contract(oneHot(operand(0), classes, at), table,
                    {loopMap(oneHotDims, rank + 1), loopMap(tableDims, rank + 1)},
                    tensorType(node.type), at);
  }
  case OpKind::causal_mask: {
    int64_t query = node.type.axisIndex(std::get<std::string>(node.attrs.at("query")));
    int64_t key = node.type.axisIndex(std::get<std::string>(node.attrs.at("key")));
    double fill = std::get<double>(node.attrs.at("fill"));
    // decode_step's: the query's position is its index plus operand 1.
    const bool offset = node.operands.size() == 2;
    return each([&](OpBuilder &n, Location l, ValueRange a) -> Value {
      Value at = linalg::IndexOp::create(n, l, query);
      if (offset)
        at = arith::AddIOp::create(n, l, at,
                                   arith::IndexCastOp::create(n, l, n.getIndexType(), a[1]));
      Value kept = arith::CmpIOp::create(n, l, arith::CmpIPredicate::sle,
                                         linalg::IndexOp::create(n, l, key), at);
      return arith::SelectOp::create(n, l, kept, a[0], scalar(n.getF32Type(), fill, l));
    });
  }
  case OpKind::log_softmax:
  case OpKind::softmax:
    return logSoftmax(operand(0),
                      axesNamed(node.type, attr<std::vector<std::string>>(node, "over")), at,
                      node.op == OpKind::softmax);
  case OpKind::softmax_cross_entropy: {
    // -sum(labels * log_softmax(logits)) over the class dim, accumulated by
    // addf of the negated term (exactly `acc - term`): an add is a combiner
    // the partitioner can split over ranks, a sub is not.
    Value logProbs = logSoftmax(operand(0), lastAxis(operand(0)), at, false);
    return reduce({operand(1), logProbs}, lastAxis(logProbs), b.getF32FloatAttr(0), at,
                  [](OpBuilder &n, Location l, ValueRange a) -> Value {
                    Value term = arith::MulFOp::create(n, l, a[0], a[1]);
                    return arith::AddFOp::create(n, l, a[2], arith::NegFOp::create(n, l, term));
                  });
  }
  case OpKind::one_hot:
    return oneHot(operand(0), node.type.dims.back().size, at);
  case OpKind::sum:
  case OpKind::mean: {
    const Node &input = graph.nodes[node.operands[0]];
    const auto &over = std::get<std::vector<std::string>>(node.attrs.at("over"));
    SmallVector<bool> reduced;
    int64_t count = 1;
    for (const Dim &d : input.type.dims) {
      reduced.push_back(llvm::is_contained(over, d.axis));
      if (reduced.back())
        count *= d.size;
    }
    Type result = elementType(node.type.dtype);
    DType inputType = input.type.dtype;
    Value total = reduce(operand(0), reduced, cast<TypedAttr>(b.getZeroAttr(result)), at,
                         [&](OpBuilder &n, Location l, ValueRange a) -> Value {
                           Value x = a[0];
                           if (inputType == DType::Bool)
                             x = arith::UIToFPOp::create(n, l, result, x);
                           if (isa<FloatType>(result))
                             return arith::AddFOp::create(n, l, a[1], x);
                           return arith::AddIOp::create(n, l, a[1], x);
                         });
    if (node.op == OpKind::sum)
      return total;
    float scale = 1.0f / static_cast<float>(count);
    return map(total, result, at, [&](OpBuilder &n, Location l, ValueRange a) -> Value {
      return arith::MulFOp::create(n, l, a[0], scalar(n.getF32Type(), scale, l));
    });
  }
  case OpKind::max:
  case OpKind::min:
    return extremum(
        operand(0),
        axesNamed(graph.nodes[node.operands[0]].type, attr<std::vector<std::string>>(node, "over")),
        node.op == OpKind::max, at);
  case OpKind::argmax:
    return argmax(operand(0), at);
  case OpKind::cumsum:
    return cumsum(operand(0), node, at);
  case OpKind::top_k:
  case OpKind::top_k_indices:
    return topK(operand(0), graph.nodes[node.operands[0]].type, node, at);
  case OpKind::where:
    return each([](OpBuilder &n, Location l, ValueRange a) -> Value {
      return arith::SelectOp::create(n, l, a[0], a[1], a[2]);
    });
  case OpKind::transpose: // elementwise maps its operand's axes by name
    return each([](OpBuilder &, Location, ValueRange a) -> Value { return a[0]; });
  case OpKind::conv2d:
    return conv2d(operand(0), operand(1), node, at);
  case OpKind::avg_pool:
    return avgPool(operand(0), node, at);
  case OpKind::flatten:
  case OpKind::reshape:
    return reshapeTo(operand(0), tensorType(node.type), at);
  case OpKind::to_f32:
#define SHARDC_GRADIENT_OP(NAME, ARITY, ATTRIBUTES) case OpKind::NAME:
#define SHARDC_UPDATE_OP(NAME, ARITY, ATTRIBUTES) case OpKind::NAME:
#include "shardc/Sema/Builtins.def"
    return emitGradientNode(node, values);
    // Arguments and constants are made by emitFunction and valueOf; flattening
    // removed scans and dropouts; sema makes a cache a rename.
#define SHARDC_VALUE_OP(NAME, ATTRIBUTES) case OpKind::NAME:
#include "shardc/Sema/Builtins.def"
  case OpKind::cache:
  case OpKind::scan:
  case OpKind::dropout:
    break;
  }
  error(node.loc, "internal error: code generation got a '" + opName(node.op) + "' node");
  return {};
}

static StringRef roleName(ArgRole role) {
  switch (role) {
  case ArgRole::parameter:
    return kParameterRole;
  case ArgRole::optimizer_state:
    return kOptimizerStateRole;
  case ArgRole::input:
    return kInputRole;
  case ArgRole::step:
    return kStepRole;
  case ArgRole::gradient:
    return kGradientRole;
  case ArgRole::loss:
    return kLossRole;
  case ArgRole::activation:
    return kActivationRole;
  case ArgRole::cotangent:
    return kCotangentRole;
  case ArgRole::cache:
    return kCacheRole;
  case ArgRole::residual:
    return kResidualRole;
  }
  llvm_unreachable("unknown argument role");
}

/// The ops after `before` in `block` (all of them without it): those one node made.
static auto opsAfter(Block &block, Operation *before) {
  return before ? llvm::make_range(std::next(before->getIterator()), block.end())
                : llvm::make_range(block.begin(), block.end());
}

/// Marks the ops after `before` in `block` as the remat copies of group `group`
/// (Gradient.cpp): `shardc.remat` keeps cse from merging them with the
/// forward's ops of the same operands, which would keep every value the copies
/// recompute live from the forward pass to the backward. Sharding annotations
/// stay unmarked, as propagation expects them.
static void stampRemat(Block &block, Operation *before, int64_t group) {
  for (Operation &op : opsAfter(block, before))
    if (!isa<shard::ShardOp>(op))
      op.setAttr(kRematAttr, IntegerAttr::get(IntegerType::get(op.getContext(), 64), group));
}

/// Names the location of the ops after `before` (with what is nested in them)
/// by the scan layer their node computes: the partitioner keeps locations on
/// what it makes of an op, so shardc-outline-layers finds each layer's ops
/// after partitioning.
static void stampLayer(Block &block, Operation *before, const Node &node) {
  LayerPart part{node.layer, node.stage};
  for (Operation &op : opsAfter(block, before))
    op.walk([&](Operation *inner) { inner->setLoc(layerLoc(inner->getLoc(), part)); });
}

/// One function of the step program: its arguments annotated on entry, the
/// nodes its results depend on in graph order, each result annotated where
/// it is made (sharding-propagation expects a value's annotation right after
/// its definition, before other users).
bool MLIRGenImpl::emitFunction(ModuleOp module, const StepFunction &function) {
  const Graph &graph = steps.graph;
  SmallVector<Type> argTypes, resultTypes;
  for (const FunctionValue &a : function.args)
    argTypes.push_back(tensorType(graph.nodes[a.node].type));
  for (const FunctionValue &r : function.results)
    resultTypes.push_back(tensorType(graph.nodes[r.node].type));
  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, loc(SMRange()), function.name,
                                 b.getFunctionType(argTypes, resultTypes));
  auto describe = [&](auto setAttr, unsigned i, const FunctionValue &v) {
    setAttr(i, kNameAttr, b.getStringAttr(v.name));
    if (v.layer >= 0)
      setAttr(i, kLayerAttr, b.getI64IntegerAttr(v.layer));
    if (v.stacked)
      setAttr(i, kStackedAttr, b.getI64IntegerAttr(steps.graph.nodes[v.node].type.dims[0].size));
    if (v.perExample)
      setAttr(i, kPerExampleAttr, b.getUnitAttr());
    if (v.transfer >= 0)
      setAttr(i, kTransferAttr, b.getI64IntegerAttr(v.transfer));
  };
  for (auto [i, a] : llvm::enumerate(function.args)) {
    describe([&](unsigned n, StringRef k, mlir::Attribute v) { fn.setArgAttr(n, k, v); }, i, a);
    fn.setArgAttr(i, kRoleAttr, b.getStringAttr(roleName(a.role)));
    if (a.microbatchDim >= 0)
      fn.setArgAttr(i, kMicrobatchDimAttr, b.getI64IntegerAttr(a.microbatchDim));
  }
  for (auto [i, r] : llvm::enumerate(function.results)) {
    describe([&](unsigned n, StringRef k, mlir::Attribute v) { fn.setResultAttr(n, k, v); }, i, r);
    if (r.microbatchScale != 1)
      fn.setResultAttr(i, kMicrobatchScaleAttr, b.getF64FloatAttr(r.microbatchScale));
  }

  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  std::vector<Value> values(graph.nodes.size());
  for (auto [i, a] : llvm::enumerate(function.args))
    values[a.node] = annotate(entry->getArgument(i), a.sharding, loc(a.loc));

  // The nodes the results need, found backwards from them.
  std::vector<bool> needed(graph.nodes.size(), false);
  for (const FunctionValue &r : function.results)
    needed[r.node] = true;
  for (size_t id = graph.nodes.size(); id-- > 0;)
    if (needed[id] && !values[id])
      for (unsigned operand : graph.nodes[id].operands)
        needed[operand] = true;

  const std::set<unsigned> gradients(function.gradients.begin(), function.gradients.end());
  std::map<unsigned, const FunctionValue *> resultOf;
  for (const FunctionValue &r : function.results)
    resultOf.emplace(r.node, &r);
  for (const Node &node : graph.nodes) {
    if (!needed[node.id] || values[node.id])
      continue;
    auto result = resultOf.find(node.id);
    if (node.op == OpKind::constant) {
      if (result == resultOf.end())
        continue; // made where it is used (valueOf)
      valueOf(node.id, values);
    } else if (node.operands.empty()) {
      error(node.loc, "internal error: '" + node.name + "' is not an argument of " + function.name);
      return false;
    } else {
      Operation *before = entry->empty() ? nullptr : &entry->back();
      if (!(values[node.id] = emitNode(node, values)))
        return false;
      if (auto group = node.attrs.find("remat"); group != node.attrs.end())
        stampRemat(*entry, before, std::get<int64_t>(group->second));
      if (node.layer >= 0)
        stampLayer(*entry, before, node);
    }
    // The op that makes a parameter's gradient, for shardc-mark-gradient-syncs
    // to find the collectives that reduce it after partitioning (an attribute
    // changes nothing propagation sees; an op or an annotation here would).
    if (gradients.count(node.id))
      if (Operation *made = values[node.id].getDefiningOp())
        made->setAttr(kGradientSyncAttr, b.getUnitAttr());
    if (result != resultOf.end())
      values[node.id] =
          annotate(values[node.id], result->second->sharding, loc(result->second->loc));
  }
  SmallVector<Value> results;
  for (const FunctionValue &r : function.results)
    results.push_back(values[r.node]);
  func::ReturnOp::create(b, fn.getLoc(), results);
  return true;
}

OwningOpRef<ModuleOp> MLIRGenImpl::run() {
  MLIRContext *ctx = b.getContext();
  ctx->loadDialect<arith::ArithDialect, func::FuncDialect, linalg::LinalgDialect, math::MathDialect,
                   shard::ShardDialect, tensor::TensorDialect>();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc(SMRange()));
  module->setName(program.modelName);
  if (!program.rulesPath.empty())
    (*module)->setAttr(kRulesAttr, b.getStringAttr(program.rulesPath));
  // Reshards at these places are what the rules asked for (--strict).
  SmallVector<mlir::Attribute> requested;
  for (const ShardedTensor &t : program.constraints)
    requested.push_back(loc(t.loc));
  for (const Output &o : program.outputs)
    requested.push_back(loc(o.loc));
  (*module)->setAttr(kRequestedLayoutsAttr, b.getArrayAttr(requested));
  (*module)->setAttr(kAxisRulesAttr, axisRules());
  if (program.matmulInBf16)
    (*module)->setAttr(kMatmulPrecisionAttr, b.getStringAttr("bf16"));
  if (program.gradientsInBf16)
    (*module)->setAttr(kGradientPrecisionAttr, b.getStringAttr("bf16"));
  b.setInsertionPointToEnd(module->getBody());
  if (!options.reference) {
    SmallVector<int64_t> shape;
    SmallVector<StringRef> names;
    for (const auto &[name, size] : program.mesh.axes) {
      names.push_back(name);
      shape.push_back(size);
    }
    auto grid = shard::GridOp::create(b, loc(SMRange()), kGridName, shape);
    grid->setAttr(kAxisNamesAttr, b.getStrArrayAttr(names));
  }
  if (steps.pipeline) {
    (*module)->setAttr(kMicrobatchesAttr, b.getI64IntegerAttr(program.microbatches.count));
    (*module)->setAttr(kPipelineAttr, pipelineAttr(*steps.pipeline));
    for (const PipelineStage &stage : steps.pipeline->stages)
      if (!emitFunction(*module, stage.forward) || !emitFunction(*module, stage.backward))
        return nullptr;
    if (!emitFunction(*module, steps.pipeline->apply))
      return nullptr;
  } else if (steps.loop) {
    (*module)->setAttr(
        kLayerLoopAttr,
        b.getDictionaryAttr(
            {b.getNamedAttr("layers", b.getI64IntegerAttr(steps.loop->layers)),
             b.getNamedAttr("transfers", transfersAttr(steps.loop->transfers)),
             b.getNamedAttr("eval_transfers", transfersAttr(steps.loop->evalTransfers))}));
    for (const PipelineStage &part : steps.loop->parts)
      if (!emitFunction(*module, part.forward) || !emitFunction(*module, part.backward))
        return nullptr;
    if (!emitFunction(*module, steps.loop->epilogue))
      return nullptr;
    for (const StepFunction &part : steps.loop->evalParts)
      if (!emitFunction(*module, part))
        return nullptr;
    if (!emitFunction(*module, steps.loop->apply))
      return nullptr;
  } else if (steps.microbatches) {
    (*module)->setAttr(kMicrobatchesAttr, b.getI64IntegerAttr(program.microbatches.count));
    if (!emitFunction(*module, steps.microbatches->grads) ||
        !emitFunction(*module, steps.microbatches->apply))
      return nullptr;
  } else if (steps.train && !emitFunction(*module, *steps.train)) {
    return nullptr;
  }
  // The layer loop builds eval_step and grad_step from its functions.
  if (!steps.loop && (!emitFunction(*module, steps.eval) || !emitFunction(*module, steps.grad)))
    return nullptr;
  if (steps.generation && (!emitFunction(*module, steps.generation->prefill) ||
                           !emitFunction(*module, steps.generation->decode)))
    return nullptr;
  // The verifier's errors go to the context's handler (shardc's reports them
  // as internal errors of this stage).
  if (failed || mlir::failed(verify(*module)))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp> shardc::mlirGen(MLIRContext &context, const TypedProgram &program,
                                      const StepProgram &steps, shardc::DiagnosticEngine &diags,
                                      const MLIRGenOptions &options) {
  return MLIRGenImpl(context, program, steps, diags, options).run();
}
