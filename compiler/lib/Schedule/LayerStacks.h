//===- LayerStacks.h - a scan's layers as one argument, after partitioning -*- C++ -*-===//
//
// Under a pipeline the runtime holds a scanned parameter (its optimizer state, a
// scanned dropout's numbers) as one stack whose layer dimension is split over the
// stage axis, while the partitioned step functions take it layer by layer.
// shardc-pipeline-schedule bridges the two with these.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_LIB_SHARD_LAYERSTACKS_H
#define SHARDC_LIB_SHARD_LAYERSTACKS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <tuple>

namespace shardc::layer_stacks {

/// A stack as an argument: its (local) type and attributes, every layer and
/// this rank's. Split over the stages (stage S's layers are its ranks' whole
/// local stack) unless an override keeps it whole on every rank.
struct Stack {
  mlir::Type type;
  mlir::DictionaryAttr attrs;
  int64_t layers = 0, local = 0;
  bool split() const { return local < layers; }
  int64_t localIndex(int64_t layer) const { return split() ? layer % local : layer; }
  /// The stage that holds `layer` of a split stack (0 of a whole one).
  int64_t stageOf(int64_t layer) const { return split() ? layer / local : 0; }
};

/// An argument's `shardc.name` and `shardc.layer` (-1: none).
std::pair<std::string, int64_t> nameAndLayer(mlir::func::FuncOp fn, unsigned arg);

/// How many layers each scanned input (a dropout's numbers) of `fn` has.
llvm::StringMap<int64_t> inputLayers(mlir::func::FuncOp fn);

/// The offsets, sizes and strides of `layers` layers (dim 0) of `stack` from `layer`.
using Slice =
    std::tuple<llvm::SmallVector<mlir::OpFoldResult>, llvm::SmallVector<mlir::OpFoldResult>,
               llvm::SmallVector<mlir::OpFoldResult>>;
Slice layerSlice(mlir::OpBuilder &b, mlir::RankedTensorType stack, mlir::OpFoldResult layer,
                 int64_t layers = 1);

/// Layer `layer` of `stack`, without the layer dim.
mlir::Value layerOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value stack,
                    mlir::OpFoldResult layer);
mlir::Value layerOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value stack, int64_t layer);

/// `stack` with layer `layer` set to `value`.
mlir::Value setLayer(mlir::OpBuilder &b, mlir::Location loc, mlir::Value stack,
                     mlir::OpFoldResult layer, mlir::Value value);
mlir::Value setLayer(mlir::OpBuilder &b, mlir::Location loc, mlir::Value stack, int64_t layer,
                     mlir::Value value);

/// Replaces each per-layer argument of `fn` that `stackOf(role, name, layer
/// type)` stacks by one argument per stack, where its first layer's was;
/// `replace(argument, name, layer, stack)` takes each one's uses first.
mlir::LogicalResult stackArguments(
    mlir::func::FuncOp fn,
    llvm::function_ref<std::optional<Stack>(llvm::StringRef, llvm::StringRef, mlir::Type)> stackOf,
    llvm::function_ref<void(mlir::Value, llvm::StringRef, int64_t, mlir::Value, const Stack &)>
        replace);

} // namespace shardc::layer_stacks

#endif // SHARDC_LIB_SHARD_LAYERSTACKS_H
