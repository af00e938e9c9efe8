// What shardc-shard-to-runtime refuses, with an error at the op.
// RUN: %shardc-opt %s --shardc-shard-to-runtime -split-input-file -verify-diagnostics

shard.grid @grid(shape = 2)
func.func @f64(%x: tensor<4xf64>) -> tensor<4xf64> {
  // expected-error @+1 {{element type 'f64' is not supported by libshardrt (f32 or i32)}}
  %0 = shard.all_reduce %x on @grid grid_axes = [0] : tensor<4xf64> -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

shard.grid @grid(shape = 2)
func.func @i8_gather(%x: tensor<4xi8>) -> tensor<8xi8> {
  // expected-error @+1 {{element type 'i8' is not supported by libshardrt (f32 or i32)}}
  %0 = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 0 : tensor<4xi8> -> tensor<8xi8>
  return %0 : tensor<8xi8>
}

// -----

shard.grid @grid(shape = 2)
func.func @average(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{reduction 'average' is not supported by libshardrt (sum, max, min, product)}}
  %0 = shard.all_reduce %x on @grid grid_axes = [0] reduction = average : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2)
func.func @bitwise(%x: tensor<4x2xi32>) -> tensor<2x2xi32> {
  // expected-error @+1 {{reduction 'bitwise_xor' is not supported by libshardrt}}
  %0 = shard.reduce_scatter %x on @grid grid_axes = [0] reduction = bitwise_xor scatter_axis = 0 : tensor<4x2xi32> -> tensor<2x2xi32>
  return %0 : tensor<2x2xi32>
}

// -----

shard.grid @grid(shape = 2)
func.func @widening(%x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{converts 'f32' to 'f64'; libshardrt reduces in the input's element type only}}
  %0 = shard.all_reduce %x on @grid grid_axes = [0] : tensor<4xf32> -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

shard.grid @grid(shape = 2)
func.func @dynamic_shape(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{input must have a static shape, got 'tensor<?xf32>'}}
  %0 = shard.all_reduce %x on @grid grid_axes = [0] : tensor<?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

shard.grid @grid(shape = 2)
func.func @memref(%x: memref<4xf32>) -> memref<4xf32> {
  // expected-error @+1 {{input must be a ranked tensor (run before bufferization), got 'memref<4xf32>'}}
  %0 = shard.all_reduce %x on @grid grid_axes = [0] : memref<4xf32> -> memref<4xf32>
  return %0 : memref<4xf32>
}

// -----

// Reordering blocks between shard's and the runtime's group order needs the axis
// sizes.
shard.grid @grid(shape = 2x?)
func.func @reversed_dynamic(%x: tensor<2xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{grid_axes are not in ascending order and grid axis 1 has a dynamic size; cannot reorder the group}}
  %0 = shard.all_slice %x on @grid grid_axes = [1, 0] slice_axis = 0 : tensor<2xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

shard.grid @grid(shape = 2)
func.func @leftover_sharding(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'shard.sharding' op cannot be lowered to libshardrt; shardc-shard-to-runtime expects partitioned IR (after shard-partition)}}
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  // expected-error @+1 {{'shard.shard' op cannot be lowered to libshardrt}}
  %0 = shard.shard %x to %s : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2)
func.func @broadcast(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'shard.broadcast' op cannot be lowered to libshardrt}}
  %0 = shard.broadcast %x on @grid grid_axes = [0] root = [0] : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2x2)
func.func @neighbors_two_axes(%i: index, %j: index) -> (index, index) {
  // expected-error @+1 {{with 2 split axes is not supported (exactly one)}}
  %0:2 = shard.neighbors_linear_indices on @grid[%i, %j] split_axes = [0, 1] : index, index
  return %0#0, %0#1 : index, index
}

// -----

// A symbol of the runtime's name with another type.
func.func private @shardrt_rank() -> i64
shard.grid @grid(shape = 2)
func.func @clash() -> index {
  // expected-error @+1 {{needs runtime function @shardrt_rank of type '() -> i32', but the module declares '() -> i64'}}
  %0 = shard.process_linear_index on @grid : index
  return %0 : index
}
