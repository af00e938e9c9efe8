// shardc-drop-unit-axes: over a mesh axis of size 1 every collective is the
// identity; the axis leaves the collectives that also span others, and a
// collective over such axes alone leaves the program.
// RUN: %shardc-opt %s --shardc-drop-unit-axes | FileCheck %s

shard.grid @mesh(shape = 8x1)

// CHECK-LABEL: func.func @unit_only
// CHECK-NOT:   shard.
// CHECK:       return %arg0, %arg1
func.func @unit_only(%arg0: tensor<1x1024xf32>, %arg1: tensor<4x8xf32>) -> (tensor<1x1024xf32>, tensor<4x8xf32>) {
  %0 = shard.all_reduce %arg0 on @mesh grid_axes = [1] : tensor<1x1024xf32> -> tensor<1x1024xf32>
  %1 = shard.all_gather %arg1 on @mesh grid_axes = [1] gather_axis = 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0, %1 : tensor<1x1024xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @mixed
// CHECK-NEXT:  shard.all_reduce %arg0 on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:  shard.reduce_scatter %arg1 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<16xf32> -> tensor<2xf32>
func.func @mixed(%arg0: tensor<4xf32>, %arg1: tensor<16xf32>) -> (tensor<4xf32>, tensor<2xf32>) {
  %0 = shard.all_reduce %arg0 on @mesh grid_axes = [0, 1] : tensor<4xf32> -> tensor<4xf32>
  %1 = shard.reduce_scatter %arg1 on @mesh grid_axes = [1, 0] scatter_axis = 0 : tensor<16xf32> -> tensor<2xf32>
  return %0, %1 : tensor<4xf32>, tensor<2xf32>
}

// An all_reduce that also changes the element type stays.
// CHECK-LABEL: func.func @converting
// CHECK:       shard.all_reduce %arg0 on @mesh grid_axes = [1] : tensor<4xf16> -> tensor<4xf32>
func.func @converting(%arg0: tensor<4xf16>) -> tensor<4xf32> {
  %0 = shard.all_reduce %arg0 on @mesh grid_axes = [1] : tensor<4xf16> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
