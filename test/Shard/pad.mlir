// Sharding model of tensor.pad with a constant padding value: a dimension
// padded by zero on both sides keeps its split; a padded one is made whole
// (propagation inserts the reshard), since its border rows belong to other
// ranks.
//
// RUN: %shardc-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(sharding-propagation,cse))' \
// RUN:   | FileCheck %s --check-prefix=PROP
// RUN: %shardc-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(sharding-propagation,cse),func.func(shard-partition,canonicalize))' \
// RUN:   | FileCheck %s --check-prefix=SPMD

shard.grid @grid(shape = 2x4)

// SAME padding of H and W (NHWC), batch split: the batch split carries over.

// PROP-LABEL: func.func @pad_batch
//       PROP: %[[B:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] :
//       PROP: %[[IN:.*]] = shard.shard %{{.*}} to %[[B]] annotate_for_users : tensor<8x28x28x1xf32>
//       PROP: %[[PAD:.*]] = tensor.pad %[[IN]] low[0, 1, 1, 0] high[0, 1, 1, 0]
//       PROP: shard.shard %[[PAD]] to %[[B]] : tensor<8x30x30x1xf32>

// SPMD-LABEL: func.func @pad_batch
//  SPMD-SAME: (%[[IN:.*]]: tensor<4x28x28x1xf32>) -> tensor<4x30x30x1xf32>
//  SPMD-NEXT: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
//  SPMD-NEXT: %[[PAD:.*]] = tensor.pad %[[IN]] low[0, 1, 1, 0] high[0, 1, 1, 0]
//       SPMD:   tensor.yield %[[ZERO]] : f32
//  SPMD-NEXT: } : tensor<4x28x28x1xf32> to tensor<4x30x30x1xf32>
//  SPMD-NEXT: return %[[PAD]]
func.func @pad_batch(%in: tensor<8x28x28x1xf32>) -> tensor<8x30x30x1xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %in_s = shard.shard %in to %s : tensor<8x28x28x1xf32>
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %in_s low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<8x28x28x1xf32> to tensor<8x30x30x1xf32>
  return %p : tensor<8x30x30x1xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Height split on a padded dimension: gathered first, the batch split stays.

// PROP-LABEL: func.func @pad_height
//       PROP: %[[HB:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [1]] :
//       PROP: %[[ANN:.*]] = shard.shard %arg0 to %[[HB]] : tensor<8x28x28x1xf32>
//       PROP: %[[B:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] :
//       PROP: %[[IN:.*]] = shard.shard %[[ANN]] to %[[B]] annotate_for_users : tensor<8x28x28x1xf32>
//       PROP: %[[PAD:.*]] = tensor.pad %[[IN]]
//       PROP: shard.shard %[[PAD]] to %[[B]] : tensor<8x30x30x1xf32>

// SPMD-LABEL: func.func @pad_height
//  SPMD-SAME: (%[[IN:.*]]: tensor<4x7x28x1xf32>) -> tensor<4x30x30x1xf32>
//       SPMD: %[[WHOLE:.*]] = shard.all_gather %[[IN]] on @grid grid_axes = [1] gather_axis = 1 : tensor<4x7x28x1xf32> -> tensor<4x28x28x1xf32>
//  SPMD-NEXT: tensor.pad %[[WHOLE]] low[0, 1, 1, 0] high[0, 1, 1, 0]
//       SPMD: } : tensor<4x28x28x1xf32> to tensor<4x30x30x1xf32>
func.func @pad_height(%in: tensor<8x28x28x1xf32>) -> tensor<8x30x30x1xf32> {
  %s = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %in_s = shard.shard %in to %s : tensor<8x28x28x1xf32>
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %in_s low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<8x28x28x1xf32> to tensor<8x30x30x1xf32>
  return %p : tensor<8x30x30x1xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Backward: a split asked of the result's channels (unpadded) reaches the
// source; a split asked of its padded width does not (sliced after the pad).

// PROP-LABEL: func.func @pad_result_split
//       PROP: %[[C:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [], [], [1]] :
//       PROP: %[[IN:.*]] = shard.shard %arg0 to %[[C]] annotate_for_users : tensor<8x28x28x4xf32>
//       PROP: %[[PAD:.*]] = tensor.pad %[[IN]]
//       PROP: shard.shard %[[PAD]] to %[[C]] : tensor<8x30x30x4xf32>

// SPMD-LABEL: func.func @pad_result_split
//  SPMD-SAME: (%[[IN:.*]]: tensor<8x28x28x1xf32>) -> tensor<8x30x15x1xf32>
//       SPMD: %[[PAD:.*]] = tensor.pad %[[IN]] low[0, 1, 1, 0] high[0, 1, 1, 0]
//       SPMD: } : tensor<8x28x28x1xf32> to tensor<8x30x30x1xf32>
//  SPMD-NEXT: shard.all_slice %[[PAD]] on @grid grid_axes = [0] slice_axis = 2 : tensor<8x30x30x1xf32> -> tensor<8x30x15x1xf32>
func.func @pad_result_split(%in: tensor<8x28x28x4xf32>) -> tensor<8x30x30x4xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %in low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<8x28x28x4xf32> to tensor<8x30x30x4xf32>
  %s = shard.sharding @grid split_axes = [[], [], [0], [1]] : !shard.sharding
  %p_s = shard.shard %p to %s : tensor<8x30x30x4xf32>
  return %p_s : tensor<8x30x30x4xf32>
}
