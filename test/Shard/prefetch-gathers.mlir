// shardc-prefetch-gathers: each parameter's gather (shardc-regather-parameters')
// moves before the first reader of the block's previous one, so that it can travel
// while that reader computes (--prefetch-weights); other gathers stay.
// RUN: %shardc-opt %s --shardc-prefetch-gathers -split-input-file | FileCheck %s

shard.grid @mesh(shape = 2)

// %w1's gather moves before %w0's matmul, %w2's before %w1's; the gather of the input
// %x, not a parameter's, stays where it was.

// CHECK-LABEL: func.func @three_weights
// CHECK:         %[[W0:.*]] = shard.all_gather %arg0 {{.*}} {shardc.regather = 0 : i64}
// CHECK-NEXT:    %[[W1:.*]] = shard.all_gather %arg1 {{.*}} {shardc.regather = 1 : i64}
// CHECK-NEXT:    %[[Y0:.*]] = linalg.matmul ins(%{{.*}}, %[[W0]] : {{.*}})
// CHECK-NEXT:    %[[W2:.*]] = shard.all_gather %arg2 {{.*}} {shardc.regather = 2 : i64}
// CHECK-NEXT:    %[[Y1:.*]] = linalg.matmul ins(%[[Y0]], %[[W1]] : {{.*}})
// CHECK-NEXT:    %[[XF:.*]] = shard.all_gather %arg3 on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    %[[S:.*]] = linalg.add ins(%[[Y1]], %[[XF]] : {{.*}})
// CHECK-NEXT:    linalg.matmul ins(%[[S]], %[[W2]] : {{.*}})
func.func @three_weights(%w0: tensor<2x4xf32>, %w1: tensor<2x4xf32>, %w2: tensor<2x4xf32>,
                         %x: tensor<2x4xf32>, %e: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %wf0 = shard.all_gather %w0 on @mesh grid_axes = [0] gather_axis = 0 {shardc.regather = 0 : i64} : tensor<2x4xf32> -> tensor<4x4xf32>
  %y0 = linalg.matmul ins(%e, %wf0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %wf1 = shard.all_gather %w1 on @mesh grid_axes = [0] gather_axis = 0 {shardc.regather = 1 : i64} : tensor<2x4xf32> -> tensor<4x4xf32>
  %y1 = linalg.matmul ins(%y0, %wf1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %xf = shard.all_gather %x on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
  %s = linalg.add ins(%y1, %xf : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %wf2 = shard.all_gather %w2 on @mesh grid_axes = [0] gather_axis = 0 {shardc.regather = 2 : i64} : tensor<2x4xf32> -> tensor<4x4xf32>
  %y2 = linalg.matmul ins(%s, %wf2 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y2 : tensor<4x4xf32>
}

// -----

shard.grid @mesh(shape = 2)

// A gather whose input is made after the previous gather's reader stays after it;
// gathers in different blocks (here a loop's body and the function's) do not move
// across them.

// CHECK-LABEL: func.func @late_input
// CHECK:         linalg.matmul
// CHECK-NEXT:    %[[T:.*]] = linalg.transpose
// CHECK-NEXT:    shard.all_gather %[[T]]
// CHECK-LABEL: func.func @loop
// CHECK:         scf.for
// CHECK-NEXT:      shard.all_gather %arg0
// CHECK-NEXT:      linalg.matmul
// CHECK:         shard.all_gather %arg1
// CHECK-NEXT:    linalg.matmul
func.func @late_input(%w0: tensor<2x4xf32>, %e: tensor<4x4xf32>, %f: tensor<4x2xf32>) -> tensor<4x4xf32> {
  %wf0 = shard.all_gather %w0 on @mesh grid_axes = [0] gather_axis = 0 {shardc.regather = 0 : i64} : tensor<2x4xf32> -> tensor<4x4xf32>
  %y0 = linalg.matmul ins(%e, %wf0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %t = linalg.transpose ins(%f : tensor<4x2xf32>) outs(%w0 : tensor<2x4xf32>) permutation = [1, 0]
  %wf1 = shard.all_gather %t on @mesh grid_axes = [0] gather_axis = 0 {shardc.regather = 1 : i64} : tensor<2x4xf32> -> tensor<4x4xf32>
  %y1 = linalg.matmul ins(%y0, %wf1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y1 : tensor<4x4xf32>
}

func.func @loop(%w0: tensor<2x4xf32>, %w1: tensor<2x4xf32>, %e: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %e) -> tensor<4x4xf32> {
    %wf0 = shard.all_gather %w0 on @mesh grid_axes = [0] gather_axis = 0 {shardc.regather = 0 : i64} : tensor<2x4xf32> -> tensor<4x4xf32>
    %y = linalg.matmul ins(%acc, %wf0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    scf.yield %y : tensor<4x4xf32>
  }
  %wf1 = shard.all_gather %w1 on @mesh grid_axes = [0] gather_axis = 0 {shardc.regather = 1 : i64} : tensor<2x4xf32> -> tensor<4x4xf32>
  %y1 = linalg.matmul ins(%r, %wf1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y1 : tensor<4x4xf32>
}

// -----

shard.grid @mesh(shape = 2)

// A layer function's first gather of an argument moves into the callers, its result an
// argument: the second layer's gather goes before the first layer's call (the first
// layer's before its own call: there is none before), a gather of a value made between
// the calls after that value. The function's other gather stays in it, moved before
// the reader of the first.

// CHECK-LABEL: func.func private @layer
// CHECK-SAME:    (%[[X:.*]]: tensor<4x4xf32>, %[[W:.*]]: tensor<2x4xf32>, %[[V:.*]]: tensor<2x4xf32>, %[[WF:.*]]: tensor<4x4xf32>)
// CHECK-NEXT:    %[[VF:.*]] = shard.all_gather %[[V]] {{.*}} {shardc.regather = 1 : i64}
// CHECK-NEXT:    %[[Y:.*]] = linalg.matmul ins(%[[X]], %[[WF]] : {{.*}})
// CHECK-NEXT:    linalg.matmul ins(%[[Y]], %[[VF]] : {{.*}})
// CHECK-LABEL: func.func @step
// CHECK:         %[[G0:.*]] = shard.all_gather %arg1 {{.*}} {shardc.regather = 0 : i64}
// CHECK-NEXT:    %[[G1:.*]] = shard.all_gather %arg3 {{.*}} {shardc.regather = 0 : i64}
// CHECK-NEXT:    %[[Y0:.*]] = call @layer(%arg0, %arg1, %arg2, %[[G0]])
// CHECK-NEXT:    %[[Y1:.*]] = call @layer(%[[Y0]], %arg3, %arg4, %[[G1]])
// CHECK-NEXT:    %[[T:.*]] = linalg.transpose
// CHECK-NEXT:    %[[G2:.*]] = shard.all_gather %[[T]] {{.*}} {shardc.regather = 0 : i64}
// CHECK-NEXT:    call @layer(%[[Y1]], %[[T]], %arg4, %[[G2]])
func.func private @layer(%x: tensor<4x4xf32>, %w: tensor<2x4xf32>, %v: tensor<2x4xf32>) -> tensor<4x4xf32> {
  %wf = shard.all_gather %w on @mesh grid_axes = [0] gather_axis = 0 {shardc.regather = 0 : i64} : tensor<2x4xf32> -> tensor<4x4xf32>
  %y = linalg.matmul ins(%x, %wf : tensor<4x4xf32>, tensor<4x4xf32>) outs(%x : tensor<4x4xf32>) -> tensor<4x4xf32>
  %vf = shard.all_gather %v on @mesh grid_axes = [0] gather_axis = 0 {shardc.regather = 1 : i64} : tensor<2x4xf32> -> tensor<4x4xf32>
  %z = linalg.matmul ins(%y, %vf : tensor<4x4xf32>, tensor<4x4xf32>) outs(%x : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %z : tensor<4x4xf32>
}

func.func @step(%x: tensor<4x4xf32>, %w0: tensor<2x4xf32>, %v0: tensor<2x4xf32>, %w1: tensor<2x4xf32>, %v1: tensor<2x4xf32>, %f: tensor<4x2xf32>) -> tensor<4x4xf32> {
  %y0 = call @layer(%x, %w0, %v0) : (tensor<4x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %y1 = call @layer(%y0, %w1, %v1) : (tensor<4x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %t = linalg.transpose ins(%f : tensor<4x2xf32>) outs(%w0 : tensor<2x4xf32>) permutation = [1, 0]
  %y2 = call @layer(%y1, %t, %v1) : (tensor<4x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  return %y2 : tensor<4x4xf32>
}
