// A Megatron MLP at tensor level with shard annotations, for e2e-partitioned-mlp.mlir:
// W1 split by columns and W2 by rows over the mesh's one axis, outputs passed as
// arguments (the form upstream's propagation and partition handle). Partition makes
// the second matmul's init zero on all ranks but rank 0 (process_multi_index) and
// sums the partial results with shard.all_reduce.
shard.grid @mesh(shape = 2)
func.func @mlp(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>,
               %h: tensor<4x16xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %by_columns = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding
  %by_rows = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %replicated = shard.sharding @mesh split_axes = [[]] : !shard.sharding
  %w1s = shard.shard %w1 to %by_columns : tensor<8x16xf32>
  %w2s = shard.shard %w2 to %by_rows : tensor<16x8xf32>
  %0 = linalg.matmul ins(%x, %w1s : tensor<4x8xf32>, tensor<8x16xf32>) outs(%h : tensor<4x16xf32>) -> tensor<4x16xf32>
  %1 = linalg.matmul ins(%0, %w2s : tensor<4x16xf32>, tensor<16x8xf32>) outs(%y : tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = shard.shard %1 to %replicated : tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}
