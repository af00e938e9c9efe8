//===- MicrobatchLoops.cpp - what the microbatch and pipeline loops share ===//
//
// See MicrobatchLoops.h.
//
//===----------------------------------------------------------------------===//

#include "MicrobatchLoops.h"
#include "shardc/IR/Attributes.h"
#include "shardc/Shard/Matchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace shardc::microbatch_loops {

StringRef roleOf(func::FuncOp fn, unsigned arg) {
  auto role = fn.getArgAttrOfType<StringAttr>(arg, shardc::kRoleAttr);
  return role ? role.getValue() : StringRef();
}

OpOperand *deferrableReduction(OpOperand &result) {
  if (shardc::soleSum(result.get()))
    return &result;
  auto add = result.get().getDefiningOp<linalg::LinalgOp>();
  if (!add || !add->hasOneUse() || !shardc::isElementwiseAdd(add))
    return nullptr;
  for (unsigned side : {0u, 1u})
    if (isa<BlockArgument>(add->getOperand(1 - side)) && shardc::soleSum(add->getOperand(side)))
      return &add->getOpOperand(side);
  return nullptr;
}

static Value elementwise(OpBuilder &b, Location loc, Value value, Value init,
                         function_ref<Value(OpBuilder &, Location, Value, Value)> payload) {
  auto type = cast<RankedTensorType>(init.getType());
  AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> parallel(type.getRank(), utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, type, value, init, ArrayRef<AffineMap>{identity, identity}, parallel,
      [&](OpBuilder &nested, Location at, ValueRange args) {
        linalg::YieldOp::create(nested, at, payload(nested, at, args[0], args[1]));
      });
  return generic.getResult(0);
}

Value scale(OpBuilder &b, Location loc, Value value, double factor) {
  auto type = cast<RankedTensorType>(value.getType());
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return elementwise(b, loc, value, init, [&](OpBuilder &nested, Location at, Value x, Value) {
    Value c = arith::ConstantOp::create(nested, at, FloatAttr::get(type.getElementType(), factor));
    return arith::MulFOp::create(nested, at, x, c).getResult();
  });
}

Value accumulate(OpBuilder &b, Location loc, Value sum, Value value) {
  return elementwise(b, loc, value, sum, [](OpBuilder &nested, Location at, Value x, Value acc) {
    return arith::AddFOp::create(nested, at, acc, x).getResult();
  });
}

void inlineCall(func::CallOp call, func::FuncOp callee) {
  OpBuilder b(call);
  IRMapping mapping;
  Block &body = callee.getBody().front();
  mapping.map(body.getArguments(), call.getOperands());
  for (Operation &op : body.without_terminator())
    b.clone(op, mapping);
  for (auto [result, returned] :
       llvm::zip_equal(call.getResults(), body.getTerminator()->getOperands()))
    result.replaceAllUsesWith(mapping.lookupOrDefault(returned));
  call.erase();
}

SmallVector<Operation *> deferReductions(func::FuncOp fn) {
  Operation *ret = fn.getBody().front().getTerminator();
  SmallVector<Operation *> deferred(ret->getNumOperands(), nullptr);
  for (OpOperand &result : ret->getOpOperands())
    if (fn.getResultAttr(result.getOperandNumber(), shardc::kTransferAttr))
      continue;
    else if (OpOperand *reduced = deferrableReduction(result)) {
      auto reduce = reduced->get().getDefiningOp<shard::AllReduceOp>();
      deferred[result.getOperandNumber()] = reduce;
      reduced->set(reduce.getInput());
    }
  return deferred;
}

void addInPlace(scf::ForOp loop) {
  for (auto [sum, yielded] : llvm::zip_equal(loop.getRegionIterArgs(), loop.getYieldedValues())) {
    if (yielded == sum)
      continue;
    if (auto insert = yielded.getDefiningOp<tensor::InsertSliceOp>();
        insert && insert.getDest() == sum)
      continue; // a slot of a buffer, written in place
    auto op = yielded.getDefiningOp<linalg::LinalgOp>();
    if (op && op.getNumDpsInits() == 1 && op.getDpsInits()[0] == sum)
      continue; // an accumulation already (the loss's, a metric's)
    OpBuilder b(loop.getBody()->getTerminator());
    Value inPlace;
    if (op && shardc::isElementwiseAdd(op) && llvm::is_contained(op.getDpsInputs(), sum)) {
      b.setInsertionPoint(op);
      inPlace = accumulate(b, op.getLoc(), sum, op.getDpsInputs()[op.getDpsInputs()[0] == sum]);
    } else {
      inPlace = linalg::CopyOp::create(b, loop.getLoc(), yielded, sum).getResult(0);
    }
    loop.getBody()->getTerminator()->replaceUsesOfWith(yielded, inPlace);
    if (op && op->use_empty())
      op->erase();
  }
}

func::FuncOp declareTrainStep(func::FuncOp apply, func::FuncOp batch, int64_t count,
                              unsigned metrics) {
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  auto add = [&](func::FuncOp from, unsigned i, Type type) {
    argTypes.push_back(type);
    SmallVector<NamedAttribute> attrs;
    if (DictionaryAttr dict = from.getArgAttrDict(i))
      for (NamedAttribute attr : dict)
        if (attr.getName() != shardc::kMicrobatchDimAttr)
          attrs.push_back(attr);
    argAttrs.push_back(DictionaryAttr::get(from.getContext(), attrs));
  };
  std::optional<unsigned> step;
  unsigned updated = 0;
  for (unsigned i = 0; i < apply.getNumArguments(); ++i) {
    StringRef role = roleOf(apply, i);
    if (role == shardc::kParameterRole || role == shardc::kOptimizerStateRole) {
      add(apply, i, apply.getArgumentTypes()[i]);
      ++updated;
    } else if (role == shardc::kStepRole) {
      step = i;
    }
  }
  for (unsigned i = 0; i < batch.getNumArguments(); ++i) {
    if (roleOf(batch, i) != shardc::kInputRole)
      continue;
    auto type = cast<RankedTensorType>(batch.getArgumentTypes()[i]);
    SmallVector<int64_t> shape(type.getShape());
    if (auto dim = batch.getArgAttrOfType<IntegerAttr>(i, shardc::kMicrobatchDimAttr))
      shape[dim.getInt()] *= count;
    add(batch, i, type.clone(shape));
  }
  if (step)
    add(apply, *step, apply.getArgumentTypes()[*step]);
  SmallVector<Type> resultTypes(apply.getResultTypes().take_front(updated));
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned r = 0; r < updated; ++r)
    resultAttrs.push_back(apply.getResultAttrDict(r));
  resultTypes.push_back(apply.getResultTypes().back());
  resultAttrs.push_back(apply.getResultAttrDict(apply.getNumResults() - 1));
  for (unsigned m = 1; m <= metrics; ++m) {
    resultTypes.push_back(batch.getResultTypes()[m]);
    resultAttrs.push_back(batch.getResultAttrDict(m));
  }
  return declareStep(apply, shardc::kTrainFunction, argTypes, argAttrs, resultTypes, resultAttrs);
}

func::FuncOp declareStep(func::FuncOp anchor, StringRef name, ArrayRef<Type> argTypes,
                         ArrayRef<DictionaryAttr> argAttrs, ArrayRef<Type> resultTypes,
                         ArrayRef<DictionaryAttr> resultAttrs) {
  OpBuilder b(anchor);
  auto fn =
      func::FuncOp::create(b, anchor.getLoc(), name, b.getFunctionType(argTypes, resultTypes));
  fn.setAllArgAttrs(argAttrs);
  for (auto [r, attrs] : llvm::enumerate(resultAttrs))
    if (attrs)
      fn.setResultAttrs(r, attrs);
  fn.addEntryBlock();
  return fn;
}

Value zerosOf(OpBuilder &b, Location loc, RankedTensorType type) {
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

Value sliceMicrobatch(OpBuilder &b, Location loc, Value input, RankedTensorType type, int64_t dim,
                      Value k) {
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes, strides(type.getRank(), b.getIndexAttr(1));
  for (int64_t size : type.getShape())
    sizes.push_back(b.getIndexAttr(size));
  Value rows = arith::ConstantIndexOp::create(b, loc, type.getDimSize(dim));
  offsets[dim] = arith::MulIOp::create(b, loc, k, rows).getResult();
  return tensor::ExtractSliceOp::create(b, loc, type, input, offsets, sizes, strides);
}

} // namespace shardc::microbatch_loops
