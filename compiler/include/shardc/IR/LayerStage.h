//===- LayerStage.h - the parts of a scanned layer's work -------*- C++ -*-===//
//
// What the typed graph marks on a scanned layer's nodes and MLIRGen names in
// their ops' locations (LayerLocations.h), so that the passes after
// partitioning find each layer's parts without Sema's types.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_IR_LAYERSTAGE_H
#define SHARDC_IR_LAYERSTAGE_H

namespace shardc {

/// The parts of a scanned layer's computation: its forward (Flatten.cpp), its
/// backward with remat copies (Gradient.cpp), its parameters' gradients'
/// contributions to the update's global checks (the finiteness test and the
/// clipping norm), and its parameters' update (Optimizer.cpp).
enum class LayerStage { forward, backward, check, update };

} // namespace shardc

#endif
