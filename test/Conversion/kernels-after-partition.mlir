// The forms shardc-lower-to-kernels matches, written as MLIRGen emits them for
// a training step (spec: splat-zero inits, library_call on the convolution
// gradients), survive shardc's passes unchanged: shardc-propagate,
// shardc-partition, then shardc-bufferize, the part of shardc-lower-to-llvm up
// to bufferization and deallocation. Then shardc-lower-to-kernels replaces
// every one but the pooling gradient. Batch split over a mesh of 2: the
// gradients of the weights end in one all_reduce call (a bucket, of 268 floats).
//
// RUN: %shardc-opt %s --pass-pipeline='builtin.module(shardc-propagate,shardc-partition,shardc-bufferize)' \
// RUN:   | FileCheck %s --check-prefix=BUF
// RUN: %shardc-opt %s --pass-pipeline='builtin.module(shardc-propagate,shardc-partition,shardc-bufferize,shardc-lower-to-kernels)' \
// RUN:   | FileCheck %s --check-prefix=KERN

// The maps as written (d5 * 2 + d0 printed as such, floordiv kept).
// BUF-DAG: #[[XPAD:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5 * 2 + d0, d6 * 2 + d1, d2)>
// BUF-DAG: #[[DY:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
// BUF-DAG: #[[ID7:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
// BUF-DAG: #[[DYP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 - d4 + 2, d2 - d5 + 2, d6)>
// BUF-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d3, d6)>
// BUF-DAG: #[[POOL:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 2, d2 floordiv 2, d3)>
// BUF-DAG: #[[ID4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// BUF-DAG: #[[MK:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// BUF-DAG: #[[NK:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// BUF-DAG: #[[KM:.*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// BUF-DAG: #[[KN:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// BUF-DAG: #[[MN:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// BUF-LABEL: func.func @train_step
// BUF:     linalg.conv_2d_nhwc_hwcf {{.*}} ins(%{{.*}}, %{{.*}} : memref<4x10x10x3xf32>, memref<3x3x3x4xf32>) outs(%{{.*}} : memref<4x8x8x4xf32>)
// BUF:     linalg.matmul ins(%{{.*}}, %{{.*}} : memref<4x16xf32>, memref<16x10xf32>) outs(%{{.*}} : memref<4x10xf32>)
// BUF:     linalg.generic {indexing_maps = [#[[XPAD]], #[[DY]], #[[ID7]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"], library_call = "conv2d_filter_grad"} ins(%{{.*}}, %{{.*}} : memref<4x10x10x3xf32>, memref<4x4x4x4xf32>) outs(%{{.*}} : memref<3x3x3x4xf32>)
// BUF:       arith.mulf
// BUF-NEXT:  arith.addf
// BUF-NOT: call @shardrt_all_reduce_f32
// BUF:     linalg.generic {indexing_maps = [#[[DYP]], #[[W]], #[[ID7]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"], library_call = "conv2d_input_grad"} ins(%{{.*}}, %{{.*}} : memref<4x11x11x4xf32>, memref<3x3x3x4xf32>) outs(%{{.*}} : memref<4x9x9x3xf32>)
// BUF:     linalg.generic {indexing_maps = [#[[POOL]], #[[ID4]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%{{.*}} : memref<4x4x4x4xf32>) outs(%{{.*}} : memref<4x8x8x4xf32>)
// BUF:     linalg.generic {indexing_maps = [#[[MK]], #[[NK]], #[[MN]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : memref<4x10xf32>, memref<16x10xf32>) outs(%{{.*}} : memref<4x16xf32>)
// BUF:     linalg.generic {indexing_maps = [#[[KM]], #[[KN]], #[[MN]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : memref<4x16xf32>, memref<4x10xf32>) outs(%{{.*}} : memref<16x10xf32>)
// BUF:     call @shardrt_all_reduce_f32(%{{.*}}, %{{.*}}, %{{.*}}, %c268_i64,

// KERN-LABEL: func.func @train_step
// KERN:     call @shardrt_conv2d_f32
// KERN:     call @shardrt_matmul_f32
// KERN:     call @shardrt_conv2d_filter_grad_f32
// KERN:     call @shardrt_conv2d_input_grad_f32
// KERN:     linalg.generic {{.*}} ins(%{{.*}} : memref<4x4x4x4xf32>) outs(%{{.*}} : memref<4x8x8x4xf32>)
// KERN:     call @shardrt_matmul_f32
// KERN:     call @shardrt_matmul_f32
// KERN:     call @shardrt_all_reduce_f32
// KERN-NOT: linalg.

shard.grid @grid(shape = 2)

#xpad = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5 * 2 + d0, d6 * 2 + d1, d2)>
#dy = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
#id7 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
#dyp = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 - d4 + 2, d2 - d5 + 2, d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d3, d6)>
#pool = affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 2, d2 floordiv 2, d3)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#km = affine_map<(d0, d1, d2) -> (d2, d0)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @train_step(%x: tensor<8x10x10x3xf32>, %k: tensor<3x3x3x4xf32>, %dy: tensor<8x4x4x4xf32>,
                      %dyp: tensor<8x11x11x4xf32>, %pdy: tensor<8x4x4x4xf32>, %a: tensor<8x16xf32>,
                      %b: tensor<16x10xf32>, %dl: tensor<8x10xf32>)
    -> (tensor<8x8x8x4xf32>, tensor<8x10xf32>, tensor<3x3x3x4xf32>, tensor<8x9x9x3xf32>,
        tensor<8x8x8x4xf32>, tensor<8x16xf32>, tensor<16x10xf32>) {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %x_s = shard.shard %x to %s : tensor<8x10x10x3xf32>
  %dy_s = shard.shard %dy to %s : tensor<8x4x4x4xf32>
  %dyp_s = shard.shard %dyp to %s : tensor<8x11x11x4xf32>
  %pdy_s = shard.shard %pdy to %s : tensor<8x4x4x4xf32>
  %a_s = shard.shard %a to %s : tensor<8x16xf32>
  %dl_s = shard.shard %dl to %s : tensor<8x10xf32>

  // Forward: convolution and matmul.
  %z0 = arith.constant dense<0.0> : tensor<8x8x8x4xf32>
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x_s, %k : tensor<8x10x10x3xf32>, tensor<3x3x3x4xf32>) outs(%z0 : tensor<8x8x8x4xf32>) -> tensor<8x8x8x4xf32>
  %z1 = arith.constant dense<0.0> : tensor<8x10xf32>
  %l = linalg.matmul ins(%a_s, %b : tensor<8x16xf32>, tensor<16x10xf32>) outs(%z1 : tensor<8x10xf32>) -> tensor<8x10xf32>

  // Filter gradient of a stride-2 convolution.
  %z2 = arith.constant dense<0.0> : tensor<3x3x3x4xf32>
  %dw = linalg.generic {indexing_maps = [#xpad, #dy, #id7],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"],
                        library_call = "conv2d_filter_grad"}
      ins(%x_s, %dy_s : tensor<8x10x10x3xf32>, tensor<8x4x4x4xf32>) outs(%z2 : tensor<3x3x3x4xf32>) {
  ^bb0(%i0: f32, %i1: f32, %o: f32):
    %p = arith.mulf %i0, %i1 : f32
    %q = arith.addf %o, %p : f32
    linalg.yield %q : f32
  } -> tensor<3x3x3x4xf32>

  // Input gradient.
  %z3 = arith.constant dense<0.0> : tensor<8x9x9x3xf32>
  %dx = linalg.generic {indexing_maps = [#dyp, #w, #id7],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"],
                        library_call = "conv2d_input_grad"}
      ins(%dyp_s, %k : tensor<8x11x11x4xf32>, tensor<3x3x3x4xf32>) outs(%z3 : tensor<8x9x9x3xf32>) {
  ^bb0(%i0: f32, %i1: f32, %o: f32):
    %p = arith.mulf %i0, %i1 : f32
    %q = arith.addf %o, %p : f32
    linalg.yield %q : f32
  } -> tensor<8x9x9x3xf32>

  // Average-pooling gradient (window 2).
  %e = tensor.empty() : tensor<8x8x8x4xf32>
  %quarter = arith.constant 0.25 : f32
  %pdx = linalg.generic {indexing_maps = [#pool, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%pdy_s : tensor<8x4x4x4xf32>) outs(%e : tensor<8x8x8x4xf32>) {
  ^bb0(%i0: f32, %o: f32):
    %q = arith.mulf %i0, %quarter : f32
    linalg.yield %q : f32
  } -> tensor<8x8x8x4xf32>

  // Matmul gradients: dA = dl @ B^T (loops m, k, n), dB = A^T @ dl (k, n, m).
  %z4 = arith.constant dense<0.0> : tensor<8x16xf32>
  %da = linalg.generic {indexing_maps = [#mk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dl_s, %b : tensor<8x10xf32>, tensor<16x10xf32>) outs(%z4 : tensor<8x16xf32>) {
  ^bb0(%i0: f32, %i1: f32, %o: f32):
    %p = arith.mulf %i0, %i1 : f32
    %q = arith.addf %o, %p : f32
    linalg.yield %q : f32
  } -> tensor<8x16xf32>
  %z5 = arith.constant dense<0.0> : tensor<16x10xf32>
  %db = linalg.generic {indexing_maps = [#km, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a_s, %dl_s : tensor<8x16xf32>, tensor<8x10xf32>) outs(%z5 : tensor<16x10xf32>) {
  ^bb0(%i0: f32, %i1: f32, %o: f32):
    %p = arith.mulf %i0, %i1 : f32
    %q = arith.addf %o, %p : f32
    linalg.yield %q : f32
  } -> tensor<16x10xf32>
  return %y, %l, %dw, %dx, %pdx, %da, %db
      : tensor<8x8x8x4xf32>, tensor<8x10xf32>, tensor<3x3x3x4xf32>, tensor<8x9x9x3xf32>,
        tensor<8x8x8x4xf32>, tensor<8x16xf32>, tensor<16x10xf32>
}
