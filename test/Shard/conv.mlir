// Sharding model of linalg.conv_2d_nhwc_hwcf (loops n, oh, ow, f, kh, kw, c):
// n, f and c can be split, c being a reduction (partial sums + all_reduce);
// oh, ow, kh, kw stay whole, so a split height is resharded, never computed
// locally.
//
// RUN: %shardc-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(sharding-propagation,cse))' \
// RUN:   | FileCheck %s --check-prefix=PROP
// RUN: %shardc-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(sharding-propagation,cse),func.func(shard-partition,canonicalize))' \
// RUN:   | FileCheck %s --check-prefix=SPMD

shard.grid @grid(shape = 2x4)

// Data parallel: the batch split of the input carries to the output.

// PROP-LABEL: func.func @conv_batch
//      PROP: %[[B:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] :
//      PROP: %[[IN:.*]] = shard.shard %{{.*}} to %[[B]] annotate_for_users : tensor<8x10x10x4xf32>
//      PROP: %[[R:.*]] = shard.sharding @grid split_axes = {{\[\[}}]] :
//      PROP: %[[W:.*]] = shard.shard %arg1 to %[[R]] annotate_for_users : tensor<3x3x4x16xf32>
//      PROP: %[[OUT:.*]] = shard.shard %arg2 to %[[B]] annotate_for_users : tensor<8x8x8x16xf32>
//      PROP: %[[CONV:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[IN]], %[[W]] : {{.*}}) outs(%[[OUT]] :
//      PROP: shard.shard %[[CONV]] to %[[B]] : tensor<8x8x8x16xf32>

// SPMD-LABEL: func.func @conv_batch
//  SPMD-SAME: (%[[IN:.*]]: tensor<4x10x10x4xf32>, %[[W:.*]]: tensor<3x3x4x16xf32>, %[[OUT:.*]]: tensor<4x8x8x16xf32>) -> tensor<4x8x8x16xf32>
//  SPMD-NEXT: %[[CONV:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[IN]], %[[W]] : tensor<4x10x10x4xf32>, tensor<3x3x4x16xf32>) outs(%[[OUT]] : tensor<4x8x8x16xf32>) -> tensor<4x8x8x16xf32>
//  SPMD-NEXT: return %[[CONV]]

func.func @conv_batch(%in: tensor<8x10x10x4xf32>, %w: tensor<3x3x4x16xf32>, %out: tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %in_s = shard.shard %in to %s : tensor<8x10x10x4xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
     ins(%in_s, %w : tensor<8x10x10x4xf32>, tensor<3x3x4x16xf32>) outs(%out : tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32>
  return %r : tensor<8x8x8x16xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Output channels split through the filter, batch through the input.

// PROP-LABEL: func.func @conv_out_channels
//      PROP: %[[F:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [], [], [1]] :
//      PROP: %[[BF:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [], [], [1]] :
//      PROP: %[[OUT:.*]] = shard.shard %arg2 to %[[BF]] annotate_for_users : tensor<8x8x8x16xf32>
//      PROP: %[[CONV:.*]] = linalg.conv_2d_nhwc_hwcf
//      PROP: shard.shard %[[CONV]] to %[[BF]] : tensor<8x8x8x16xf32>

// SPMD-LABEL: func.func @conv_out_channels
//  SPMD-SAME: (%{{.*}}: tensor<4x10x10x4xf32>, %{{.*}}: tensor<3x3x4x4xf32>, %{{.*}}: tensor<4x8x8x4xf32>) -> tensor<4x8x8x4xf32>
//  SPMD-NEXT: %[[CONV:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} -> tensor<4x8x8x4xf32>
//  SPMD-NEXT: return %[[CONV]]

func.func @conv_out_channels(%in: tensor<8x10x10x4xf32>, %w: tensor<3x3x4x16xf32>, %out: tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %in_s = shard.shard %in to %s : tensor<8x10x10x4xf32>
  %sw = shard.sharding @grid split_axes = [[], [], [], [1]] : !shard.sharding
  %w_s = shard.shard %w to %sw : tensor<3x3x4x16xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
     ins(%in_s, %w_s : tensor<8x10x10x4xf32>, tensor<3x3x4x16xf32>) outs(%out : tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32>
  return %r : tensor<8x8x8x16xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Input channels split (a reduction loop): partial sums, then an all_reduce.
// Only rank 0 of each reduction group starts from the zero-filled init.

// PROP-LABEL: func.func @conv_in_channels
//  PROP-DAG: %[[IN:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [], [], [1]] :
//  PROP-DAG: %[[W:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [], [1]] :
//  PROP-DAG: %[[B:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] :
//      PROP: %[[CONV:.*]] = linalg.conv_2d_nhwc_hwcf
//      PROP: shard.shard %[[CONV]] to %[[B]] : tensor<8x8x8x16xf32>

// SPMD-LABEL: func.func @conv_in_channels
//  SPMD-SAME: (%[[IN:.*]]: tensor<4x17x17x2xf32>, %[[W:.*]]: tensor<3x3x2x16xf32>) -> tensor<4x8x8x16xf32>
//   SPMD-DAG: %[[C0:.*]] = arith.constant 0 : index
//   SPMD-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
//       SPMD: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<4x8x8x16xf32>)
//       SPMD: %[[POS:.*]] = shard.process_multi_index on @grid axes = [1] : index
//       SPMD: %[[LEAD:.*]] = arith.cmpi eq, %[[POS]], %[[C0]] : index
//       SPMD: %[[LOCAL_INIT:.*]] = scf.if %[[LEAD]] -> (tensor<4x8x8x16xf32>) {
//  SPMD-NEXT:   scf.yield %[[INIT]] : tensor<4x8x8x16xf32>
//  SPMD-NEXT: } else {
//       SPMD:   %[[NEUTRAL:.*]] = linalg.fill ins(%[[ZERO]] : f32)
//  SPMD-NEXT:   scf.yield %[[NEUTRAL]] : tensor<4x8x8x16xf32>
//       SPMD: %[[PARTIAL:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[IN]], %[[W]] : tensor<4x17x17x2xf32>, tensor<3x3x2x16xf32>) outs(%[[LOCAL_INIT]] : tensor<4x8x8x16xf32>)
//  SPMD-NEXT: %[[SUM:.*]] = shard.all_reduce %[[PARTIAL]] on @grid grid_axes = [1] : tensor<4x8x8x16xf32> -> tensor<4x8x8x16xf32>
//  SPMD-NEXT: return %[[SUM]]

func.func @conv_in_channels(%in: tensor<8x17x17x8xf32>, %w: tensor<3x3x8x16xf32>) -> tensor<8x8x8x16xf32> {
  %s = shard.sharding @grid split_axes = [[0], [], [], [1]] : !shard.sharding
  %in_s = shard.shard %in to %s : tensor<8x17x17x8xf32>
  %sw = shard.sharding @grid split_axes = [[], [], [1]] : !shard.sharding
  %w_s = shard.shard %w to %sw : tensor<3x3x8x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8x8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
     ins(%in_s, %w_s : tensor<8x17x17x8xf32>, tensor<3x3x8x16xf32>) outs(%f : tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32>
  return %r : tensor<8x8x8x16xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Height split on the input: a window straddles two shards, so the conv
// asks for the height whole and propagation inserts the all-gather.

// The input is annotated [[1], [0]]; the conv asks for [[1]]: height whole.
// PROP-LABEL: func.func @conv_height
//      PROP: %[[HB:.*]] = shard.sharding @grid split_axes = {{\[\[}}1], [0]] :
//      PROP: %[[ANN:.*]] = shard.shard %arg0 to %[[HB]] : tensor<8x10x10x4xf32>
//      PROP: %[[B:.*]] = shard.sharding @grid split_axes = {{\[\[}}1]] :
//      PROP: %[[IN:.*]] = shard.shard %[[ANN]] to %[[B]] annotate_for_users : tensor<8x10x10x4xf32>
//      PROP: %[[OUT:.*]] = shard.shard %arg2 to %[[B]] annotate_for_users : tensor<8x8x8x16xf32>
//      PROP: %[[CONV:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[IN]], %{{.*}} : {{.*}}) outs(%[[OUT]] :
//      PROP: shard.shard %[[CONV]] to %[[B]] : tensor<8x8x8x16xf32>

// SPMD-LABEL: func.func @conv_height
//  SPMD-SAME: (%[[IN:.*]]: tensor<2x5x10x4xf32>, %[[W:.*]]: tensor<3x3x4x16xf32>, %[[OUT:.*]]: tensor<2x8x8x16xf32>)
//  SPMD-NEXT: %[[WHOLE:.*]] = shard.all_gather %[[IN]] on @grid grid_axes = [0] gather_axis = 1 : tensor<2x5x10x4xf32> -> tensor<2x10x10x4xf32>
//  SPMD-NEXT: linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[WHOLE]], %[[W]] : tensor<2x10x10x4xf32>, tensor<3x3x4x16xf32>) outs(%[[OUT]] : tensor<2x8x8x16xf32>)

func.func @conv_height(%in: tensor<8x10x10x4xf32>, %w: tensor<3x3x4x16xf32>, %out: tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32> {
  %s = shard.sharding @grid split_axes = [[1], [0]] : !shard.sharding
  %in_s = shard.shard %in to %s : tensor<8x10x10x4xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
     ins(%in_s, %w : tensor<8x10x10x4xf32>, tensor<3x3x4x16xf32>) outs(%out : tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32>
  return %r : tensor<8x8x8x16xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Height split asked of the output: the conv runs whole, then each rank keeps
// its rows (all_slice); the input is never split by height.

// PROP-LABEL: func.func @conv_result_height
//      PROP: %[[R:.*]] = shard.sharding @grid split_axes = {{\[\[}}]] :
//      PROP: shard.shard %arg0 to %[[R]] annotate_for_users : tensor<8x10x10x4xf32>
//      PROP: %[[CONV:.*]] = linalg.conv_2d_nhwc_hwcf
//      PROP: shard.shard %[[CONV]] to %[[R]] : tensor<8x8x8x16xf32>
//      PROP: %[[H:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [1]] :
//      PROP: shard.shard %{{.*}} to %[[H]] : tensor<8x8x8x16xf32>

// SPMD-LABEL: func.func @conv_result_height
//  SPMD-SAME: (%{{.*}}: tensor<8x10x10x4xf32>, %{{.*}}: tensor<3x3x4x16xf32>, %{{.*}}: tensor<8x8x8x16xf32>) -> tensor<8x2x8x16xf32>
//  SPMD-NEXT: %[[CONV:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} -> tensor<8x8x8x16xf32>
//  SPMD-NEXT: shard.all_slice %[[CONV]] on @grid grid_axes = [1] slice_axis = 1 : tensor<8x8x8x16xf32> -> tensor<8x2x8x16xf32>

func.func @conv_result_height(%in: tensor<8x10x10x4xf32>, %w: tensor<3x3x4x16xf32>, %out: tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32> {
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
     ins(%in, %w : tensor<8x10x10x4xf32>, tensor<3x3x4x16xf32>) outs(%out : tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32>
  %s = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
  %r_s = shard.shard %r to %s : tensor<8x8x8x16xf32>
  return %r_s : tensor<8x8x8x16xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Replicated everywhere: the conv stays as it is.

// PROP-LABEL: func.func @conv_replicated
//      PROP: %[[R:.*]] = shard.sharding @grid split_axes = {{\[\[}}]] :
//      PROP: %[[IN:.*]] = shard.shard %{{.*}} to %[[R]] annotate_for_users : tensor<8x10x10x4xf32>
//      PROP: %[[W:.*]] = shard.shard %arg1 to %[[R]] annotate_for_users : tensor<3x3x4x16xf32>
//      PROP: %[[OUT:.*]] = shard.shard %arg2 to %[[R]] annotate_for_users : tensor<8x8x8x16xf32>
//      PROP: %[[CONV:.*]] = linalg.conv_2d_nhwc_hwcf
//      PROP: shard.shard %[[CONV]] to %[[R]] : tensor<8x8x8x16xf32>

// SPMD-LABEL: func.func @conv_replicated
//  SPMD-SAME: (%[[IN:.*]]: tensor<8x10x10x4xf32>, %[[W:.*]]: tensor<3x3x4x16xf32>, %[[OUT:.*]]: tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32>
//  SPMD-NEXT: %[[CONV:.*]] = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%[[IN]], %[[W]] : tensor<8x10x10x4xf32>, tensor<3x3x4x16xf32>) outs(%[[OUT]] : tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32>
//  SPMD-NEXT: return %[[CONV]]

func.func @conv_replicated(%in: tensor<8x10x10x4xf32>, %w: tensor<3x3x4x16xf32>, %out: tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32> {
  %s = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %in_s = shard.shard %in to %s : tensor<8x10x10x4xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
     ins(%in_s, %w : tensor<8x10x10x4xf32>, tensor<3x3x4x16xf32>) outs(%out : tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32>
  return %r : tensor<8x8x8x16xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// No annotation at all: nothing to propagate, nothing to partition.

// PROP-LABEL: func.func @conv_unsharded
//   PROP-NOT: shard.shard
//       PROP: linalg.conv_2d_nhwc_hwcf {{.*}} ins(%arg0, %arg1 : {{.*}}) outs(%arg2 :

// SPMD-LABEL: func.func @conv_unsharded
//  SPMD-SAME: (%[[IN:.*]]: tensor<8x10x10x4xf32>, %[[W:.*]]: tensor<3x3x4x16xf32>, %[[OUT:.*]]: tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32>
//  SPMD-NEXT: linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[IN]], %[[W]] : {{.*}}) outs(%[[OUT]] : tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32>

func.func @conv_unsharded(%in: tensor<8x10x10x4xf32>, %w: tensor<3x3x4x16xf32>, %out: tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32> {
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
     ins(%in, %w : tensor<8x10x10x4xf32>, tensor<3x3x4x16xf32>) outs(%out : tensor<8x8x8x16xf32>) -> tensor<8x8x8x16xf32>
  return %r : tensor<8x8x8x16xf32>
}
