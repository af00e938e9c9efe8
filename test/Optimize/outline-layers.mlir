// shardc-outline-layers: the ops MLIRGen located in one scan layer's part
// become a call, and parts that print alike share one function.
// RUN: %shardc-opt %s --shardc-outline-layers -split-input-file | FileCheck %s

// Two layers' forwards. What only a part reads (%scaled, a parameter's
// gather in a real step) joins it; what reads a part and something else
// (%seen, a bucket of two layers' gradients) moves after its call; the
// constant is cloned into the function. Both layers call one function.

#l0 = loc("layer 0 forward"("m.shard":3:5))
#l1 = loc("layer 1 forward"("m.shard":3:5))
func.func @step(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %half = arith.constant dense<0.5> : tensor<4xf32>
  %a0 = arith.mulf %x, %w0 : tensor<4xf32> loc(#l0)
  %scaled0 = arith.mulf %w0, %half : tensor<4xf32>
  %seen0 = arith.addf %a0, %x : tensor<4xf32>
  %y0 = arith.addf %a0, %scaled0 : tensor<4xf32> loc(#l0)
  %a1 = arith.mulf %y0, %w1 : tensor<4xf32> loc(#l1)
  %scaled1 = arith.mulf %w1, %half : tensor<4xf32>
  %seen1 = arith.addf %a1, %y0 : tensor<4xf32>
  %y1 = arith.addf %a1, %scaled1 : tensor<4xf32> loc(#l1)
  %seen = arith.addf %seen0, %seen1 : tensor<4xf32>
  return %y1, %seen : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @step
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[W0:.*]]: tensor<4xf32>, %[[W1:.*]]: tensor<4xf32>)
// CHECK:         %[[L0:.*]]:2 = call @[[LAYER:shardc_layer_0]](%[[X]], %[[W0]])
// CHECK-NEXT:    %[[SEEN0:.*]] = arith.addf %[[L0]]#0, %[[X]]
// CHECK-NEXT:    %[[L1:.*]]:2 = call @[[LAYER]](%[[L0]]#1, %[[W1]])
// CHECK-NEXT:    %[[SEEN1:.*]] = arith.addf %[[L1]]#0, %[[L0]]#1
// CHECK-NEXT:    %[[SEEN:.*]] = arith.addf %[[SEEN0]], %[[SEEN1]]
// CHECK-NEXT:    return %[[L1]]#1, %[[SEEN]]
// CHECK:       func.func private @[[LAYER]](%[[IN:.*]]: tensor<4xf32>, %[[W:.*]]: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-SAME:    attributes {llvm.linkage = #llvm.linkage<internal>, no_inline, shardc.arena_argument}
// CHECK-NEXT:    %[[HALF:.*]] = arith.constant dense<5.000000e-01>
// CHECK-NEXT:    %[[A:.*]] = arith.mulf %[[IN]], %[[W]]
// CHECK-NEXT:    %[[SCALED:.*]] = arith.mulf %[[W]], %[[HALF]]
// CHECK-NEXT:    %[[Y:.*]] = arith.addf %[[A]], %[[SCALED]]
// CHECK-NEXT:    return %[[A]], %[[Y]]
// CHECK-NOT:   func.func

// -----

// An op between a part's ops that reads the part and is read by it: the part
// stays where it is.

#l0 = loc("layer 0 backward"("m.shard":3:5))
func.func @tangled(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = arith.mulf %x, %x : tensor<4xf32> loc(#l0)
  %b = arith.addf %a, %x : tensor<4xf32>
  %c = arith.subf %b, %x : tensor<4xf32>
  %d = arith.mulf %a, %c : tensor<4xf32> loc(#l0)
  return %d : tensor<4xf32>
}

// CHECK-LABEL: func.func @tangled
// CHECK-NOT:     call
// CHECK:         arith.mulf
// CHECK-NEXT:    arith.addf
// CHECK-NEXT:    arith.subf
// CHECK-NEXT:    arith.mulf
// CHECK-NOT:   func.func

// -----

// A part of one op (here the last op of its block but the return) is a call too.

#l0 = loc("layer 0 update"("m.shard":3:5))
func.func @single(%w: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %n = arith.subf %w, %g : tensor<4xf32> loc(#l0)
  return %n : tensor<4xf32>
}

// CHECK-LABEL: func.func @single
// CHECK-NEXT:    %[[N:.*]] = call @shardc_layer_{{[0-9]+}}(%arg0, %arg1)
// CHECK-NEXT:    return %[[N]]
