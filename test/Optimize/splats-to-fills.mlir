// shardc-splats-to-fills: a splat tensor constant becomes one fill of an empty
// tensor per use, so that an op writing into it writes into a buffer of its own
// rather than a copy of a read-only global.
// RUN: %shardc-opt %s --shardc-splats-to-fills -split-input-file | FileCheck %s

// Two reductions from zero: a fill each, just before it.

// CHECK-LABEL: func.func @two_inits
// CHECK-NOT:     arith.constant dense
// CHECK:         %[[Z0:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[E0:.*]] = tensor.empty() : tensor<4xf32>
// CHECK:         %[[F0:.*]] = linalg.fill ins(%[[Z0]] : f32) outs(%[[E0]] : tensor<4xf32>)
// CHECK:         linalg.generic {{.*}} outs(%[[F0]] : tensor<4xf32>)
// CHECK:         %[[Z1:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[E1:.*]] = tensor.empty() : tensor<4xf32>
// CHECK:         %[[F1:.*]] = linalg.fill ins(%[[Z1]] : f32) outs(%[[E1]] : tensor<4xf32>)
// CHECK:         linalg.generic {{.*}} outs(%[[F1]] : tensor<4xf32>)
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @two_inits(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant dense<0.0> : tensor<4xf32>
  %a = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%zero : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %b = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%y : tensor<4x8xf32>) outs(%zero : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// shard-partition's init of a sharded sum, "zero on the first process, zero
// elsewhere", is zero; a constant that is not a splat stays.

// CHECK-LABEL: func.func @equal_branches
// CHECK-NOT:     scf.if
// CHECK:         %[[C:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK:         %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<2xf32>
// CHECK:         %[[F:.*]] = linalg.fill ins(%[[Z]] : f32) outs(%[[E]] : tensor<2xf32>)
// CHECK:         return %[[F]], %[[C]]
func.func @equal_branches(%first: i1) -> (tensor<2xf32>, tensor<2xf32>) {
  %zero = arith.constant dense<0.0> : tensor<2xf32>
  %c = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %init = scf.if %first -> (tensor<2xf32>) {
    scf.yield %zero : tensor<2xf32>
  } else {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<2xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<2xf32>) -> tensor<2xf32>
    scf.yield %f : tensor<2xf32>
  }
  return %init, %c : tensor<2xf32>, tensor<2xf32>
}

// -----

// Different values on the two branches: the scf.if stays, with a fill in the
// branch that yielded the constant.

// CHECK-LABEL: func.func @different_branches
// CHECK:         scf.if
// CHECK:           linalg.fill
// CHECK:           scf.yield
// CHECK:         } else {
func.func @different_branches(%first: i1) -> tensor<2xf32> {
  %one = arith.constant dense<1.0> : tensor<2xf32>
  %init = scf.if %first -> (tensor<2xf32>) {
    scf.yield %one : tensor<2xf32>
  } else {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<2xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<2xf32>) -> tensor<2xf32>
    scf.yield %f : tensor<2xf32>
  }
  return %init : tensor<2xf32>
}
