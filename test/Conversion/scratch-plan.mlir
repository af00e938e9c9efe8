// What a program's runtime calls take of the runtime's scratch buffer
// (shardrt/scratch_regions.h), recorded on the module as the most one call takes:
// the driver maps the buffer at that size before the first step and --report
// counts it. shardc-shard-to-runtime records the blocking collectives',
// shardc-lower-to-kernels the convolutions'.
// RUN: %shardc-opt %s --shardc-shard-to-runtime -split-input-file | FileCheck %s --check-prefix=COLL
// RUN: %shardc-opt %s --shardc-lower-to-kernels -split-input-file | FileCheck %s --check-prefix=CONV

// An all-gather along dimension 1 of f32[4, 8] over 2 ranks is received into the
// scratch (2 x 32 floats = 256 bytes), then joined; one along dimension 0 lands in
// place.
// COLL: module attributes {shardc.scratch_bytes = 256 : i64}
// COLL-LABEL: func.func @gathers
shard.grid @grid(shape = 2x4)
func.func @gathers(%x: tensor<4x8xf32>) -> (tensor<4x16xf32>, tensor<16x8xf32>) {
  %0 = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 1 : tensor<4x8xf32> -> tensor<4x16xf32>
  %1 = shard.all_gather %x on @grid grid_axes = [1] gather_axis = 0 : tensor<4x8xf32> -> tensor<16x8xf32>
  return %0, %1 : tensor<4x16xf32>, tensor<16x8xf32>
}

// -----

// Collectives that need no scratch leave no attribute.
// COLL-NOT: shardc.scratch_bytes
// COLL-LABEL: func.func @in_place
shard.grid @grid(shape = 4)
func.func @in_place(%x: tensor<4x8xf32>) -> (tensor<16x8xf32>, tensor<1x8xf32>) {
  %0 = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<16x8xf32>
  %1 = shard.reduce_scatter %x on @grid grid_axes = [0] scatter_axis = 0 : tensor<4x8xf32> -> tensor<1x8xf32>
  return %0, %1 : tensor<16x8xf32>, tensor<1x8xf32>
}

// -----

// A reduce-scatter along dimension 1 packs its blocks first (the whole input, 128
// bytes; below the ring's 32 MiB it is MPI's, with no blocks of the ring's); an
// all-to-all that splits dimension 0 sends in place but receives its blocks of
// [4, 4] side by side along dimension 1 through the scratch (128 bytes as well).
// COLL: module attributes {shardc.scratch_bytes = 128 : i64}
// COLL-LABEL: func.func @packed
shard.grid @grid(shape = 4)
func.func @packed(%x: tensor<4x8xf32>, %y: tensor<8x4xf32>) -> (tensor<4x2xf32>, tensor<2x16xf32>) {
  %0 = shard.reduce_scatter %x on @grid grid_axes = [0] scatter_axis = 1 : tensor<4x8xf32> -> tensor<4x2xf32>
  %1 = shard.all_to_all %y on @grid grid_axes = [0] split_axis = 0 concat_axis = 1 : tensor<8x4xf32> -> tensor<2x16xf32>
  return %0, %1 : tensor<4x2xf32>, tensor<2x16xf32>
}

// -----

// A convolution of one input channel is an im2col product: 2 images of 6 x 6
// windows of 3 x 3 x 1 floats fit in one chunk, 2 x 1296 bytes (2624 aligned to 64).
// CONV: module attributes {shardc.scratch_bytes = 2624 : i64}
// CONV-LABEL: func.func @im2col
func.func @im2col(%x: memref<2x8x8x1xf32>, %k: memref<3x3x1x4xf32>, %y: memref<2x6x6x4xf32>) {
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %k : memref<2x8x8x1xf32>, memref<3x3x1x4xf32>) outs(%y : memref<2x6x6x4xf32>)
  return
}

// -----

// One of 16 input channels runs on oneDNN's convolution, without the scratch.
// CONV-NOT: shardc.scratch_bytes
// CONV-LABEL: func.func @on_onednn
func.func @on_onednn(%x: memref<2x8x8x16xf32>, %k: memref<3x3x16x4xf32>, %y: memref<2x6x6x4xf32>) {
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %k : memref<2x8x8x16xf32>, memref<3x3x16x4xf32>) outs(%y : memref<2x6x6x4xf32>)
  return
}

// -----

// Under `precision matmul : bf16` the same convolution computes its products in
// bfloat16 on im2col (the _bf16 entry): 2 images of 6 x 6 windows of 3 x 3 x 16
// floats, 41472 bytes, are planned.
// CONV: module attributes {shardc.matmul_precision = "bf16", shardc.scratch_bytes = 41472 : i64}
// CONV-LABEL: func.func @in_bf16
// CONV:         call @shardrt_conv2d_bf16(
module attributes {shardc.matmul_precision = "bf16"} {
  func.func @in_bf16(%x: memref<2x8x8x16xf32>, %k: memref<3x3x16x4xf32>, %y: memref<2x6x6x4xf32>) {
    linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
        ins(%x, %k : memref<2x8x8x16xf32>, memref<3x3x16x4xf32>) outs(%y : memref<2x6x6x4xf32>)
    return
  }
}
