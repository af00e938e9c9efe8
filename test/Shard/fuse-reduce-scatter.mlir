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

// The all_reduce also feeds a sum over the sliced axis (the clipping norm's sum of
// squares of an FSDP gradient): the sum reads the rank's block from zero, one scalar
// all_reduce adds the blocks' sums, the init is added once, and the gradient is
// reduce-scattered.
// CHECK-LABEL: func.func @sum_of_squares
// CHECK-SAME:    (%[[G:.*]]: tensor<8x16xf32>, %[[INIT:.*]]: tensor<f32>)
// CHECK:       %[[MINE:.*]] = shard.reduce_scatter %[[G]] on @mesh grid_axes = [1] scatter_axis = 1 : tensor<8x16xf32> -> tensor<8x4xf32>
// CHECK:       %[[ZERO:.*]] = linalg.fill
// CHECK:       %[[LOCAL:.*]] = linalg.generic {{.*}} ins(%[[MINE]], %[[MINE]] : tensor<8x4xf32>, tensor<8x4xf32>) outs(%[[ZERO]] : tensor<f32>)
// CHECK:       %[[ALL:.*]] = shard.all_reduce %[[LOCAL]] on @mesh grid_axes = [1] : tensor<f32> -> tensor<f32>
// CHECK:       %[[NORM:.*]] = linalg.add ins(%[[INIT]], %[[ALL]] : tensor<f32>, tensor<f32>)
// CHECK:       return %[[MINE]], %[[NORM]]
#g2 = affine_map<(d0, d1) -> (d0, d1)>
#scalar2 = affine_map<(d0, d1) -> ()>
func.func @sum_of_squares(%arg0: tensor<8x16xf32>, %init: tensor<f32>) -> (tensor<8x4xf32>, tensor<f32>) {
  %0 = shard.all_reduce %arg0 on @mesh grid_axes = [1] : tensor<8x16xf32> -> tensor<8x16xf32>
  %norm = linalg.generic {indexing_maps = [#g2, #g2, #scalar2], iterator_types = ["reduction", "reduction"]}
      ins(%0, %0 : tensor<8x16xf32>, tensor<8x16xf32>) outs(%init : tensor<f32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %1 = shard.all_slice %0 on @mesh grid_axes = [1] slice_axis = 1 : tensor<8x16xf32> -> tensor<8x4xf32>
  return %1, %norm : tensor<8x4xf32>, tensor<f32>
}

// A sum over the other axis (it keeps the sliced one), or a max: the all_reduce stays.
// CHECK-LABEL: func.func @other_sums
// CHECK-COUNT-2: shard.all_reduce
// CHECK-NOT:   shard.reduce_scatter
#rows = affine_map<(d0, d1) -> (d1)>
func.func @other_sums(%arg0: tensor<8x16xf32>, %init: tensor<16xf32>, %arg1: tensor<8x16xf32>, %init1: tensor<f32>)
    -> (tensor<8x4xf32>, tensor<16xf32>, tensor<8x4xf32>, tensor<f32>) {
  %0 = shard.all_reduce %arg0 on @mesh grid_axes = [1] : tensor<8x16xf32> -> tensor<8x16xf32>
  %cols = linalg.generic {indexing_maps = [#g2, #rows], iterator_types = ["reduction", "parallel"]}
      ins(%0 : tensor<8x16xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %o, %x : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %1 = shard.all_slice %0 on @mesh grid_axes = [1] slice_axis = 1 : tensor<8x16xf32> -> tensor<8x4xf32>
  %2 = shard.all_reduce %arg1 on @mesh grid_axes = [1] : tensor<8x16xf32> -> tensor<8x16xf32>
  %max = linalg.generic {indexing_maps = [#g2, #scalar2], iterator_types = ["reduction", "reduction"]}
      ins(%2 : tensor<8x16xf32>) outs(%init1 : tensor<f32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.maximumf %o, %x : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %3 = shard.all_slice %2 on @mesh grid_axes = [1] slice_axis = 1 : tensor<8x16xf32> -> tensor<8x4xf32>
  return %1, %cols, %3, %max : tensor<8x4xf32>, tensor<16xf32>, tensor<8x4xf32>, tensor<f32>
}
