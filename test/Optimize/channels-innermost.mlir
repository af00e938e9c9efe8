// shardc-channels-innermost: a pooling op becomes a generic whose innermost loop
// runs over the channels, and shardc-fuse-elementwise then fuses the relu it
// pools into it.
// RUN: %shardc-opt %s --shardc-channels-innermost | FileCheck %s
// RUN: %shardc-opt %s --shardc-channels-innermost --shardc-fuse-elementwise | FileCheck %s --check-prefix=FUSED

// CHECK-DAG:   #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 2 + d3, d2 * 2 + d4, d5)>
// CHECK-DAG:   #[[WINDOW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4)>
// CHECK-DAG:   #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
// CHECK-LABEL: func.func @pool
// CHECK-NOT:     linalg.pooling_nhwc_sum
// CHECK:         linalg.generic {indexing_maps = [#[[IN]], #[[WINDOW]], #[[OUT]]],
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]

// FUSED-LABEL: func.func @pool
// FUSED-SAME:    (%[[X:.*]]: tensor<2x4x4x8xf32>)
// FUSED:         linalg.generic
// FUSED-SAME:      ins(%[[X]], %{{.*}} : tensor<2x4x4x8xf32>, tensor<2x2xf32>)
// FUSED:           arith.maximumf
// FUSED:           arith.addf
// FUSED-NOT:     linalg.generic
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @pool(%x: tensor<2x4x4x8xf32>) -> tensor<2x2x2x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x4x8xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x4x4x8xf32>) outs(%e : tensor<2x4x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2x4x4x8xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  %init = tensor.empty() : tensor<2x2x2x8xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%init : tensor<2x2x2x8xf32>) -> tensor<2x2x2x8xf32>
  %pool = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%relu, %window : tensor<2x4x4x8xf32>, tensor<2x2xf32>) outs(%filled : tensor<2x2x2x8xf32>) -> tensor<2x2x2x8xf32>
  return %pool : tensor<2x2x2x8xf32>
}
