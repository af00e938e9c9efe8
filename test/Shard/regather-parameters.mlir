// shardc-regather-parameters: each read of a gathered parameter gathers it again
// right before it (ZeRO-3), so that a full weight lives from its gather to its read.
// RUN: %shardc-opt %s --shardc-regather-parameters -split-input-file | FileCheck %s
// And cse does not merge the copies back.
// RUN: %shardc-opt %s --shardc-regather-parameters --cse -split-input-file | FileCheck %s

shard.grid @mesh(shape = 2)

// The forward's and the backward's reads of %w each get a gather of their own,
// next to them; the gather of the input %x, not a parameter, stays where it was.

// CHECK-LABEL: func.func @forward_and_backward
// CHECK:         %[[X:.*]] = shard.all_gather %arg1 on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    %[[H:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK-NEXT:    %[[W0:.*]] = shard.all_gather %arg0 on @mesh grid_axes = [0] gather_axis = 0 {shardc.regather = 0 : i64} : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = linalg.matmul ins(%[[X]], %[[W0]] : {{.*}}) outs(%[[H]] : {{.*}})
// CHECK-NEXT:    %[[T:.*]] = linalg.transpose ins(%[[Y]] : {{.*}})
// CHECK-NEXT:    %[[W1:.*]] = shard.all_gather %arg0 on @mesh grid_axes = [0] gather_axis = 0 {shardc.regather = 1 : i64} : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    linalg.matmul ins(%[[T]], %[[W1]] : {{.*}})
func.func @forward_and_backward(%w: tensor<2x4xf32> {shardc.role = "parameter"},
                                %x: tensor<2x4xf32> {shardc.role = "input"}) -> tensor<4x4xf32> {
  %xf = shard.all_gather %x on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
  %wf = shard.all_gather %w on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %y = linalg.matmul ins(%xf, %wf : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %t = linalg.transpose ins(%y : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) permutation = [1, 0]
  %g = linalg.matmul ins(%t, %wf : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %g : tensor<4x4xf32>
}
