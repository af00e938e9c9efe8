// MLIR 22's shard-partition reshards a value in one step on one grid axis
// only (split a dimension once more, unsplit its last axis, or move a last
// axis to another dimension). A reshard that needs more is meant to trip an
// assertion that release builds of LLVM compile out: upstream then applies
// the first step it recognises and hands on a value of the wrong local shape
// (UPSTREAM below: the result types are those of no sharding asked for, and
// the contraction fails to verify). That is how the training step of W1
// under test/SPMD/Inputs/reshard-w2.rules broke: the loss gradient
// [[], [model]] used as [[data]] by dx = dy @ W2^T came out [[data], [model]].
//
// shardc-decompose-reshards, which shardc runs right before shard-partition
// (in shardc-partition), breaks such a pair of shard.shard ops into a chain of
// single steps (PLAN), which upstream then partitions correctly (SPMD): splits
// first (local slices that shrink what later collectives move), then the moves
// upstream recognises, then all_gathers.
//
// RUN: %shardc-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(shardc-decompose-reshards))' \
// RUN:   | FileCheck %s --check-prefix=PLAN
// RUN: %shardc-opt %s -split-input-file \
// RUN:   --shardc-partition \
// RUN:   | FileCheck %s --check-prefix=SPMD
// RUN: not %shardc-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(shard-partition,canonicalize))' 2>/dev/null \
// RUN:   | FileCheck %s --check-prefix=UPSTREAM
// RUN: not %shardc-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(shard-partition,canonicalize))' 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=UPSTREAM-ERR

// The failing contraction in small: dx[b, h] = sum_e dy[b, e] * W2[h, e] on
// a 2x4 mesh, dy produced split on e over axis 1 and used split on b over
// axis 0. One slice (local) and one all_gather; the generic sees 4x16.

// PLAN-LABEL: func.func @dx_of_matmul
//       PLAN:   %[[DY:.*]] = shard.shard %arg0 to %{{.*}} : tensor<8x16xf32>
//       PLAN:   %[[USE:.*]] = shard.sharding @mesh split_axes = {{\[\[}}0]] :
//       PLAN:   %[[MID:.*]] = shard.sharding @mesh split_axes = {{\[\[}}0], [1]] :
//       PLAN:   %[[STEP:.*]] = shard.shard %[[DY]] to %[[MID]] : tensor<8x16xf32>
//       PLAN:   shard.shard %[[STEP]] to %[[USE]] annotate_for_users : tensor<8x16xf32>

// SPMD-LABEL: func.func @dx_of_matmul
//  SPMD-SAME:   (%[[DY:.*]]: tensor<8x4xf32>, %[[W:.*]]: tensor<4x16xf32>) -> tensor<4x4xf32>
//       SPMD:   %[[S:.*]] = shard.all_slice %[[DY]] on @mesh grid_axes = [0] slice_axis = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
//       SPMD:   %[[G:.*]] = shard.all_gather %[[S]] on @mesh grid_axes = [1] gather_axis = 1 : tensor<4x4xf32> -> tensor<4x16xf32>
//       SPMD:   linalg.generic {{.*}} ins(%[[G]], %[[W]] : tensor<4x16xf32>, tensor<4x16xf32>) outs(%{{.*}} : tensor<4x4xf32>)

// UPSTREAM-ERR: error: 'linalg.generic' op inferred input/output operand #1 has shape's dimension #1 to be 4, but found 16

shard.grid @mesh(shape = 2x4)
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @dx_of_matmul(%dy: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %s_dy = shard.sharding @mesh split_axes = [[], [1]] : !shard.sharding
  %dy0 = shard.shard %dy to %s_dy : tensor<8x16xf32>
  %s_use = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %dy1 = shard.shard %dy0 to %s_use annotate_for_users : tensor<8x16xf32>
  %s_w = shard.sharding @mesh split_axes = [[1]] : !shard.sharding
  %w0 = shard.shard %w to %s_w : tensor<16x16xf32>
  %w1 = shard.shard %w0 to %s_w annotate_for_users : tensor<16x16xf32>
  %zero = arith.constant dense<0.0> : tensor<8x16xf32>
  %s_out = shard.sharding @mesh split_axes = [[0], [1]] : !shard.sharding
  %z0 = shard.shard %zero to %s_out : tensor<8x16xf32>
  %z1 = shard.shard %z0 to %s_out annotate_for_users : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy1, %w1 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z1 : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %r0 = shard.shard %r to %s_out : tensor<8x16xf32>
  return %r0 : tensor<8x16xf32>
}

// -----

// Two unsplits: two all_gathers (upstream alone does the first only).

// PLAN-LABEL: func.func @unsplit_both
//       PLAN:   shard.sharding @mesh split_axes = {{\[\[}}], [1]] :

// SPMD-LABEL: func.func @unsplit_both
//  SPMD-SAME:   (%[[X:.*]]: tensor<4x4xf32>) -> tensor<8x16xf32>
//       SPMD:   %[[G0:.*]] = shard.all_gather %[[X]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
//       SPMD:   shard.all_gather %[[G0]] on @mesh grid_axes = [1] gather_axis = 1 : tensor<8x4xf32> -> tensor<8x16xf32>

// UPSTREAM-LABEL: func.func @unsplit_both
//  UPSTREAM-SAME:   -> tensor<8x4xf32>

shard.grid @mesh(shape = 2x4)
func.func @unsplit_both(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %s0 = shard.sharding @mesh split_axes = [[0], [1]] : !shard.sharding
  %a = shard.shard %x to %s0 : tensor<8x16xf32>
  %s1 = shard.sharding @mesh split_axes = [[]] : !shard.sharding
  %b = shard.shard %a to %s1 annotate_for_users : tensor<8x16xf32>
  return %b : tensor<8x16xf32>
}

// -----

// One step (W2's all_to_all in the forward pass): left to upstream as is.

// PLAN-LABEL: func.func @one_move
//  PLAN-NEXT:   shard.sharding
//  PLAN-NEXT:   %[[A:.*]] = shard.shard %arg0
//  PLAN-NEXT:   shard.sharding
//  PLAN-NEXT:   shard.shard %[[A]] to %{{.*}} annotate_for_users

// SPMD-LABEL: func.func @one_move
//  SPMD-SAME:   (%[[X:.*]]: tensor<2x16xf32>) -> tensor<8x4xf32>
//  SPMD-NEXT:   shard.all_to_all %[[X]] on @mesh grid_axes = [1] split_axis = 1 concat_axis = 0 : tensor<2x16xf32> -> tensor<8x4xf32>
//  SPMD-NEXT:   return

shard.grid @mesh(shape = 2x4)
func.func @one_move(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %s0 = shard.sharding @mesh split_axes = [[1]] : !shard.sharding
  %a = shard.shard %x to %s0 : tensor<8x16xf32>
  %s1 = shard.sharding @mesh split_axes = [[], [1]] : !shard.sharding
  %b = shard.shard %a to %s1 annotate_for_users : tensor<8x16xf32>
  return %b : tensor<8x16xf32>
}

// -----

// Moving the inner axis of [[0, 1]] is no move upstream recognises (it
// wants the rest of the source dimension to equal the target dimension):
// all_gather, then all_slice.

// SPMD-LABEL: func.func @move_of_inner_axis
//  SPMD-SAME:   (%[[X:.*]]: tensor<1x16xf32>) -> tensor<4x4xf32>
//       SPMD:   %[[G:.*]] = shard.all_gather %[[X]] on @mesh grid_axes = [1] gather_axis = 0 : tensor<1x16xf32> -> tensor<4x16xf32>
//       SPMD:   shard.all_slice %[[G]] on @mesh grid_axes = [1] slice_axis = 1 : tensor<4x16xf32> -> tensor<4x4xf32>

// UPSTREAM-LABEL: func.func @move_of_inner_axis
//  UPSTREAM-SAME:   -> tensor<1x4xf32>

shard.grid @mesh(shape = 2x4)
func.func @move_of_inner_axis(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %s0 = shard.sharding @mesh split_axes = [[0, 1]] : !shard.sharding
  %a = shard.shard %x to %s0 : tensor<8x16xf32>
  %s1 = shard.sharding @mesh split_axes = [[0], [1]] : !shard.sharding
  %b = shard.shard %a to %s1 annotate_for_users : tensor<8x16xf32>
  return %b : tensor<8x16xf32>
}

// -----

// Swapping the axes of two dimensions: all_gather, all_to_all, all_slice.

// SPMD-LABEL: func.func @swap
//  SPMD-SAME:   (%[[X:.*]]: tensor<4x4xf32>) -> tensor<2x8xf32>
//       SPMD:   %[[G:.*]] = shard.all_gather %[[X]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
//       SPMD:   %[[M:.*]] = shard.all_to_all %[[G]] on @mesh grid_axes = [1] split_axis = 0 concat_axis = 1 : tensor<8x4xf32> -> tensor<2x16xf32>
//       SPMD:   shard.all_slice %[[M]] on @mesh grid_axes = [0] slice_axis = 1 : tensor<2x16xf32> -> tensor<2x8xf32>

// UPSTREAM-LABEL: func.func @swap
//  UPSTREAM-SAME:   -> tensor<8x2xf32>

shard.grid @mesh(shape = 2x4)
func.func @swap(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %s0 = shard.sharding @mesh split_axes = [[0], [1]] : !shard.sharding
  %a = shard.shard %x to %s0 : tensor<8x16xf32>
  %s1 = shard.sharding @mesh split_axes = [[1], [0]] : !shard.sharding
  %b = shard.shard %a to %s1 annotate_for_users : tensor<8x16xf32>
  return %b : tensor<8x16xf32>
}
