// shardc-combine-all-reduces: an elementwise add of two sum all_reduces over the same
// grid axes, each used only there, adds the partial sums and reduces once; a chain of
// such adds (an attention block's input gradient through q, k and v) ends with one
// all_reduce. Other reductions, other axes, other uses and other ops stay.
// RUN: %shardc-opt %s --shardc-combine-all-reduces | FileCheck %s

shard.grid @mesh(shape = 2x2)

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @chain
// CHECK-NEXT:  %[[E:.*]] = tensor.empty
// CHECK-NEXT:  %[[AB:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK:       %[[ABC:.*]] = linalg.generic {{.*}} ins(%[[AB]], %arg2 : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK:       %[[R:.*]] = shard.all_reduce %[[ABC]] on @mesh grid_axes = [1] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:  return %[[R]]
func.func @chain(%pa: tensor<4x8xf32>, %pb: tensor<4x8xf32>, %pc: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %a = shard.all_reduce %pa on @mesh grid_axes = [1] : tensor<4x8xf32> -> tensor<4x8xf32>
  %b = shard.all_reduce %pb on @mesh grid_axes = [1] : tensor<4x8xf32> -> tensor<4x8xf32>
  %c = shard.all_reduce %pc on @mesh grid_axes = [1] : tensor<4x8xf32> -> tensor<4x8xf32>
  %ab = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %abc = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ab, %c : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %y, %x : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %abc : tensor<4x8xf32>
}

// Over different axes, a max, a sum with another use, a product: nothing changes.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-8: shard.all_reduce
// CHECK-NOT:   shard.all_reduce
func.func @kept(%p: tensor<4x8xf32>, %q: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %a0 = shard.all_reduce %p on @mesh grid_axes = [0] : tensor<4x8xf32> -> tensor<4x8xf32>
  %a1 = shard.all_reduce %q on @mesh grid_axes = [1] : tensor<4x8xf32> -> tensor<4x8xf32>
  %axes = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a0, %a1 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %m = shard.all_reduce %p on @mesh grid_axes = [1] reduction = max : tensor<4x8xf32> -> tensor<4x8xf32>
  %n = shard.all_reduce %q on @mesh grid_axes = [1] : tensor<4x8xf32> -> tensor<4x8xf32>
  %max = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m, %n : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %u = shard.all_reduce %p on @mesh grid_axes = [1] : tensor<4x8xf32> -> tensor<4x8xf32>
  %v = shard.all_reduce %q on @mesh grid_axes = [1] : tensor<4x8xf32> -> tensor<4x8xf32>
  %used = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%u, %v : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %w = shard.all_reduce %p on @mesh grid_axes = [1] : tensor<4x8xf32> -> tensor<4x8xf32>
  %z = shard.all_reduce %q on @mesh grid_axes = [1] : tensor<4x8xf32> -> tensor<4x8xf32>
  %prod = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w, %z : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.mulf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %axes, %max, %used, %prod, %u : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// A running sum (the clipping norm): terms that need no all_reduce (y) and terms that
// are an init plus an all_reduce, added one after another: the all_reduces float out
// of the adds and combine into one at the end.
// CHECK-LABEL: func.func @running_sum
// CHECK-COUNT-1: shard.all_reduce
// CHECK-NOT:   shard.all_reduce
// CHECK:       return
func.func @running_sum(%y: tensor<f32>, %i: tensor<f32>, %pa: tensor<f32>, %pb: tensor<f32>, %pc: tensor<f32>) -> tensor<f32> {
  %e = tensor.empty() : tensor<f32>
  %a = shard.all_reduce %pa on @mesh grid_axes = [1] : tensor<f32> -> tensor<f32>
  %ta = linalg.add ins(%i, %a : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) -> tensor<f32>
  %s1 = linalg.add ins(%y, %ta : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) -> tensor<f32>
  %b = shard.all_reduce %pb on @mesh grid_axes = [1] : tensor<f32> -> tensor<f32>
  %tb = linalg.add ins(%i, %b : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) -> tensor<f32>
  %s2 = linalg.add ins(%s1, %tb : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) -> tensor<f32>
  %c = shard.all_reduce %pc on @mesh grid_axes = [1] : tensor<f32> -> tensor<f32>
  %s3 = linalg.add ins(%s2, %c : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) -> tensor<f32>
  return %s3 : tensor<f32>
}
