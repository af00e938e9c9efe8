//===- LayerLocations.h - which scan layer an op computes -------*- C++ -*-===//
//
// MLIRGen names the location of every op a scanned layer's node makes:
// `loc("layer 3 forward"(<source>))`, `backward` for its gradient and remat
// copies, `check` and `update` for what the optimizer does with its
// parameters' gradients (TypedProgram.h's LayerStage). Partitioning keeps locations on what it
// makes of an op (and
// --locations prints them), so shardc-outline-layers finds each layer's ops
// after partitioning without a side table.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_IR_LAYERLOCATIONS_H
#define SHARDC_IR_LAYERLOCATIONS_H

#include "shardc/IR/LayerStage.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/StringExtras.h"

#include <optional>

namespace shardc {

/// One part of one scan layer's computation.
struct LayerPart {
  int64_t layer = 0;
  LayerStage stage = LayerStage::forward;
  bool operator<(const LayerPart &o) const {
    return std::make_pair(layer, stage) < std::make_pair(o.layer, o.stage);
  }
};

inline constexpr const char *kLayerStageNames[] = {"forward", "backward", "check", "update"};

inline mlir::Location layerLoc(mlir::Location source, LayerPart part) {
  std::string name =
      "layer " + std::to_string(part.layer) + " " + kLayerStageNames[static_cast<int>(part.stage)];
  return mlir::NameLoc::get(mlir::StringAttr::get(source->getContext(), name), source);
}

/// The layer part `loc` names (layerLoc), if any.
inline std::optional<LayerPart> layerOf(mlir::Location loc) {
  auto named = mlir::dyn_cast<mlir::NameLoc>(loc);
  if (!named)
    return std::nullopt;
  auto [word, rest] = named.getName().getValue().split(' ');
  auto [number, stage] = rest.split(' ');
  LayerPart part;
  if (word != "layer" || number.getAsInteger(10, part.layer))
    return std::nullopt;
  const auto *name = llvm::find(kLayerStageNames, stage);
  if (name == std::end(kLayerStageNames))
    return std::nullopt;
  part.stage = static_cast<LayerStage>(name - std::begin(kLayerStageNames));
  return part;
}

} // namespace shardc

#endif
