// Sharding models of tensor.collapse_shape / tensor.expand_shape: in row-major
// order a split of a reassociation group's head (outermost non-unit dim) is a
// split of the collapsed dim into the same contiguous blocks, provided the
// rest of the group is whole; anything else is made whole first.
//
// RUN: %shardc-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(sharding-propagation,cse))' \
// RUN:   | FileCheck %s --check-prefix=PROP
// RUN: %shardc-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(sharding-propagation,cse),func.func(shard-partition,canonicalize))' \
// RUN:   | FileCheck %s --check-prefix=SPMD

shard.grid @grid(shape = 2x4)

// Flatten of NHWC with the batch split: the split carries to the rows.

// PROP-LABEL: func.func @collapse_flatten
//       PROP: %[[B:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] :
//       PROP: %[[IN:.*]] = shard.shard %{{.*}} to %[[B]] annotate_for_users : tensor<8x7x7x64xf32>
//       PROP: %[[R:.*]] = tensor.collapse_shape %[[IN]]
//       PROP: shard.shard %[[R]] to %[[B]] : tensor<8x3136xf32>

// SPMD-LABEL: func.func @collapse_flatten
//  SPMD-SAME: (%[[IN:.*]]: tensor<4x7x7x64xf32>) -> tensor<4x3136xf32>
//  SPMD-NEXT: tensor.collapse_shape %[[IN]] {{\[\[}}0], [1, 2, 3]] : tensor<4x7x7x64xf32> into tensor<4x3136xf32>
func.func @collapse_flatten(%in: tensor<8x7x7x64xf32>) -> tensor<8x3136xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %in_s = shard.shard %in to %s : tensor<8x7x7x64xf32>
  %r = tensor.collapse_shape %in_s [[0], [1, 2, 3]] : tensor<8x7x7x64xf32> into tensor<8x3136xf32>
  return %r : tensor<8x3136xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// The head of group [1, 2, 3] is split, the rest whole: each rank holds a
// contiguous block of the collapsed dimension.

// PROP-LABEL: func.func @collapse_head
//       PROP: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [1]] :
//       PROP: %[[IN:.*]] = shard.shard %{{.*}} to %[[S]] annotate_for_users : tensor<8x64x7x7xf32>
//       PROP: %[[R:.*]] = tensor.collapse_shape %[[IN]]
//       PROP: shard.shard %[[R]] to %[[S]] : tensor<8x3136xf32>

// SPMD-LABEL: func.func @collapse_head
//  SPMD-SAME: (%[[IN:.*]]: tensor<4x16x7x7xf32>) -> tensor<4x784xf32>
//  SPMD-NEXT: tensor.collapse_shape %[[IN]] {{\[\[}}0], [1, 2, 3]] : tensor<4x16x7x7xf32> into tensor<4x784xf32>
func.func @collapse_head(%in: tensor<8x64x7x7xf32>) -> tensor<8x3136xf32> {
  %s = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %in_s = shard.shard %in to %s : tensor<8x64x7x7xf32>
  %r = tensor.collapse_shape %in_s [[0], [1, 2, 3]] : tensor<8x64x7x7xf32> into tensor<8x3136xf32>
  return %r : tensor<8x3136xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// An inner dimension of the group is split: the blocks would interleave, so
// the group is gathered first.

// PROP-LABEL: func.func @collapse_inner
//       PROP: %[[B:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] :
//       PROP: %[[IN:.*]] = shard.shard %{{.*}} to %[[B]] annotate_for_users : tensor<8x7x7x64xf32>
//       PROP: %[[R:.*]] = tensor.collapse_shape %[[IN]]
//       PROP: shard.shard %[[R]] to %[[B]] : tensor<8x3136xf32>

// SPMD-LABEL: func.func @collapse_inner
//  SPMD-SAME: (%[[IN:.*]]: tensor<4x7x7x16xf32>) -> tensor<4x3136xf32>
//  SPMD-NEXT: %[[WHOLE:.*]] = shard.all_gather %[[IN]] on @grid grid_axes = [1] gather_axis = 3 : tensor<4x7x7x16xf32> -> tensor<4x7x7x64xf32>
//  SPMD-NEXT: tensor.collapse_shape %[[WHOLE]] {{\[\[}}0], [1, 2, 3]] : tensor<4x7x7x64xf32> into tensor<4x3136xf32>
func.func @collapse_inner(%in: tensor<8x7x7x64xf32>) -> tensor<8x3136xf32> {
  %s = shard.sharding @grid split_axes = [[0], [], [], [1]] : !shard.sharding
  %in_s = shard.shard %in to %s : tensor<8x7x7x64xf32>
  %r = tensor.collapse_shape %in_s [[0], [1, 2, 3]] : tensor<8x7x7x64xf32> into tensor<8x3136xf32>
  return %r : tensor<8x3136xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Leading unit dimensions do not count: the head of [1, 2, 3] is dim 3.

// PROP-LABEL: func.func @collapse_unit_head
//       PROP: tensor.collapse_shape
//       PROP: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [1]] :
//       PROP: shard.shard %{{.*}} to %[[S]] : tensor<8x64xf32>

// SPMD-LABEL: func.func @collapse_unit_head
//  SPMD-SAME: (%[[IN:.*]]: tensor<4x1x1x16xf32>) -> tensor<4x16xf32>
//  SPMD-NEXT: tensor.collapse_shape %[[IN]] {{\[\[}}0], [1, 2, 3]] : tensor<4x1x1x16xf32> into tensor<4x16xf32>
func.func @collapse_unit_head(%in: tensor<8x1x1x64xf32>) -> tensor<8x64xf32> {
  %s = shard.sharding @grid split_axes = [[0], [], [], [1]] : !shard.sharding
  %in_s = shard.shard %in to %s : tensor<8x1x1x64xf32>
  %r = tensor.collapse_shape %in_s [[0], [1, 2, 3]] : tensor<8x1x1x64xf32> into tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Backward: the collapsed split goes to the head (4 rows over 4 devices).

// PROP-LABEL: func.func @collapse_result_split
//       PROP: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [1]] :
//       PROP: %[[IN:.*]] = shard.shard %arg0 to %[[S]] annotate_for_users : tensor<8x4x7x64xf32>

// SPMD-LABEL: func.func @collapse_result_split
//  SPMD-SAME: (%[[IN:.*]]: tensor<4x1x7x64xf32>) -> tensor<4x448xf32>
//  SPMD-NEXT: tensor.collapse_shape %[[IN]] {{\[\[}}0], [1, 2, 3]] : tensor<4x1x7x64xf32> into tensor<4x448xf32>
func.func @collapse_result_split(%in: tensor<8x4x7x64xf32>) -> tensor<8x1792xf32> {
  %r = tensor.collapse_shape %in [[0], [1, 2, 3]] : tensor<8x4x7x64xf32> into tensor<8x1792xf32>
  %s = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %r_s = shard.shard %r to %s : tensor<8x1792xf32>
  return %r_s : tensor<8x1792xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Backward, but the head (7) does not divide over 4 devices: the collapse
// runs on whole rows and the result is sliced after it.

// PROP-LABEL: func.func @collapse_result_nondivisible
//       PROP: %[[B:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] :
//       PROP: shard.shard %arg0 to %[[B]] annotate_for_users : tensor<8x7x7x64xf32>

// SPMD-LABEL: func.func @collapse_result_nondivisible
//  SPMD-SAME: (%[[IN:.*]]: tensor<4x7x7x64xf32>) -> tensor<4x784xf32>
//  SPMD-NEXT: %[[R:.*]] = tensor.collapse_shape %[[IN]] {{\[\[}}0], [1, 2, 3]] : tensor<4x7x7x64xf32> into tensor<4x3136xf32>
//  SPMD-NEXT: shard.all_slice %[[R]] on @grid grid_axes = [1] slice_axis = 1 : tensor<4x3136xf32> -> tensor<4x784xf32>
func.func @collapse_result_nondivisible(%in: tensor<8x7x7x64xf32>) -> tensor<8x3136xf32> {
  %r = tensor.collapse_shape %in [[0], [1, 2, 3]] : tensor<8x7x7x64xf32> into tensor<8x3136xf32>
  %s = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %r_s = shard.shard %r to %s : tensor<8x3136xf32>
  return %r_s : tensor<8x3136xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Expand: the source split goes to the head of its group (64 over 4).

// PROP-LABEL: func.func @expand_head
//       PROP: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [1]] :
//       PROP: %[[IN:.*]] = shard.shard %{{.*}} to %[[S]] annotate_for_users : tensor<8x3136xf32>
//       PROP: %[[R:.*]] = tensor.expand_shape %[[IN]]
//       PROP: shard.shard %[[R]] to %[[S]] : tensor<8x64x7x7xf32>

// SPMD-LABEL: func.func @expand_head
//  SPMD-SAME: (%[[IN:.*]]: tensor<4x784xf32>) -> tensor<4x16x7x7xf32>
//  SPMD-NEXT: tensor.expand_shape %[[IN]] {{\[\[}}0], [1, 2, 3]] output_shape [4, 16, 7, 7] : tensor<4x784xf32> into tensor<4x16x7x7xf32>
func.func @expand_head(%in: tensor<8x3136xf32>) -> tensor<8x64x7x7xf32> {
  %s = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %in_s = shard.shard %in to %s : tensor<8x3136xf32>
  %r = tensor.expand_shape %in_s [[0], [1, 2, 3]] output_shape [8, 64, 7, 7] : tensor<8x3136xf32> into tensor<8x64x7x7xf32>
  return %r : tensor<8x64x7x7xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Expand whose head (7) does not divide over 4 devices: gathered first.

// PROP-LABEL: func.func @expand_nondivisible
//       PROP: %[[B:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] :
//       PROP: %[[IN:.*]] = shard.shard %{{.*}} to %[[B]] annotate_for_users : tensor<8x3136xf32>
//       PROP: %[[R:.*]] = tensor.expand_shape %[[IN]]
//       PROP: shard.shard %[[R]] to %[[B]] : tensor<8x7x7x64xf32>

// SPMD-LABEL: func.func @expand_nondivisible
//  SPMD-SAME: (%[[IN:.*]]: tensor<4x784xf32>) -> tensor<4x7x7x64xf32>
//  SPMD-NEXT: %[[WHOLE:.*]] = shard.all_gather %[[IN]] on @grid grid_axes = [1] gather_axis = 1 : tensor<4x784xf32> -> tensor<4x3136xf32>
//  SPMD-NEXT: tensor.expand_shape %[[WHOLE]] {{\[\[}}0], [1, 2, 3]] output_shape [4, 7, 7, 64] : tensor<4x3136xf32> into tensor<4x7x7x64xf32>
func.func @expand_nondivisible(%in: tensor<8x3136xf32>) -> tensor<8x7x7x64xf32> {
  %s = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %in_s = shard.shard %in to %s : tensor<8x3136xf32>
  %r = tensor.expand_shape %in_s [[0], [1, 2, 3]] output_shape [8, 7, 7, 64] : tensor<8x3136xf32> into tensor<8x7x7x64xf32>
  return %r : tensor<8x7x7x64xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Backward: a split head of the expanded result reaches the source.

// PROP-LABEL: func.func @expand_result_split
//       PROP: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [1]] :
//       PROP: shard.shard %arg0 to %[[S]] annotate_for_users : tensor<8x3136xf32>

// SPMD-LABEL: func.func @expand_result_split
//  SPMD-SAME: (%[[IN:.*]]: tensor<4x784xf32>) -> tensor<4x16x7x7xf32>
//  SPMD-NEXT: tensor.expand_shape %[[IN]] {{\[\[}}0], [1, 2, 3]] output_shape [4, 16, 7, 7] : tensor<4x784xf32> into tensor<4x16x7x7xf32>
func.func @expand_result_split(%in: tensor<8x3136xf32>) -> tensor<8x64x7x7xf32> {
  %r = tensor.expand_shape %in [[0], [1, 2, 3]] output_shape [8, 64, 7, 7] : tensor<8x3136xf32> into tensor<8x64x7x7xf32>
  %s = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %r_s = shard.shard %r to %s : tensor<8x64x7x7xf32>
  return %r_s : tensor<8x64x7x7xf32>
}
