// Sharding of the generics MLIRGen emits for the gradients of a convolution
// and of average pooling, whose maps are not projected permutations
// (`d5 * 2 + d0`, `d1 - d4 + 2`, `(d1 + 1) floordiv 2`). A loop that appears
// in such an expression is never split, and a tensor dimension given by one
// stays whole; the batch and channel loops split as for any linalg op.
// library_call survives both passes.
//
// RUN: %shardc-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(sharding-propagation,cse))' \
// RUN:   | FileCheck %s --check-prefix=PROP
// RUN: %shardc-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(sharding-propagation,cse),func.func(shard-partition,canonicalize))' \
// RUN:   | FileCheck %s --check-prefix=SPMD

shard.grid @grid(shape = 2)

// Filter gradient, data parallel: the batch loop n is a reduction, so every
// rank sums its half of the batch and an all_reduce adds the halves. Only
// rank 0 starts from the init.

// PROP-LABEL: func.func @filter_grad_batch
//      PROP: %[[B:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] :
//      PROP: %[[R:.*]] = shard.sharding @grid split_axes = {{\[\[}}]] :
//      PROP: %[[X:.*]] = shard.shard %{{.*}} to %[[B]] annotate_for_users : tensor<8x9x9x4xf32>
//      PROP: %[[DY:.*]] = shard.shard %arg1 to %[[B]] annotate_for_users : tensor<8x4x4x6xf32>
//      PROP: %[[INIT:.*]] = shard.shard %{{.*}} to %[[R]] annotate_for_users : tensor<3x3x4x6xf32>
//      PROP: %[[DW:.*]] = linalg.generic {{.*}} library_call = "conv2d_filter_grad"} ins(%[[X]], %[[DY]] : {{.*}}) outs(%[[INIT]] :
//      PROP: shard.shard %[[DW]] to %[[R]] : tensor<3x3x4x6xf32>

// SPMD-LABEL: func.func @filter_grad_batch
//  SPMD-SAME: (%[[X:.*]]: tensor<4x9x9x4xf32>, %[[DY:.*]]: tensor<4x4x4x6xf32>) -> tensor<3x3x4x6xf32>
//   SPMD-DAG: %[[C0:.*]] = arith.constant 0 : index
//   SPMD-DAG: %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : tensor<3x3x4x6xf32>
//       SPMD: %[[POS:.*]] = shard.process_multi_index on @grid axes = [0] : index
//       SPMD: %[[LEAD:.*]] = arith.cmpi eq, %[[POS]], %[[C0]] : index
//       SPMD: %[[INIT:.*]] = scf.if %[[LEAD]] -> (tensor<3x3x4x6xf32>) {
//  SPMD-NEXT:   scf.yield %[[ZEROS]] : tensor<3x3x4x6xf32>
//       SPMD: %[[PARTIAL:.*]] = linalg.generic {{.*}} library_call = "conv2d_filter_grad"} ins(%[[X]], %[[DY]] : tensor<4x9x9x4xf32>, tensor<4x4x4x6xf32>) outs(%[[INIT]] : tensor<3x3x4x6xf32>)
//       SPMD: %[[SUM:.*]] = shard.all_reduce %[[PARTIAL]] on @grid grid_axes = [0] : tensor<3x3x4x6xf32> -> tensor<3x3x4x6xf32>
//  SPMD-NEXT: return %[[SUM]]

#xpad = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5 * 2 + d0, d6 * 2 + d1, d2)>
#dy = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
#dw = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @filter_grad_batch(%x: tensor<8x9x9x4xf32>, %dy: tensor<8x4x4x6xf32>) -> tensor<3x3x4x6xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %x_s = shard.shard %x to %s : tensor<8x9x9x4xf32>
  %zero = arith.constant dense<0.0> : tensor<3x3x4x6xf32>
  %r = linalg.generic {indexing_maps = [#xpad, #dy, #dw],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"],
                       library_call = "conv2d_filter_grad"}
      ins(%x_s, %dy : tensor<8x9x9x4xf32>, tensor<8x4x4x6xf32>) outs(%zero : tensor<3x3x4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %q = arith.addf %o, %p : f32
    linalg.yield %q : f32
  } -> tensor<3x3x4x6xf32>
  return %r : tensor<3x3x4x6xf32>
}

// -----

shard.grid @grid(shape = 2x2)

// Batch over axis 0, input channels over axis 1 (2-D): the filter gradient
// is split by its input channel (a parallel loop) and summed over axis 0.

// SPMD-LABEL: func.func @filter_grad_2d
//  SPMD-SAME: (%[[X:.*]]: tensor<4x9x9x2xf32>, %[[DY:.*]]: tensor<4x4x4x6xf32>) -> tensor<3x3x2x6xf32>
//       SPMD: shard.process_multi_index on @grid axes = [0] : index
//       SPMD: %[[PARTIAL:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[DY]] : tensor<4x9x9x2xf32>, tensor<4x4x4x6xf32>) outs(%{{.*}} : tensor<3x3x2x6xf32>)
//       SPMD: %[[SUM:.*]] = shard.all_reduce %[[PARTIAL]] on @grid grid_axes = [0] : tensor<3x3x2x6xf32> -> tensor<3x3x2x6xf32>
//  SPMD-NEXT: return %[[SUM]]

#xpad = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5 * 2 + d0, d6 * 2 + d1, d2)>
#dy = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
#dw = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @filter_grad_2d(%x: tensor<8x9x9x4xf32>, %dy: tensor<8x4x4x6xf32>) -> tensor<3x3x4x6xf32> {
  %s = shard.sharding @grid split_axes = [[0], [], [], [1]] : !shard.sharding
  %x_s = shard.shard %x to %s : tensor<8x9x9x4xf32>
  %sd = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %dy_s = shard.shard %dy to %sd : tensor<8x4x4x6xf32>
  %zero = arith.constant dense<0.0> : tensor<3x3x4x6xf32>
  %r = linalg.generic {indexing_maps = [#xpad, #dy, #dw],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"],
                       library_call = "conv2d_filter_grad"}
      ins(%x_s, %dy_s : tensor<8x9x9x4xf32>, tensor<8x4x4x6xf32>) outs(%zero : tensor<3x3x4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %q = arith.addf %o, %p : f32
    linalg.yield %q : f32
  } -> tensor<3x3x4x6xf32>
  return %r : tensor<3x3x4x6xf32>
}

// -----

shard.grid @grid(shape = 2x2)

// The input split by height, which `d5 * 2 + d0` indexes: the generic asks
// for it whole and propagation gathers it.

// PROP-LABEL: func.func @filter_grad_height
//      PROP: %[[R:.*]] = shard.sharding @grid split_axes = {{\[\[}}]] :
//      PROP: %[[X:.*]] = shard.shard %{{.*}} to %[[R]] annotate_for_users : tensor<8x10x9x4xf32>
//      PROP: linalg.generic {{.*}} ins(%[[X]],

// SPMD-LABEL: func.func @filter_grad_height
//  SPMD-SAME: (%[[X:.*]]: tensor<8x5x9x4xf32>, %[[DY:.*]]: tensor<8x4x4x6xf32>) -> tensor<3x3x4x6xf32>
//       SPMD: %[[WHOLE:.*]] = shard.all_gather %[[X]] on @grid grid_axes = [0] gather_axis = 1 : tensor<8x5x9x4xf32> -> tensor<8x10x9x4xf32>
//  SPMD-NEXT: %[[DW:.*]] = linalg.generic {{.*}} ins(%[[WHOLE]], %[[DY]] : tensor<8x10x9x4xf32>, tensor<8x4x4x6xf32>)
//   SPMD-NOT: shard.
//       SPMD: return %[[DW]]

#xpad = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5 * 2 + d0, d6 * 2 + d1, d2)>
#dy = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
#dw = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @filter_grad_height(%x: tensor<8x10x9x4xf32>, %dy: tensor<8x4x4x6xf32>) -> tensor<3x3x4x6xf32> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %x_s = shard.shard %x to %s : tensor<8x10x9x4xf32>
  %zero = arith.constant dense<0.0> : tensor<3x3x4x6xf32>
  %r = linalg.generic {indexing_maps = [#xpad, #dy, #dw],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"],
                       library_call = "conv2d_filter_grad"}
      ins(%x_s, %dy : tensor<8x10x9x4xf32>, tensor<8x4x4x6xf32>) outs(%zero : tensor<3x3x4x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %q = arith.addf %o, %p : f32
    linalg.yield %q : f32
  } -> tensor<3x3x4x6xf32>
  return %r : tensor<3x3x4x6xf32>
}

// -----

shard.grid @grid(shape = 2x2)

// Input gradient, data parallel: each rank computes its half of dx, no
// collective; the kernel stays replicated.

// PROP-LABEL: func.func @input_grad_batch
//      PROP: %[[B:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] :
//      PROP: %[[DYP:.*]] = shard.shard %{{.*}} to %[[B]] annotate_for_users : tensor<8x9x9x6xf32>
//      PROP: %[[R:.*]] = shard.sharding @grid split_axes = {{\[\[}}]] :
//      PROP: %[[W:.*]] = shard.shard %arg1 to %[[R]] annotate_for_users : tensor<3x3x4x6xf32>
//      PROP: %[[INIT:.*]] = shard.shard %{{.*}} to %[[B]] annotate_for_users : tensor<8x7x7x4xf32>
//      PROP: %[[DX:.*]] = linalg.generic {{.*}} library_call = "conv2d_input_grad"} ins(%[[DYP]], %[[W]] : {{.*}}) outs(%[[INIT]] :
//      PROP: shard.shard %[[DX]] to %[[B]] : tensor<8x7x7x4xf32>

// SPMD-LABEL: func.func @input_grad_batch
//  SPMD-SAME: (%[[DYP:.*]]: tensor<4x9x9x6xf32>, %[[W:.*]]: tensor<3x3x4x6xf32>) -> tensor<4x7x7x4xf32>
//   SPMD-NOT: shard.
//       SPMD: %[[DX:.*]] = linalg.generic {{.*}} library_call = "conv2d_input_grad"} ins(%[[DYP]], %[[W]] : tensor<4x9x9x6xf32>, tensor<3x3x4x6xf32>) outs(%{{.*}} : tensor<4x7x7x4xf32>)
//   SPMD-NOT: shard.
//       SPMD: return %[[DX]]

#dyp = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 - d4 + 2, d2 - d5 + 2, d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d3, d6)>
#dx = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @input_grad_batch(%dyp: tensor<8x9x9x6xf32>, %w: tensor<3x3x4x6xf32>) -> tensor<8x7x7x4xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %dyp_s = shard.shard %dyp to %s : tensor<8x9x9x6xf32>
  %zero = arith.constant dense<0.0> : tensor<8x7x7x4xf32>
  %r = linalg.generic {indexing_maps = [#dyp, #w, #dx],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"],
                       library_call = "conv2d_input_grad"}
      ins(%dyp_s, %w : tensor<8x9x9x6xf32>, tensor<3x3x4x6xf32>) outs(%zero : tensor<8x7x7x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %q = arith.addf %o, %p : f32
    linalg.yield %q : f32
  } -> tensor<8x7x7x4xf32>
  return %r : tensor<8x7x7x4xf32>
}

// -----

shard.grid @grid(shape = 2x2)

// Output channels of the forward convolution (f, a reduction here) split
// over axis 1: partial sums over f, an all_reduce over axis 1.

// SPMD-LABEL: func.func @input_grad_channels
//  SPMD-SAME: (%[[DYP:.*]]: tensor<4x9x9x3xf32>, %[[W:.*]]: tensor<3x3x4x3xf32>) -> tensor<4x7x7x4xf32>
//       SPMD: shard.process_multi_index on @grid axes = [1] : index
//       SPMD: %[[PARTIAL:.*]] = linalg.generic {{.*}} ins(%[[DYP]], %[[W]] : tensor<4x9x9x3xf32>, tensor<3x3x4x3xf32>) outs(%{{.*}} : tensor<4x7x7x4xf32>)
//       SPMD: %[[SUM:.*]] = shard.all_reduce %[[PARTIAL]] on @grid grid_axes = [1] : tensor<4x7x7x4xf32> -> tensor<4x7x7x4xf32>
//  SPMD-NEXT: return %[[SUM]]

#dyp = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 - d4 + 2, d2 - d5 + 2, d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d3, d6)>
#dx = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @input_grad_channels(%dyp: tensor<8x9x9x6xf32>, %w: tensor<3x3x4x6xf32>) -> tensor<8x7x7x4xf32> {
  %s = shard.sharding @grid split_axes = [[0], [], [], [1]] : !shard.sharding
  %dyp_s = shard.shard %dyp to %s : tensor<8x9x9x6xf32>
  %sw = shard.sharding @grid split_axes = [[], [], [], [1]] : !shard.sharding
  %w_s = shard.shard %w to %sw : tensor<3x3x4x6xf32>
  %zero = arith.constant dense<0.0> : tensor<8x7x7x4xf32>
  %r = linalg.generic {indexing_maps = [#dyp, #w, #dx],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"],
                       library_call = "conv2d_input_grad"}
      ins(%dyp_s, %w_s : tensor<8x9x9x6xf32>, tensor<3x3x4x6xf32>) outs(%zero : tensor<8x7x7x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %q = arith.addf %o, %p : f32
    linalg.yield %q : f32
  } -> tensor<8x7x7x4xf32>
  return %r : tensor<8x7x7x4xf32>
}

// -----

shard.grid @grid(shape = 2x2)

// Average-pooling gradient (window 2, padded by 1 in front), batch and
// channels split: purely local.

// SPMD-LABEL: func.func @pool_grad_batch
//  SPMD-SAME: (%[[DY:.*]]: tensor<4x4x4x3xf32>) -> tensor<4x7x7x3xf32>
//   SPMD-NOT: shard.
//       SPMD: %[[DX:.*]] = linalg.generic {{.*}} ins(%[[DY]] : tensor<4x4x4x3xf32>) outs(%{{.*}} : tensor<4x7x7x3xf32>)
//   SPMD-NOT: shard.
//       SPMD: return %[[DX]]

#pool = affine_map<(d0, d1, d2, d3) -> (d0, (d1 + 1) floordiv 2, (d2 + 1) floordiv 2, d3)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @pool_grad_batch(%dy: tensor<8x4x4x6xf32>) -> tensor<8x7x7x6xf32> {
  %s = shard.sharding @grid split_axes = [[0], [], [], [1]] : !shard.sharding
  %dy_s = shard.shard %dy to %s : tensor<8x4x4x6xf32>
  %e = tensor.empty() : tensor<8x7x7x6xf32>
  %quarter = arith.constant 0.25 : f32
  %r = linalg.generic {indexing_maps = [#pool, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%dy_s : tensor<8x4x4x6xf32>) outs(%e : tensor<8x7x7x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %q = arith.mulf %a, %quarter : f32
    linalg.yield %q : f32
  } -> tensor<8x7x7x6xf32>
  return %r : tensor<8x7x7x6xf32>
}

// -----

shard.grid @grid(shape = 2x2)

// Height split in and asked for out: the rows a floordiv reads are not the
// rank's own, so the gradient runs whole between an all_gather and an
// all_slice.

// PROP-LABEL: func.func @pool_grad_height
//      PROP: %[[R:.*]] = shard.sharding @grid split_axes = {{\[\[}}]] :
//      PROP: %[[DX:.*]] = linalg.generic
//      PROP: shard.shard %[[DX]] to %[[R]] : tensor<8x8x8x6xf32>

// SPMD-LABEL: func.func @pool_grad_height
//  SPMD-SAME: (%[[DY:.*]]: tensor<8x2x4x6xf32>) -> tensor<8x4x8x6xf32>
//       SPMD: %[[WHOLE:.*]] = shard.all_gather %[[DY]] on @grid grid_axes = [1] gather_axis = 1 : tensor<8x2x4x6xf32> -> tensor<8x4x4x6xf32>
//       SPMD: %[[DX:.*]] = linalg.generic {{.*}} ins(%[[WHOLE]] : tensor<8x4x4x6xf32>) outs(%{{.*}} : tensor<8x8x8x6xf32>)
//       SPMD: shard.all_slice %[[DX]] on @grid grid_axes = [1] slice_axis = 1 : tensor<8x8x8x6xf32> -> tensor<8x4x8x6xf32>

#pool = affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 2, d2 floordiv 2, d3)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @pool_grad_height(%dy: tensor<8x4x4x6xf32>) -> tensor<8x8x8x6xf32> {
  %s = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
  %dy_s = shard.shard %dy to %s : tensor<8x4x4x6xf32>
  %e = tensor.empty() : tensor<8x8x8x6xf32>
  %quarter = arith.constant 0.25 : f32
  %r = linalg.generic {indexing_maps = [#pool, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%dy_s : tensor<8x4x4x6xf32>) outs(%e : tensor<8x8x8x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %q = arith.mulf %a, %quarter : f32
    linalg.yield %q : f32
  } -> tensor<8x8x8x6xf32>
  %r_s = shard.shard %r to %s : tensor<8x8x8x6xf32>
  return %r_s : tensor<8x8x8x6xf32>
}
