// shardc-mark-gradient-syncs: from each op MLIRGen marked as making a parameter's
// gradient, the sum all_reduces and reduce_scatters that reduce it are marked
// shardc.gradient_sync (what --reduce-precision bf16 sends in bfloat16); the mark
// leaves the op that made the gradient, and nothing else is marked.
// RUN: %shardc-opt %s --shardc-mark-gradient-syncs -split-input-file | FileCheck %s

shard.grid @mesh(shape = 2x2)

#id = affine_map<(d0) -> (d0)>

// Data parallel: the gradient's all_reduce; the all_reduce of an activation (not
// reached from a gradient) and a max stay unmarked.
// CHECK-LABEL: func.func @all_reduce
// CHECK:         %[[G:.*]] = linalg.generic
// CHECK-NOT:       shardc.gradient_sync
// CHECK:         shard.all_reduce %[[G]] on @mesh grid_axes = [0] {shardc.gradient_sync}
// CHECK:         shard.all_reduce %{{.*}} on @mesh grid_axes = [1] :
// CHECK:         shard.all_reduce %{{.*}} on @mesh grid_axes = [0] reduction = max :
func.func @all_reduce(%x: tensor<4xf32>, %a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) attrs = {shardc.gradient_sync} {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4xf32>
  %r = shard.all_reduce %g on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %act = shard.all_reduce %a on @mesh grid_axes = [1] : tensor<4xf32> -> tensor<4xf32>
  %m = shard.all_reduce %a on @mesh grid_axes = [0] reduction = max : tensor<4xf32> -> tensor<4xf32>
  return %r, %act, %m : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

shard.grid @mesh(shape = 2x2)

#id = affine_map<(d0) -> (d0)>

// Fully sharded under sequence parallelism: a reduce_scatter over one axis, then,
// after the add of the reduction's init that partitioning puts in between and a
// reshape, an all_reduce over the other.
// CHECK-LABEL: func.func @through_adds
// CHECK:         shard.reduce_scatter %{{.*}} on @mesh grid_axes = [1] scatter_axis = 0 {shardc.gradient_sync}
// CHECK:         linalg.add
// CHECK:         tensor.expand_shape
// CHECK:         shard.all_reduce %{{.*}} on @mesh grid_axes = [0] {shardc.gradient_sync}
func.func @through_adds(%x: tensor<8xf32>, %init: tensor<4xf32>) -> tensor<2x2xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) attrs = {shardc.gradient_sync} {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8xf32>
  %s = shard.reduce_scatter %g on @mesh grid_axes = [1] scatter_axis = 0 : tensor<8xf32> -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %sum = linalg.add ins(%init, %s : tensor<4xf32>, tensor<4xf32>) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  %shaped = tensor.expand_shape %sum [[0, 1]] output_shape [2, 2] : tensor<4xf32> into tensor<2x2xf32>
  %r = shard.all_reduce %shaped on @mesh grid_axes = [0] : tensor<2x2xf32> -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

shard.grid @mesh(shape = 2x2)

// A gradient summed from two uses: the all_reduces of its pieces, before the add
// that makes it.
// CHECK-LABEL: func.func @pieces
// CHECK:         shard.all_reduce %{{.*}} grid_axes = [0] {shardc.gradient_sync}
// CHECK:         shard.all_reduce %{{.*}} grid_axes = [0] {shardc.gradient_sync}
// CHECK:         linalg.add
// CHECK-NOT:       shardc.gradient_sync
func.func @pieces(%p: tensor<4xf32>, %q: tensor<4xf32>) -> tensor<4xf32> {
  %rp = shard.all_reduce %p on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %rq = shard.all_reduce %q on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %g = linalg.add {shardc.gradient_sync} ins(%rp, %rq : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %g : tensor<4xf32>
}
