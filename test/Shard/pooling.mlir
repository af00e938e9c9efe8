// Sharding model of linalg.pooling_nhwc_sum / _max (loops n, oh, ow, c, kh,
// kw): n and c can be split; the window loops oh, ow, kh, kw stay whole.
//
// RUN: %shardc-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(sharding-propagation,cse))' \
// RUN:   | FileCheck %s --check-prefix=PROP
// RUN: %shardc-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(sharding-propagation,cse),func.func(shard-partition,canonicalize))' \
// RUN:   | FileCheck %s --check-prefix=SPMD

shard.grid @grid(shape = 2x4)

// Batch and channels split: both carry through the window unchanged; the
// window operand (a tensor.empty) is replicated.

// PROP-LABEL: func.func @pool_sum_batch_channels
//       PROP: %[[BC:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [], [], [1]] :
//       PROP: %[[WIN:.*]] = tensor.empty() : tensor<2x2xf32>
//       PROP: %[[R:.*]] = shard.sharding @grid split_axes = {{\[\[}}]] :
//       PROP: shard.shard %[[WIN]] to %[[R]] : tensor<2x2xf32>
//       PROP: %[[POOL:.*]] = linalg.pooling_nhwc_sum
//       PROP: shard.shard %[[POOL]] to %[[BC]] : tensor<8x4x4x32xf32>

// SPMD-LABEL: func.func @pool_sum_batch_channels
//  SPMD-SAME: (%[[IN:.*]]: tensor<4x8x8x8xf32>) -> tensor<4x4x4x8xf32>
//       SPMD: %[[WIN:.*]] = tensor.empty() : tensor<2x2xf32>
//       SPMD: %[[INIT:.*]] = linalg.fill {{.*}} -> tensor<4x4x4x8xf32>
//  SPMD-NEXT: %[[POOL:.*]] = linalg.pooling_nhwc_sum {{.*}} ins(%[[IN]], %[[WIN]] : tensor<4x8x8x8xf32>, tensor<2x2xf32>) outs(%[[INIT]] : tensor<4x4x4x8xf32>) -> tensor<4x4x4x8xf32>
//  SPMD-NEXT: return %[[POOL]]
func.func @pool_sum_batch_channels(%in: tensor<8x8x8x32xf32>) -> tensor<8x4x4x32xf32> {
  %s = shard.sharding @grid split_axes = [[0], [], [], [1]] : !shard.sharding
  %in_s = shard.shard %in to %s : tensor<8x8x8x32xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4x4x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4x4x32xf32>) -> tensor<8x4x4x32xf32>
  %r = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
     ins(%in_s, %win : tensor<8x8x8x32xf32>, tensor<2x2xf32>) outs(%f : tensor<8x4x4x32xf32>) -> tensor<8x4x4x32xf32>
  return %r : tensor<8x4x4x32xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Height split on the input: gathered before the window, like a convolution.

// PROP-LABEL: func.func @pool_max_height
//       PROP: %[[HB:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [1]] :
//       PROP: %[[ANN:.*]] = shard.shard %arg0 to %[[HB]] : tensor<8x8x8x32xf32>
//       PROP: %[[B:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] :
//       PROP: %[[IN:.*]] = shard.shard %[[ANN]] to %[[B]] annotate_for_users : tensor<8x8x8x32xf32>
//       PROP: %[[POOL:.*]] = linalg.pooling_nhwc_max {{.*}} ins(%[[IN]], %{{.*}} :
//       PROP: shard.shard %[[POOL]] to %[[B]] : tensor<8x4x4x32xf32>

// SPMD-LABEL: func.func @pool_max_height
//  SPMD-SAME: (%[[IN:.*]]: tensor<4x2x8x32xf32>) -> tensor<4x4x4x32xf32>
//       SPMD: %[[WHOLE:.*]] = shard.all_gather %[[IN]] on @grid grid_axes = [1] gather_axis = 1 : tensor<4x2x8x32xf32> -> tensor<4x8x8x32xf32>
//       SPMD: linalg.pooling_nhwc_max {{.*}} ins(%[[WHOLE]], %{{.*}} : tensor<4x8x8x32xf32>, tensor<2x2xf32>) outs(%{{.*}} : tensor<4x4x4x32xf32>) -> tensor<4x4x4x32xf32>
func.func @pool_max_height(%in: tensor<8x8x8x32xf32>) -> tensor<8x4x4x32xf32> {
  %s = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %in_s = shard.shard %in to %s : tensor<8x8x8x32xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<8x4x4x32xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<8x4x4x32xf32>) -> tensor<8x4x4x32xf32>
  %r = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
     ins(%in_s, %win : tensor<8x8x8x32xf32>, tensor<2x2xf32>) outs(%f : tensor<8x4x4x32xf32>) -> tensor<8x4x4x32xf32>
  return %r : tensor<8x4x4x32xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Width split asked of the result: the pooling keeps the batch split and runs
// on whole rows, then each rank keeps its columns.

// PROP-LABEL: func.func @pool_sum_result_width
//       PROP: %[[B:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] :
//       PROP: %[[POOL:.*]] = linalg.pooling_nhwc_sum
//       PROP: %[[ANN:.*]] = shard.shard %[[POOL]] to %[[B]] : tensor<8x4x4x32xf32>
//       PROP: %[[BW:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [], [1]] :

// SPMD-LABEL: func.func @pool_sum_result_width
//  SPMD-SAME: (%[[IN:.*]]: tensor<4x8x8x32xf32>) -> tensor<4x4x1x32xf32>
//       SPMD: %[[POOL:.*]] = linalg.pooling_nhwc_sum {{.*}} ins(%[[IN]], %{{.*}} : tensor<4x8x8x32xf32>, tensor<2x2xf32>) {{.*}} -> tensor<4x4x4x32xf32>
//  SPMD-NEXT: shard.all_slice %[[POOL]] on @grid grid_axes = [1] slice_axis = 2 : tensor<4x4x4x32xf32> -> tensor<4x4x1x32xf32>
func.func @pool_sum_result_width(%in: tensor<8x8x8x32xf32>) -> tensor<8x4x4x32xf32> {
  %win = tensor.empty() : tensor<2x2xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4x4x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4x4x32xf32>) -> tensor<8x4x4x32xf32>
  %r = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
     ins(%in, %win : tensor<8x8x8x32xf32>, tensor<2x2xf32>) outs(%f : tensor<8x4x4x32xf32>) -> tensor<8x4x4x32xf32>
  %s = shard.sharding @grid split_axes = [[0], [], [1]] : !shard.sharding
  %r_s = shard.shard %r to %s : tensor<8x4x4x32xf32>
  return %r_s : tensor<8x4x4x32xf32>
}
