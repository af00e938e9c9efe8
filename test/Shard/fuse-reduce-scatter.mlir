// shardc-fuse-reduce-scatter: an all_reduce whose only use is an all_slice over
// the same grid axes becomes one reduce_scatter (each rank gets the sum of its
// block only: ZeRO-3's gradient reduction); anything else is left alone.
// RUN: %shardc-opt %s --shardc-fuse-reduce-scatter | FileCheck %s

shard.grid @mesh(shape = 2x4)

// CHECK-LABEL: func.func @fused
// CHECK-NEXT:  %[[R:.*]] = shard.reduce_scatter %arg0 on @mesh grid_axes = [1] scatter_axis = 1 : tensor<8x16xf32> -> tensor<8x4xf32>
// CHECK-NEXT:  return %[[R]]
func.func @fused(%arg0: tensor<8x16xf32>) -> tensor<8x4xf32> {
  %0 = shard.all_reduce %arg0 on @mesh grid_axes = [1] : tensor<8x16xf32> -> tensor<8x16xf32>
  %1 = shard.all_slice %0 on @mesh grid_axes = [1] slice_axis = 1 : tensor<8x16xf32> -> tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}

// Both axes, in the same order, and a max reduction.
// CHECK-LABEL: func.func @two_axes
// CHECK-NEXT:  shard.reduce_scatter %arg0 on @mesh grid_axes = [0, 1] reduction = max scatter_axis = 0 : tensor<16x3xf32> -> tensor<2x3xf32>
func.func @two_axes(%arg0: tensor<16x3xf32>) -> tensor<2x3xf32> {
  %0 = shard.all_reduce %arg0 on @mesh grid_axes = [0, 1] reduction = max : tensor<16x3xf32> -> tensor<16x3xf32>
  %1 = shard.all_slice %0 on @mesh grid_axes = [0, 1] slice_axis = 0 : tensor<16x3xf32> -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// The whole sum has another use: both stay.
// CHECK-LABEL: func.func @used_whole
// CHECK:       shard.all_reduce
// CHECK:       shard.all_slice
// CHECK-NOT:   shard.reduce_scatter
func.func @used_whole(%arg0: tensor<8x16xf32>) -> (tensor<8x4xf32>, tensor<8x16xf32>) {
  %0 = shard.all_reduce %arg0 on @mesh grid_axes = [1] : tensor<8x16xf32> -> tensor<8x16xf32>
  %1 = shard.all_slice %0 on @mesh grid_axes = [1] slice_axis = 1 : tensor<8x16xf32> -> tensor<8x4xf32>
  return %1, %0 : tensor<8x4xf32>, tensor<8x16xf32>
}

// Reduced over one axis, sliced over another: no single collective does both.
// CHECK-LABEL: func.func @other_axes
// CHECK:       shard.all_reduce
// CHECK:       shard.all_slice
// CHECK-NOT:   shard.reduce_scatter
func.func @other_axes(%arg0: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %0 = shard.all_reduce %arg0 on @mesh grid_axes = [1] : tensor<8x16xf32> -> tensor<8x16xf32>
  %1 = shard.all_slice %0 on @mesh grid_axes = [0] slice_axis = 0 : tensor<8x16xf32> -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// The axes in another order pick other blocks than reduce_scatter's.
// CHECK-LABEL: func.func @reordered_axes
// CHECK:       shard.all_reduce
// CHECK-NOT:   shard.reduce_scatter
func.func @reordered_axes(%arg0: tensor<16x3xf32>) -> tensor<2x3xf32> {
  %0 = shard.all_reduce %arg0 on @mesh grid_axes = [0, 1] : tensor<16x3xf32> -> tensor<16x3xf32>
  %1 = shard.all_slice %0 on @mesh grid_axes = [1, 0] slice_axis = 0 : tensor<16x3xf32> -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
