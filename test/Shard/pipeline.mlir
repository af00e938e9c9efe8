// Whole forward passes as the compiler emits them (inits from tensor.empty +
// linalg.fill placed before their consumer), through all the models at once,
// with shardc's pipelines (Pipeline/PassPipelines.cpp).
//
// shardc-propagate runs propagation forward-backward: with the default backward-forward
// order the forward sweep visits each init before the op that learns its
// sharding, so inits stay unannotated and shard-partition crashes on them
// (MLIR 22). No cse between the passes: it merges equal tensor.empty ops that
// propagation annotated differently, which crashes partition too.
//
// RUN: %shardc-opt %s -split-input-file \
// RUN:   --shardc-propagate --shardc-partition \
// RUN:   | FileCheck %s

shard.grid @grid(shape = 2x4)

// CNN block, data parallel over axis 0: SAME pad -> conv -> relu -> avg pool
// (sum) -> flatten -> dense. Every op runs on its batch half; no collective.

// CHECK-LABEL: func.func @cnn_forward
//  CHECK-SAME: (%[[X:.*]]: tensor<4x28x28x1xf32>, %[[W:.*]]: tensor<3x3x1x32xf32>, %[[D:.*]]: tensor<6272x16xf32>) -> tensor<4x16xf32>
//   CHECK-NOT: shard.
//       CHECK: %[[PAD:.*]] = tensor.pad %[[X]]
//       CHECK: } : tensor<4x28x28x1xf32> to tensor<4x30x30x1xf32>
//       CHECK: %[[CONV:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[PAD]], %[[W]] : tensor<4x30x30x1xf32>, tensor<3x3x1x32xf32>) {{.*}} -> tensor<4x28x28x32xf32>
//       CHECK: %[[RELU:.*]] = linalg.generic {{.*}} ins(%[[CONV]] : tensor<4x28x28x32xf32>)
//       CHECK: %[[POOL:.*]] = linalg.pooling_nhwc_sum {{.*}} ins(%[[RELU]], %{{.*}} : tensor<4x28x28x32xf32>, tensor<2x2xf32>) {{.*}} -> tensor<4x14x14x32xf32>
//       CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[POOL]] {{.*}} into tensor<4x6272xf32>
//       CHECK: %[[Y:.*]] = linalg.matmul ins(%[[FLAT]], %[[D]] : tensor<4x6272xf32>, tensor<6272x16xf32>) {{.*}} -> tensor<4x16xf32>
//   CHECK-NOT: shard.
//       CHECK: return %[[Y]]
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @cnn_forward(%x: tensor<8x28x28x1xf32>, %w: tensor<3x3x1x32xf32>, %d: tensor<6272x16xf32>) -> tensor<8x16xf32> {
  %sx = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %x_s = shard.shard %x to %sx : tensor<8x28x28x1xf32>
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x_s low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<8x28x28x1xf32> to tensor<8x30x30x1xf32>
  %ce = tensor.empty() : tensor<8x28x28x32xf32>
  %cf = linalg.fill ins(%zero : f32) outs(%ce : tensor<8x28x28x32xf32>) -> tensor<8x28x28x32xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
     ins(%p, %w : tensor<8x30x30x1xf32>, tensor<3x3x1x32xf32>) outs(%cf : tensor<8x28x28x32xf32>) -> tensor<8x28x28x32xf32>
  %re = tensor.empty() : tensor<8x28x28x32xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c : tensor<8x28x28x32xf32>) outs(%re : tensor<8x28x28x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x28x28x32xf32>
  %win = tensor.empty() : tensor<2x2xf32>
  %pe = tensor.empty() : tensor<8x14x14x32xf32>
  %pf = linalg.fill ins(%zero : f32) outs(%pe : tensor<8x14x14x32xf32>) -> tensor<8x14x14x32xf32>
  %pool = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
     ins(%r, %win : tensor<8x28x28x32xf32>, tensor<2x2xf32>) outs(%pf : tensor<8x14x14x32xf32>) -> tensor<8x14x14x32xf32>
  %flat = tensor.collapse_shape %pool [[0], [1, 2, 3]] : tensor<8x14x14x32xf32> into tensor<8x6272xf32>
  %de = tensor.empty() : tensor<8x16xf32>
  %df = linalg.fill ins(%zero : f32) outs(%de : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%flat, %d : tensor<8x6272xf32>, tensor<6272x16xf32>) outs(%df : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Megatron MLP block, batch over axis 0, hidden over axis 1: W1 split by
// columns, W2 by rows, one all_reduce over axis 1 and no other collective.

// CHECK-LABEL: func.func @mlp_block
//  CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>, %[[W1:.*]]: tensor<16x8xf32>, %[[W2:.*]]: tensor<8x16xf32>) -> tensor<4x16xf32>
//   CHECK-NOT: shard.all_
//       CHECK: %[[H:.*]] = linalg.matmul ins(%[[X]], %[[W1]] : tensor<4x16xf32>, tensor<16x8xf32>) {{.*}} -> tensor<4x8xf32>
//       CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[H]] : tensor<4x8xf32>)
//   CHECK-NOT: shard.all_
//       CHECK: %[[Y:.*]] = linalg.matmul ins(%[[R]], %[[W2]] : tensor<4x8xf32>, tensor<8x16xf32>) {{.*}} -> tensor<4x16xf32>
//  CHECK-NEXT: %[[SUM:.*]] = shard.all_reduce %[[Y]] on @grid grid_axes = [1] : tensor<4x16xf32> -> tensor<4x16xf32>
//  CHECK-NEXT: return %[[SUM]]
func.func @mlp_block(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %w2: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %sx = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %x_s = shard.shard %x to %sx : tensor<8x16xf32>
  %sw1 = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
  %w1_s = shard.shard %w1 to %sw1 : tensor<16x32xf32>
  %sw2 = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %w2_s = shard.shard %w2 to %sw2 : tensor<32x16xf32>
  %c0 = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %f1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%x_s, %w1_s : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h : tensor<8x32xf32>) outs(%e2 : tensor<8x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %c0 : f32
    linalg.yield %m : f32
  } -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%c0 : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%r, %w2_s : tensor<8x32xf32>, tensor<32x16xf32>) outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
