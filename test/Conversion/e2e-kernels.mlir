// End to end: each op shardc-lower-to-kernels handles, compiled once with the
// kernels and once with convert-linalg-to-loops alone, on one rank; both must
// print the same numbers. Inputs hold small integers (element i is i,
// Inputs/e2e_main.c), so every sum is exact in f32 and the order of summation
// cannot matter.

// RUN: %shardc-opt %s %codegen -o %t.kernels.mlir
// RUN: FileCheck %s --check-prefix=CALLS < %t.kernels.mlir
// RUN: mlir-translate-22 --mlir-to-llvmir %t.kernels.mlir -o %t.kernels.ll
// RUN: %e2e_link %t.kernels.ll -o %t.kernels
// RUN: %shardc-opt %s %loops_codegen | mlir-translate-22 --mlir-to-llvmir -o %t.loops.ll
// RUN: %e2e_link %t.loops.ll -o %t.loops
// RUN: timeout 120 %mpirun -np 1 %t.kernels 1 > %t.kernels.out
// RUN: timeout 120 %mpirun -np 1 %t.loops 1 > %t.loops.out
// RUN: diff %t.loops.out %t.kernels.out
// RUN: FileCheck %s --check-prefix=OUT < %t.kernels.out

// Every op became a kernel call.
// CALLS-LABEL: llvm.func @matmul(
// CALLS:         llvm.call @shardrt_matmul_f32
// CALLS-LABEL: llvm.func @matmul_grad_lhs(
// CALLS:         llvm.call @shardrt_matmul_f32
// CALLS-LABEL: llvm.func @matmul_grad_rhs(
// CALLS:         llvm.call @shardrt_matmul_f32
// CALLS-LABEL: llvm.func @matmul_layer(
// CALLS:         llvm.call @shardrt_matmul_f32
// CALLS-LABEL: llvm.func @conv_stride2(
// CALLS:         llvm.call @shardrt_conv2d_f32
// CALLS-LABEL: llvm.func @conv_dilated(
// CALLS:         llvm.call @shardrt_conv2d_f32
// CALLS-LABEL: llvm.func @filter_grad(
// CALLS:         llvm.call @shardrt_conv2d_filter_grad_f32
// CALLS-LABEL: llvm.func @input_grad(
// CALLS:         llvm.call @shardrt_conv2d_input_grad_f32
// CALLS-LABEL: llvm.func @attention_scores(
// CALLS:         llvm.call @shardrt_batched_matmul_f32
// CALLS-LABEL: llvm.func @transposed_output(
// CALLS:         llvm.call @shardrt_matmul_f32

// A few values worked by hand: [0 1 2; 3 4 5; ...] @ [0..4; 5..9; 10..14] row 0
// is (0*0 + 1*5 + 2*10, ...) = 25 28 31 34 37.
// OUT:      rank 0 #01 [4x5]: 25 28 31 34 37
// OUT-NEXT: rank 0 #02 [4x3]:
// OUT-NEXT: rank 0 #03 [3x5]:
// Layer 1 of [2x3x5] is 15..29: row 0 is (0*15 + 1*20 + 2*25, ...) = 70 73 76 79 82.
// OUT-NEXT: rank 0 #04 [2x5]: 70 73 76 79 82
// OUT-NEXT: rank 0 #05 [2x3x3x4]:
// OUT-NEXT: rank 0 #06 [1x5x4x3]:
// OUT-NEXT: rank 0 #07 [3x3x3x4]:
// OUT-NEXT: rank 0 #08 [2x7x6x1]:
// OUT-NEXT: rank 0 #09 [2x3x6x6]:
// The transposed output is #01's transpose: column 0 of #01 is 25 70 115 160.
// OUT-NEXT: rank 0 #10 [5x4]: 25 70 115 160

func.func private @fill_f32(memref<*xf32>)
func.func private @print_f32(i32, memref<*xf32>)

#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#km = affine_map<(d0, d1, d2) -> (d2, d0)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>

func.func @matmul(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>) -> tensor<4x5xf32> {
  %zero = arith.constant dense<0.0> : tensor<4x5xf32>
  %r = linalg.matmul ins(%a, %b : tensor<4x3xf32>, tensor<3x5xf32>) outs(%zero : tensor<4x5xf32>) -> tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}

// dA = dy @ B^T, loops (m, k, n).
func.func @matmul_grad_lhs(%dy: tensor<4x5xf32>, %b: tensor<3x5xf32>) -> tensor<4x3xf32> {
  %zero = arith.constant dense<0.0> : tensor<4x3xf32>
  %r = linalg.generic {indexing_maps = [#mk, #nk, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %b : tensor<4x5xf32>, tensor<3x5xf32>) outs(%zero : tensor<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// dB = A^T @ dy, loops (k, n, m).
func.func @matmul_grad_rhs(%a: tensor<4x3xf32>, %dy: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %zero = arith.constant dense<0.0> : tensor<3x5xf32>
  %r = linalg.generic {indexing_maps = [#km, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %dy : tensor<4x3xf32>, tensor<4x5xf32>) outs(%zero : tensor<3x5xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<3x5xf32>
  return %r : tensor<3x5xf32>
}

// One layer of a stacked weight: a slice at a non-zero offset.
func.func @matmul_layer(%a: tensor<2x3xf32>, %w: tensor<2x3x5xf32>) -> tensor<2x5xf32> {
  %layer = tensor.extract_slice %w[1, 0, 0] [1, 3, 5] [1, 1, 1] : tensor<2x3x5xf32> to tensor<3x5xf32>
  %zero = arith.constant dense<0.0> : tensor<2x5xf32>
  %r = linalg.matmul ins(%a, %layer : tensor<2x3xf32>, tensor<3x5xf32>) outs(%zero : tensor<2x5xf32>) -> tensor<2x5xf32>
  return %r : tensor<2x5xf32>
}

func.func @conv_stride2(%x: tensor<2x7x7x3xf32>, %w: tensor<3x3x3x4xf32>) -> tensor<2x3x3x4xf32> {
  %zero = arith.constant dense<0.0> : tensor<2x3x3x4xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<2x7x7x3xf32>, tensor<3x3x3x4xf32>) outs(%zero : tensor<2x3x3x4xf32>) -> tensor<2x3x3x4xf32>
  return %r : tensor<2x3x3x4xf32>
}

func.func @conv_dilated(%x: tensor<1x7x6x2xf32>, %w: tensor<2x2x2x3xf32>) -> tensor<1x5x4x3xf32> {
  %zero = arith.constant dense<0.0> : tensor<1x5x4x3xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x7x6x2xf32>, tensor<2x2x2x3xf32>) outs(%zero : tensor<1x5x4x3xf32>) -> tensor<1x5x4x3xf32>
  return %r : tensor<1x5x4x3xf32>
}

// The filter gradient of conv_stride2.
#xpad = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5 * 2 + d0, d6 * 2 + d1, d2)>
#dy = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
#id = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @filter_grad(%x: tensor<2x7x7x3xf32>, %dy: tensor<2x3x3x4xf32>) -> tensor<3x3x3x4xf32> {
  %zero = arith.constant dense<0.0> : tensor<3x3x3x4xf32>
  %r = linalg.generic {indexing_maps = [#xpad, #dy, #id],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"],
                       library_call = "conv2d_filter_grad"}
      ins(%x, %dy : tensor<2x7x7x3xf32>, tensor<2x3x3x4xf32>) outs(%zero : tensor<3x3x3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<3x3x3x4xf32>
  return %r : tensor<3x3x3x4xf32>
}

// An input gradient with one input channel.
#dyp = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 - d4 + 2, d2 - d5 + 2, d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d3, d6)>
func.func @input_grad(%dyp: tensor<2x9x8x4xf32>, %w: tensor<3x3x1x4xf32>) -> tensor<2x7x6x1xf32> {
  %zero = arith.constant dense<0.0> : tensor<2x7x6x1xf32>
  %r = linalg.generic {indexing_maps = [#dyp, #w, #id],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"],
                       library_call = "conv2d_input_grad"}
      ins(%dyp, %w : tensor<2x9x8x4xf32>, tensor<3x3x1x4xf32>) outs(%zero : tensor<2x7x6x1xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x7x6x1xf32>
  return %r : tensor<2x7x6x1xf32>
}

// Attention's scores by axis names: batch loops b and h interleaved with the
// matrix dimensions s, t and the reduced d.
#q = affine_map<(b, s, h, t, d) -> (b, s, h, d)>
#k = affine_map<(b, s, h, t, d) -> (b, t, h, d)>
#scores = affine_map<(b, s, h, t, d) -> (b, h, s, t)>
func.func @attention_scores(%q: tensor<2x6x3x4xf32>, %k: tensor<2x6x3x4xf32>) -> tensor<2x3x6x6xf32> {
  %zero = arith.constant dense<0.0> : tensor<2x3x6x6xf32>
  %r = linalg.generic {indexing_maps = [#q, #k, #scores], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x6x3x4xf32>, tensor<2x6x3x4xf32>) outs(%zero : tensor<2x3x6x6xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3x6x6xf32>
  return %r : tensor<2x3x6x6xf32>
}

// A @ B written into an output laid out [N, M].
func.func @transposed_output(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>) -> tensor<5x4xf32> {
  %zero = arith.constant dense<0.0> : tensor<5x4xf32>
  %r = linalg.generic {indexing_maps = [#mk, #kn, affine_map<(d0, d1, d2) -> (d1, d0)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<4x3xf32>, tensor<3x5xf32>) outs(%zero : tensor<5x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<5x4xf32>
  return %r : tensor<5x4xf32>
}

// Inputs are the leading elements of one filled buffer (0, 1, 2, ...), reshaped.
func.func @test_main() {
  %m = memref.alloc() : memref<576xf32>
  %u = memref.cast %m : memref<576xf32> to memref<*xf32>
  call @fill_f32(%u) : (memref<*xf32>) -> ()
  %all = bufferization.to_tensor %m restrict : memref<576xf32> to tensor<576xf32>
  %a43_flat = tensor.extract_slice %all[0] [12] [1] : tensor<576xf32> to tensor<12xf32>
  %a43 = tensor.expand_shape %a43_flat [[0, 1]] output_shape [4, 3] : tensor<12xf32> into tensor<4x3xf32>
  %b35_flat = tensor.extract_slice %all[0] [15] [1] : tensor<576xf32> to tensor<15xf32>
  %b35 = tensor.expand_shape %b35_flat [[0, 1]] output_shape [3, 5] : tensor<15xf32> into tensor<3x5xf32>
  %dy45_flat = tensor.extract_slice %all[0] [20] [1] : tensor<576xf32> to tensor<20xf32>
  %dy45 = tensor.expand_shape %dy45_flat [[0, 1]] output_shape [4, 5] : tensor<20xf32> into tensor<4x5xf32>
  %a23_flat = tensor.extract_slice %all[0] [6] [1] : tensor<576xf32> to tensor<6xf32>
  %a23 = tensor.expand_shape %a23_flat [[0, 1]] output_shape [2, 3] : tensor<6xf32> into tensor<2x3xf32>
  %w235_flat = tensor.extract_slice %all[0] [30] [1] : tensor<576xf32> to tensor<30xf32>
  %w235 = tensor.expand_shape %w235_flat [[0, 1, 2]] output_shape [2, 3, 5] : tensor<30xf32> into tensor<2x3x5xf32>
  %x2773_flat = tensor.extract_slice %all[0] [294] [1] : tensor<576xf32> to tensor<294xf32>
  %x2773 = tensor.expand_shape %x2773_flat [[0, 1, 2, 3]] output_shape [2, 7, 7, 3] : tensor<294xf32> into tensor<2x7x7x3xf32>
  %w3334_flat = tensor.extract_slice %all[0] [108] [1] : tensor<576xf32> to tensor<108xf32>
  %w3334 = tensor.expand_shape %w3334_flat [[0, 1, 2, 3]] output_shape [3, 3, 3, 4] : tensor<108xf32> into tensor<3x3x3x4xf32>
  %x1762_flat = tensor.extract_slice %all[0] [84] [1] : tensor<576xf32> to tensor<84xf32>
  %x1762 = tensor.expand_shape %x1762_flat [[0, 1, 2, 3]] output_shape [1, 7, 6, 2] : tensor<84xf32> into tensor<1x7x6x2xf32>
  %w2223_flat = tensor.extract_slice %all[0] [24] [1] : tensor<576xf32> to tensor<24xf32>
  %w2223 = tensor.expand_shape %w2223_flat [[0, 1, 2, 3]] output_shape [2, 2, 2, 3] : tensor<24xf32> into tensor<2x2x2x3xf32>
  %dy2334_flat = tensor.extract_slice %all[0] [72] [1] : tensor<576xf32> to tensor<72xf32>
  %dy2334 = tensor.expand_shape %dy2334_flat [[0, 1, 2, 3]] output_shape [2, 3, 3, 4] : tensor<72xf32> into tensor<2x3x3x4xf32>
  %dyp2984_flat = tensor.extract_slice %all[0] [576] [1] : tensor<576xf32> to tensor<576xf32>
  %dyp2984 = tensor.expand_shape %dyp2984_flat [[0, 1, 2, 3]] output_shape [2, 9, 8, 4] : tensor<576xf32> into tensor<2x9x8x4xf32>
  %w3314_flat = tensor.extract_slice %all[0] [36] [1] : tensor<576xf32> to tensor<36xf32>
  %w3314 = tensor.expand_shape %w3314_flat [[0, 1, 2, 3]] output_shape [3, 3, 1, 4] : tensor<36xf32> into tensor<3x3x1x4xf32>

  %r1 = call @matmul(%a43, %b35) : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %c1 = arith.constant 1 : i32
  %m1 = bufferization.to_buffer %r1 read_only : tensor<4x5xf32> to memref<4x5xf32>
  %p1 = memref.cast %m1 : memref<4x5xf32> to memref<*xf32>
  call @print_f32(%c1, %p1) : (i32, memref<*xf32>) -> ()
  %r2 = call @matmul_grad_lhs(%dy45, %b35) : (tensor<4x5xf32>, tensor<3x5xf32>) -> tensor<4x3xf32>
  %c2 = arith.constant 2 : i32
  %m2 = bufferization.to_buffer %r2 read_only : tensor<4x3xf32> to memref<4x3xf32>
  %p2 = memref.cast %m2 : memref<4x3xf32> to memref<*xf32>
  call @print_f32(%c2, %p2) : (i32, memref<*xf32>) -> ()
  %r3 = call @matmul_grad_rhs(%a43, %dy45) : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %c3 = arith.constant 3 : i32
  %m3 = bufferization.to_buffer %r3 read_only : tensor<3x5xf32> to memref<3x5xf32>
  %p3 = memref.cast %m3 : memref<3x5xf32> to memref<*xf32>
  call @print_f32(%c3, %p3) : (i32, memref<*xf32>) -> ()
  %r4 = call @matmul_layer(%a23, %w235) : (tensor<2x3xf32>, tensor<2x3x5xf32>) -> tensor<2x5xf32>
  %c4 = arith.constant 4 : i32
  %m4 = bufferization.to_buffer %r4 read_only : tensor<2x5xf32> to memref<2x5xf32>
  %p4 = memref.cast %m4 : memref<2x5xf32> to memref<*xf32>
  call @print_f32(%c4, %p4) : (i32, memref<*xf32>) -> ()
  %r5 = call @conv_stride2(%x2773, %w3334) : (tensor<2x7x7x3xf32>, tensor<3x3x3x4xf32>) -> tensor<2x3x3x4xf32>
  %c5 = arith.constant 5 : i32
  %m5 = bufferization.to_buffer %r5 read_only : tensor<2x3x3x4xf32> to memref<2x3x3x4xf32>
  %p5 = memref.cast %m5 : memref<2x3x3x4xf32> to memref<*xf32>
  call @print_f32(%c5, %p5) : (i32, memref<*xf32>) -> ()
  %r6 = call @conv_dilated(%x1762, %w2223) : (tensor<1x7x6x2xf32>, tensor<2x2x2x3xf32>) -> tensor<1x5x4x3xf32>
  %c6 = arith.constant 6 : i32
  %m6 = bufferization.to_buffer %r6 read_only : tensor<1x5x4x3xf32> to memref<1x5x4x3xf32>
  %p6 = memref.cast %m6 : memref<1x5x4x3xf32> to memref<*xf32>
  call @print_f32(%c6, %p6) : (i32, memref<*xf32>) -> ()
  %r7 = call @filter_grad(%x2773, %dy2334) : (tensor<2x7x7x3xf32>, tensor<2x3x3x4xf32>) -> tensor<3x3x3x4xf32>
  %c7 = arith.constant 7 : i32
  %m7 = bufferization.to_buffer %r7 read_only : tensor<3x3x3x4xf32> to memref<3x3x3x4xf32>
  %p7 = memref.cast %m7 : memref<3x3x3x4xf32> to memref<*xf32>
  call @print_f32(%c7, %p7) : (i32, memref<*xf32>) -> ()
  %r8 = call @input_grad(%dyp2984, %w3314) : (tensor<2x9x8x4xf32>, tensor<3x3x1x4xf32>) -> tensor<2x7x6x1xf32>
  %c8 = arith.constant 8 : i32
  %m8 = bufferization.to_buffer %r8 read_only : tensor<2x7x6x1xf32> to memref<2x7x6x1xf32>
  %p8 = memref.cast %m8 : memref<2x7x6x1xf32> to memref<*xf32>
  call @print_f32(%c8, %p8) : (i32, memref<*xf32>) -> ()
  %q2634_flat = tensor.extract_slice %all[0] [144] [1] : tensor<576xf32> to tensor<144xf32>
  %q2634 = tensor.expand_shape %q2634_flat [[0, 1, 2, 3]] output_shape [2, 6, 3, 4] : tensor<144xf32> into tensor<2x6x3x4xf32>
  %r9 = call @attention_scores(%q2634, %q2634) : (tensor<2x6x3x4xf32>, tensor<2x6x3x4xf32>) -> tensor<2x3x6x6xf32>
  %c9 = arith.constant 9 : i32
  %m9 = bufferization.to_buffer %r9 read_only : tensor<2x3x6x6xf32> to memref<2x3x6x6xf32>
  %p9 = memref.cast %m9 : memref<2x3x6x6xf32> to memref<*xf32>
  call @print_f32(%c9, %p9) : (i32, memref<*xf32>) -> ()
  %r10 = call @transposed_output(%a43, %b35) : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<5x4xf32>
  %c10 = arith.constant 10 : i32
  %m10 = bufferization.to_buffer %r10 read_only : tensor<5x4xf32> to memref<5x4xf32>
  %p10 = memref.cast %m10 : memref<5x4xf32> to memref<*xf32>
  call @print_f32(%c10, %p10) : (i32, memref<*xf32>) -> ()
  return
}
