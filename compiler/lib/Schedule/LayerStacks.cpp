//===- LayerStacks.cpp - a scan's layers as one argument ------------------===//

#include "LayerStacks.h"
#include "MicrobatchLoops.h"
#include "shardc/IR/Attributes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/BitVector.h"

using namespace mlir;
using namespace shardc::microbatch_loops;

namespace shardc::layer_stacks {

std::pair<std::string, int64_t> nameAndLayer(func::FuncOp fn, unsigned arg) {
  auto name = fn.getArgAttrOfType<StringAttr>(arg, kNameAttr);
  auto layer = fn.getArgAttrOfType<IntegerAttr>(arg, kLayerAttr);
  return {name ? name.getValue().str() : "", layer ? layer.getInt() : -1};
}

llvm::StringMap<int64_t> inputLayers(func::FuncOp fn) {
  llvm::StringMap<int64_t> layers;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (roleOf(fn, i) == kInputRole && nameAndLayer(fn, i).second >= 0)
      ++layers[nameAndLayer(fn, i).first];
  return layers;
}

Slice layerSlice(OpBuilder &b, RankedTensorType stack, OpFoldResult layer, int64_t layers) {
  SmallVector<OpFoldResult> offsets(stack.getRank(), b.getIndexAttr(0)),
      sizes{b.getIndexAttr(layers)}, strides(stack.getRank(), b.getIndexAttr(1));
  offsets[0] = layer;
  for (int64_t size : stack.getShape().drop_front())
    sizes.push_back(b.getIndexAttr(size));
  return std::make_tuple(offsets, sizes, strides);
}

Value layerOf(OpBuilder &b, Location loc, Value stack, OpFoldResult layer) {
  auto type = cast<RankedTensorType>(stack.getType());
  auto [offsets, sizes, strides] = layerSlice(b, type, layer);
  auto layerType = RankedTensorType::get(type.getShape().drop_front(), type.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, layerType, stack, offsets, sizes, strides);
}

Value layerOf(OpBuilder &b, Location loc, Value stack, int64_t layer) {
  return layerOf(b, loc, stack, b.getIndexAttr(layer));
}

Value setLayer(OpBuilder &b, Location loc, Value stack, OpFoldResult layer, Value value) {
  auto [offsets, sizes, strides] = layerSlice(b, cast<RankedTensorType>(stack.getType()), layer);
  return tensor::InsertSliceOp::create(b, loc, value, stack, offsets, sizes, strides);
}

Value setLayer(OpBuilder &b, Location loc, Value stack, int64_t layer, Value value) {
  return setLayer(b, loc, stack, b.getIndexAttr(layer), value);
}

LogicalResult
stackArguments(func::FuncOp fn,
               function_ref<std::optional<Stack>(StringRef, StringRef, Type)> stackOf,
               function_ref<void(Value, StringRef, int64_t, Value, const Stack &)> replace) {
  SmallVector<unsigned> at;
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> attrs;
  SmallVector<Location> locs;
  SmallVector<std::optional<Stack>> stacked; // per original argument
  llvm::StringMap<unsigned> placed;          // name -> inserted
  const unsigned original = fn.getNumArguments();
  for (unsigned i = 0; i < original; ++i) {
    auto [name, layer] = nameAndLayer(fn, i);
    stacked.push_back(layer < 0 ? std::nullopt
                                : stackOf(roleOf(fn, i), name, fn.getArgumentTypes()[i]));
    if (!stacked.back() || !placed.try_emplace(name, at.size()).second)
      continue;
    at.push_back(i);
    types.push_back(stacked.back()->type);
    attrs.push_back(stacked.back()->attrs);
    locs.push_back(fn.getArgument(i).getLoc());
  }
  if (at.empty())
    return success();
  if (failed(fn.insertArguments(at, types, attrs, locs)))
    return failure();
  llvm::BitVector erased(fn.getNumArguments());
  for (unsigned i = 0, inserted = 0; i < original; ++i) {
    while (inserted < at.size() && at[inserted] <= i)
      ++inserted;
    if (!stacked[i])
      continue;
    auto [name, layer] = nameAndLayer(fn, i + inserted);
    const unsigned k = placed.at(name);
    replace(fn.getArgument(i + inserted), name, layer, fn.getArgument(at[k] + k), *stacked[i]);
    erased.set(i + inserted);
  }
  return fn.eraseArguments(erased);
}

} // namespace shardc::layer_stacks
