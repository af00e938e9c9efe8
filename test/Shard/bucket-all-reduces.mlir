// shardc-bucket-all-reduces: all_reduces with nothing reading their results in
// between become one all_reduce of their operands, concatenated.
// RUN: %shardc-opt %s --shardc-bucket-all-reduces -split-input-file | FileCheck %s
// RUN: %shardc-opt %s --shardc-bucket-all-reduces=bucket-bytes=48 -split-input-file | FileCheck %s --check-prefix=SMALL

shard.grid @mesh(shape = 2x2)

// Three gradients (a matrix, a vector, a scalar) in one bucket of 17 floats, where
// the last of them was; each result is its slice, reshaped back. The max over the
// other axis is another bucket's kind and stays.

// CHECK-LABEL: func.func @gradients
// CHECK-SAME:    (%[[W:.*]]: tensor<3x4xf32>, %[[B:.*]]: tensor<4xf32>, %[[S:.*]]: tensor<f32>, %[[M:.*]]: tensor<2xf32>)
// CHECK:         shard.all_reduce %[[M]] on @mesh grid_axes = [1] reduction = max
// CHECK:         %[[FW:.*]] = tensor.collapse_shape %[[W]] {{\[}}[0, 1]] : tensor<3x4xf32> into tensor<12xf32>
// CHECK:         %[[FS:.*]] = tensor.expand_shape %[[S]] [] output_shape [1] : tensor<f32> into tensor<1xf32>
// CHECK:         %[[ALL:.*]] = tensor.concat dim(0) %[[FW]], %[[B]], %[[FS]] : (tensor<12xf32>, tensor<4xf32>, tensor<1xf32>) -> tensor<17xf32>
// CHECK:         %[[R:.*]] = shard.all_reduce %[[ALL]] on @mesh grid_axes = [0] : tensor<17xf32> -> tensor<17xf32>
// CHECK:         %[[RW:.*]] = tensor.extract_slice %[[R]][0] [12] [1]
// CHECK:         %[[GW:.*]] = tensor.expand_shape %[[RW]] {{\[}}[0, 1]] output_shape [3, 4]
// CHECK:         %[[GB:.*]] = tensor.extract_slice %[[R]][12] [4] [1]
// CHECK:         %[[RS:.*]] = tensor.extract_slice %[[R]][16] [1] [1]
// CHECK:         %[[GS:.*]] = tensor.collapse_shape %[[RS]] [] : tensor<1xf32> into tensor<f32>
// CHECK-NOT:     shard.all_reduce
// CHECK:         return %[[GW]], %[[GB]], %[[GS]]

// With buckets of at most 48 bytes, the matrix fills one alone.
// SMALL-LABEL: func.func @gradients
// SMALL:         shard.all_reduce %{{.*}} : tensor<3x4xf32> -> tensor<3x4xf32>
// SMALL:         shard.all_reduce %{{.*}} grid_axes = [1] reduction = max
// SMALL:         tensor.concat
// SMALL:         shard.all_reduce %{{.*}} : tensor<5xf32> -> tensor<5xf32>
func.func @gradients(%w: tensor<3x4xf32>, %b: tensor<4xf32>, %s: tensor<f32>, %m: tensor<2xf32>)
    -> (tensor<3x4xf32>, tensor<4xf32>, tensor<f32>, tensor<2xf32>) {
  %0 = shard.all_reduce %w on @mesh grid_axes = [0] : tensor<3x4xf32> -> tensor<3x4xf32>
  %1 = shard.all_reduce %m on @mesh grid_axes = [1] reduction = max : tensor<2xf32> -> tensor<2xf32>
  %2 = shard.all_reduce %b on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %3 = shard.all_reduce %s on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
  return %0, %2, %3, %1 : tensor<3x4xf32>, tensor<4xf32>, tensor<f32>, tensor<2xf32>
}

// -----

shard.grid @mesh(shape = 2)

// The loss's mean is read (divided) before the next all_reduce: it stays alone.

// CHECK-LABEL: func.func @read_between
// CHECK:         %[[LOSS:.*]] = shard.all_reduce %{{.*}} : tensor<f32> -> tensor<f32>
// CHECK:         tensor.extract %[[LOSS]]
// CHECK:         shard.all_reduce %{{.*}} : tensor<4xf32> -> tensor<4xf32>
func.func @read_between(%l: tensor<f32>, %g: tensor<4xf32>) -> (f32, tensor<4xf32>) {
  %0 = shard.all_reduce %l on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
  %v = tensor.extract %0[] : tensor<f32>
  %1 = shard.all_reduce %g on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  return %v, %1 : f32, tensor<4xf32>
}

// -----

shard.grid @mesh(shape = 2)

// Gradients (shardc.gradient_sync) and other sums never share a bucket: the runtime
// may send a bucket of gradients in bfloat16. The gradients' bucket keeps the mark.

// CHECK-LABEL: func.func @gradients_apart
// CHECK:         %[[OTHER:.*]] = shard.all_reduce %{{.*}} on @mesh grid_axes = [0] : tensor<2xf32> -> tensor<2xf32>
// CHECK:         %[[ALL:.*]] = tensor.concat dim(0) %{{.*}}, %{{.*}} : (tensor<4xf32>, tensor<3xf32>) -> tensor<7xf32>
// CHECK:         shard.all_reduce %[[ALL]] on @mesh grid_axes = [0] {shardc.gradient_sync} : tensor<7xf32> -> tensor<7xf32>
func.func @gradients_apart(%a: tensor<4xf32>, %o: tensor<2xf32>, %b: tensor<3xf32>)
    -> (tensor<4xf32>, tensor<2xf32>, tensor<3xf32>) {
  %0 = shard.all_reduce %a on @mesh grid_axes = [0] {shardc.gradient_sync} : tensor<4xf32> -> tensor<4xf32>
  %1 = shard.all_reduce %o on @mesh grid_axes = [0] : tensor<2xf32> -> tensor<2xf32>
  %2 = shard.all_reduce %b on @mesh grid_axes = [0] {shardc.gradient_sync} : tensor<3xf32> -> tensor<3xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<2xf32>, tensor<3xf32>
}
