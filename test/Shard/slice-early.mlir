// shardc-slice-early: an all_slice of a value computed whole rises above the
// ops that computed it, so each rank computes only its block; it stops where a
// block of the result is not made of blocks of the operands.
// RUN: %shardc-opt %s --shardc-slice-early | FileCheck %s

shard.grid @mesh(shape = 2x4)

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Elementwise with a broadcast operand: the operand that holds the sliced loop
// is sliced, the broadcast one is not, the empty init shrinks.
// CHECK-LABEL: func.func @elementwise
// CHECK-NEXT:  %[[X:.*]] = shard.all_slice %arg0 on @mesh grid_axes = [1] slice_axis = 1 : tensor<8x64xf32> -> tensor<8x16xf32>
// CHECK-NEXT:  %[[E:.*]] = tensor.empty() : tensor<8x16xf32>
// CHECK-NEXT:  %[[R:.*]] = linalg.generic {{.*}} ins(%[[X]], %arg1 : tensor<8x16xf32>, tensor<8xf32>) outs(%[[E]] : tensor<8x16xf32>)
// CHECK:       return %[[R]]
func.func @elementwise(%x: tensor<8x64xf32>, %row: tensor<8xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x64xf32>
  %0 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %row : tensor<8x64xf32>, tensor<8xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x64xf32>
  %1 = shard.all_slice %0 on @mesh grid_axes = [1] slice_axis = 1 : tensor<8x64xf32> -> tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// W2's avg_pool backward under `maps2 -> model`: the window sum over the
// padded gradient, sliced on channels, rises through the generic (channels
// are a plain loop), the zero init, the pad and the collapse, and stops at
// the expand_shape, whose channels are the inner part of one dimension.
#pool_in = affine_map<(n, h, w, c, kh, kw) -> (n, h + kh, w + kw, c)>
#pool_win = affine_map<(n, h, w, c, kh, kw) -> (kh, kw)>
#pool_out = affine_map<(n, h, w, c, kh, kw) -> (n, h, w, c)>
// CHECK-LABEL: func.func @pool_backward
// CHECK-DAG:   %[[INIT:.*]] = arith.constant dense<0.000000e+00> : tensor<2x4x4x16xf32>
// CHECK-DAG:   arith.constant 0.000000e+00 : f32
// CHECK:       %[[EX:.*]] = tensor.expand_shape %arg0
// CHECK-NEXT:  %[[S:.*]] = shard.all_slice %[[EX]] on @mesh grid_axes = [0] slice_axis = 5 : tensor<2x2x1x2x1x32xf32> -> tensor<2x2x1x2x1x16xf32>
// CHECK-NEXT:  %[[P1:.*]] = tensor.pad %[[S]]
// CHECK:       tensor<2x2x1x2x1x16xf32> to tensor<2x2x2x2x2x16xf32>
// CHECK-NEXT:  %[[C:.*]] = tensor.collapse_shape %[[P1]] {{.*}} into tensor<2x4x4x16xf32>
// CHECK-NEXT:  %[[P2:.*]] = tensor.pad %[[C]]
// CHECK:       tensor<2x4x4x16xf32> to tensor<2x5x5x16xf32>
// CHECK-NEXT:  %[[R:.*]] = linalg.generic {{.*}} ins(%[[P2]], %arg1 : tensor<2x5x5x16xf32>, tensor<2x2xf32>) outs(%[[INIT]] : tensor<2x4x4x16xf32>)
// CHECK-NOT:   shard.all_slice
// CHECK:       return %[[R]]
func.func @pool_backward(%dflat: tensor<2x128xf32>, %window: tensor<2x2xf32>) -> tensor<2x4x4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %init = arith.constant dense<0.0> : tensor<2x4x4x32xf32>
  %ex = tensor.expand_shape %dflat [[0], [1, 2, 3, 4, 5]] output_shape [2, 2, 1, 2, 1, 32] : tensor<2x128xf32> into tensor<2x2x1x2x1x32xf32>
  %p1 = tensor.pad %ex low[0, 0, 0, 0, 0, 0] high[0, 0, 1, 0, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index, %i5: index):
    tensor.yield %zero : f32
  } : tensor<2x2x1x2x1x32xf32> to tensor<2x2x2x2x2x32xf32>
  %c = tensor.collapse_shape %p1 [[0], [1, 2], [3, 4], [5]] : tensor<2x2x2x2x2x32xf32> into tensor<2x4x4x32xf32>
  %p2 = tensor.pad %c low[0, 1, 1, 0] high[0, 0, 0, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %zero : f32
  } : tensor<2x4x4x32xf32> to tensor<2x5x5x32xf32>
  %sum = linalg.generic {indexing_maps = [#pool_in, #pool_win, #pool_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%p2, %window : tensor<2x5x5x32xf32>, tensor<2x2xf32>) outs(%init : tensor<2x4x4x32xf32>) {
  ^bb0(%in: f32, %w: f32, %out: f32):
    %a = arith.addf %out, %in : f32
    linalg.yield %a : f32
  } -> tensor<2x4x4x32xf32>
  %mine = shard.all_slice %sum on @mesh grid_axes = [0] slice_axis = 3 : tensor<2x4x4x32xf32> -> tensor<2x4x4x16xf32>
  return %mine : tensor<2x4x4x16xf32>
}

// Left alone: the body reads the sliced loop's index (one_hot), the result
// has another use, the sliced dimension's loop is inside a window (h + kh),
// the sliced dimension is padded.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: shard.all_slice %{{[0-9a-z]+}} on
func.func @kept(%labels: tensor<8xi32>, %x: tensor<8x64xf32>, %p: tensor<2x5x5x32xf32>, %window: tensor<2x2xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x64xf32>, tensor<2x1x4x32xf32>, tensor<8x20xf32>) {
  %e = tensor.empty() : tensor<8x64xf32>
  %0 = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%labels : tensor<8xi32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%l: i32, %out: f32):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %hit = arith.cmpi eq, %l, %ii : i32
    %f = arith.uitofp %hit : i1 to f32
    linalg.yield %f : f32
  } -> tensor<8x64xf32>
  %1 = shard.all_slice %0 on @mesh grid_axes = [1] slice_axis = 1 : tensor<8x64xf32> -> tensor<8x16xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%a: f32, %out: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<8x64xf32>
  %3 = shard.all_slice %2 on @mesh grid_axes = [1] slice_axis = 1 : tensor<8x64xf32> -> tensor<8x16xf32>
  %init = arith.constant dense<0.0> : tensor<2x4x4x32xf32>
  %4 = linalg.generic {indexing_maps = [#pool_in, #pool_win, #pool_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%p, %window : tensor<2x5x5x32xf32>, tensor<2x2xf32>) outs(%init : tensor<2x4x4x32xf32>) {
  ^bb0(%in: f32, %w: f32, %out: f32):
    %a = arith.addf %out, %in : f32
    linalg.yield %a : f32
  } -> tensor<2x4x4x32xf32>
  %5 = shard.all_slice %4 on @mesh grid_axes = [1] slice_axis = 1 : tensor<2x4x4x32xf32> -> tensor<2x1x4x32xf32>
  %zero = arith.constant 0.0 : f32
  %6 = tensor.pad %x low[0, 8] high[0, 8] {
  ^bb0(%i0: index, %i1: index):
    tensor.yield %zero : f32
  } : tensor<8x64xf32> to tensor<8x80xf32>
  %7 = shard.all_slice %6 on @mesh grid_axes = [1] slice_axis = 1 : tensor<8x80xf32> -> tensor<8x20xf32>
  return %1, %3, %2, %5, %7 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x64xf32>, tensor<2x1x4x32xf32>, tensor<8x20xf32>
}

// A gradient all-reduced over `data` (axis 0) and then sliced over `model`
// (axis 1): the blocks are reduced. Its split-reduction init (scf.if: the
// zero init on one rank of the group, a fill on the others) yields blocks,
// and the matmul computes only the rows this rank keeps.
#lhsT = affine_map<(i, j, k) -> (k, i)>
#rhs = affine_map<(i, j, k) -> (k, j)>
#out = affine_map<(i, j, k) -> (i, j)>
// CHECK-LABEL: func.func @reduced_gradient
// CHECK-DAG:   %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : tensor<16x8xf32>
// CHECK:       %[[INIT:.*]] = scf.if %arg2 -> (tensor<16x8xf32>) {
// CHECK-NEXT:    scf.yield %[[ZEROS]] : tensor<16x8xf32>
// CHECK-NEXT:  } else {
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<16x8xf32>
// CHECK-NEXT:    %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<16x8xf32>)
// CHECK-NEXT:    scf.yield %[[F]] : tensor<16x8xf32>
// CHECK:       %[[X:.*]] = shard.all_slice %arg0 on @mesh grid_axes = [1] slice_axis = 1 : tensor<4x64xf32> -> tensor<4x16xf32>
// CHECK-NEXT:  %[[G:.*]] = linalg.generic {{.*}} ins(%[[X]], %arg1 : tensor<4x16xf32>, tensor<4x8xf32>) outs(%[[INIT]] : tensor<16x8xf32>)
// CHECK:       %[[R:.*]] = shard.all_reduce %[[G]] on @mesh grid_axes = [0] : tensor<16x8xf32> -> tensor<16x8xf32>
// CHECK-NEXT:  return %[[R]]
func.func @reduced_gradient(%x: tensor<4x64xf32>, %dy: tensor<4x8xf32>, %lead: i1) -> tensor<16x8xf32> {
  %zeros = arith.constant dense<0.0> : tensor<64x8xf32>
  %init = scf.if %lead -> (tensor<64x8xf32>) {
    scf.yield %zeros : tensor<64x8xf32>
  } else {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<64x8xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x8xf32>) -> tensor<64x8xf32>
    scf.yield %f : tensor<64x8xf32>
  }
  %dw = linalg.generic {indexing_maps = [#lhsT, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %dy : tensor<4x64xf32>, tensor<4x8xf32>) outs(%init : tensor<64x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<64x8xf32>
  %sum = shard.all_reduce %dw on @mesh grid_axes = [0] : tensor<64x8xf32> -> tensor<64x8xf32>
  %mine = shard.all_slice %sum on @mesh grid_axes = [1] slice_axis = 0 : tensor<64x8xf32> -> tensor<16x8xf32>
  return %mine : tensor<16x8xf32>
}

// Over the same axis the slice stays for shardc-fuse-reduce-scatter.
// CHECK-LABEL: func.func @same_axis
// CHECK-NEXT:  shard.all_reduce %arg0 on @mesh grid_axes = [1]
// CHECK-NEXT:  shard.all_slice
func.func @same_axis(%g: tensor<64x8xf32>) -> tensor<16x8xf32> {
  %sum = shard.all_reduce %g on @mesh grid_axes = [1] : tensor<64x8xf32> -> tensor<64x8xf32>
  %mine = shard.all_slice %sum on @mesh grid_axes = [1] slice_axis = 0 : tensor<64x8xf32> -> tensor<16x8xf32>
  return %mine : tensor<16x8xf32>
}
