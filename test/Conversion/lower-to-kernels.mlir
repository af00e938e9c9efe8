// shardc-lower-to-kernels: linalg ops on f32 buffers become libshardrt kernel
// calls (sizes as constants, buffers as pointers); everything else stays.
// RUN: %shardc-opt %s --shardc-lower-to-kernels -split-input-file | FileCheck %s

// A matmul: C[M, N] += A[M, K] B[K, N], leading dimensions K, N and N.

// CHECK:       func.func private @shardrt_matmul_f32(i32, i32, i32, i64, i64, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    (%[[A:.*]]: memref<4x3xf32>, %[[B:.*]]: memref<3x5xf32>, %[[C:.*]]: memref<4x5xf32>)
// CHECK-DAG:     %[[NO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[M:.*]] = arith.constant 4 : i64
// CHECK-DAG:     %[[N:.*]] = arith.constant 5 : i64
// CHECK-DAG:     %[[K:.*]] = arith.constant 3 : i64
// CHECK-DAG:     %[[ACC:.*]] = arith.constant 1 : i32
// CHECK:         %[[AI:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK:         %[[AI64:.*]] = arith.index_cast %[[AI]] : index to i64
// CHECK:         %[[AP:.*]] = llvm.inttoptr %[[AI64]] : i64 to !llvm.ptr
// CHECK:         memref.extract_aligned_pointer_as_index %[[B]]
// CHECK:         %[[BP:.*]] = llvm.inttoptr
// CHECK:         memref.extract_aligned_pointer_as_index %[[C]]
// CHECK:         %[[CP:.*]] = llvm.inttoptr
// CHECK:         call @shardrt_matmul_f32(%[[ACC]], %[[NO]], %[[NO]], %[[M]], %[[N]], %[[K]], %[[K]], %[[N]], %[[N]], %[[AP]], %[[BP]], %[[CP]])
// CHECK-NOT:     linalg.
// CHECK:         return
func.func @matmul(%a: memref<4x3xf32>, %b: memref<3x5xf32>, %c: memref<4x5xf32>) {
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%c : memref<4x5xf32>)
  return
}

// -----

// Operands in bf16, accumulated in f32 (shardc-matmul-operands-bf16's form, a
// transposed b): oneDNN's bf16 matmul on them as they are.

// CHECK:       func.func private @shardrt_matmul_bf16(i32, i32, i32, i64, i64, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK-LABEL: func.func @matmul_bf16
// CHECK-DAG:     %[[NO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[YES:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[M:.*]] = arith.constant 4 : i64
// CHECK-DAG:     %[[N:.*]] = arith.constant 5 : i64
// CHECK-DAG:     %[[K:.*]] = arith.constant 3 : i64
// CHECK:         call @shardrt_matmul_bf16(%[[YES]], %[[NO]], %[[YES]], %[[M]], %[[N]], %[[K]], %[[K]], %[[K]], %[[N]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT:     linalg.
// CHECK:         return
func.func @matmul_bf16(%a: memref<4x3xbf16>, %b: memref<5x3xbf16>, %c: memref<4x5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x3xbf16>, memref<5x3xbf16>) outs(%c : memref<4x5xf32>) {
  ^bb0(%x: bf16, %y: bf16, %o: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A convolution of a padded copy (tensor.pad bufferized: a fresh buffer, zeros,
// the input copied into its middle) reads the input itself with pads 1 and 2;
// the buffer, its fill and the copy go. The filter gradient reads the same copy
// after a write of another fresh buffer, and does the same (the kernels write
// fresh buffers: an argument they wrote might be the input).

// CHECK-LABEL: func.func @padded_input
// CHECK-SAME:    (%[[X:[^:]*]]: memref<2x5x6x3xf32>
// CHECK-DAG:     %[[H:.*]] = arith.constant 5 : i64
// CHECK-DAG:     %[[W:.*]] = arith.constant 6 : i64
// CHECK-DAG:     %[[C:.*]] = arith.constant 3 : i64
// CHECK-DAG:     %[[TOP:.*]] = arith.constant 1 : i64
// CHECK-DAG:     %[[LEFT:.*]] = arith.constant 2 : i64
// CHECK-NOT:     memref.alloc() : memref<2x7x10x3xf32>
// CHECK-NOT:     memref.copy
// CHECK:         memref.extract_aligned_pointer_as_index %[[X]]
// CHECK:         call @shardrt_conv2d_f32(%{{[^,]*}}, %{{[^,]*}}, %[[H]], %[[W]], %[[C]], %[[TOP]], %[[LEFT]],
// CHECK:         linalg.fill {{.*}} outs(%{{.*}} : memref<2x5x8x4xf32>)
// CHECK:         memref.extract_aligned_pointer_as_index %[[X]]
// Each call has constants of its own: h 5, w 6, c 3, pads 1 and 2.
// CHECK:         call @shardrt_conv2d_filter_grad_f32(%{{[^,]*}}, %{{[^,]*}}, %c5_i64{{[_0-9]*}}, %c6_i64{{[_0-9]*}}, %c3_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c2_i64{{[_0-9]*}},
// CHECK-NOT:     memref.dealloc
#xp = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5 + d0, d6 + d1, d2)>
#dy4 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
#dw4 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @padded_input(%x: memref<2x5x6x3xf32>, %k: memref<3x3x3x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %y = memref.alloc() : memref<2x5x8x4xf32>
  %dw = memref.alloc() : memref<3x3x3x4xf32>
  %padded = memref.alloc() : memref<2x7x10x3xf32>
  linalg.map outs(%padded : memref<2x7x10x3xf32>)
    (%init: f32) {
      linalg.yield %zero : f32
    }
  %middle = memref.subview %padded[0, 1, 2, 0] [2, 5, 6, 3] [1, 1, 1, 1]
      : memref<2x7x10x3xf32> to memref<2x5x6x3xf32, strided<[210, 30, 3, 1], offset: 36>>
  memref.copy %x, %middle : memref<2x5x6x3xf32> to memref<2x5x6x3xf32, strided<[210, 30, 3, 1], offset: 36>>
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %k : memref<2x7x10x3xf32>, memref<3x3x3x4xf32>) outs(%y : memref<2x5x8x4xf32>)
  %other = memref.alloc() : memref<2x5x8x4xf32>
  linalg.fill ins(%zero : f32) outs(%other : memref<2x5x8x4xf32>)
  linalg.generic {indexing_maps = [#xp, #dy4, #dw4],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%padded, %y : memref<2x7x10x3xf32>, memref<2x5x8x4xf32>) outs(%dw : memref<3x3x3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  memref.dealloc %padded : memref<2x7x10x3xf32>
  return
}

// -----

// The padded copy stays where the input may change before a reader: here an
// argument is written between the copy and the filter gradient (the input, an
// argument too, may be the same buffer).

// CHECK-LABEL: func.func @padded_input_written
// CHECK:         memref.alloc
// CHECK:         memref.copy
// CHECK:         call @shardrt_conv2d_f32(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[NONE:[^,]*]], %[[NONE]],
// CHECK:         call @shardrt_conv2d_filter_grad_f32(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[NONE2:[^,]*]], %[[NONE2]],
#xp = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5 + d0, d6 + d1, d2)>
#dy4 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
#dw4 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @padded_input_written(%x: memref<2x5x6x3xf32>, %k: memref<3x3x3x4xf32>, %y: memref<2x5x8x4xf32>,
                                %dw: memref<3x3x3x4xf32>, %other: memref<2x5x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %padded = memref.alloc() : memref<2x7x10x3xf32>
  linalg.map outs(%padded : memref<2x7x10x3xf32>)
    (%init: f32) {
      linalg.yield %zero : f32
    }
  %middle = memref.subview %padded[0, 1, 2, 0] [2, 5, 6, 3] [1, 1, 1, 1]
      : memref<2x7x10x3xf32> to memref<2x5x6x3xf32, strided<[210, 30, 3, 1], offset: 36>>
  memref.copy %x, %middle : memref<2x5x6x3xf32> to memref<2x5x6x3xf32, strided<[210, 30, 3, 1], offset: 36>>
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %k : memref<2x7x10x3xf32>, memref<3x3x3x4xf32>) outs(%y : memref<2x5x8x4xf32>)
  linalg.fill ins(%zero : f32) outs(%other : memref<2x5x8x4xf32>)
  linalg.generic {indexing_maps = [#xp, #dy4, #dw4],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%padded, %y : memref<2x7x10x3xf32>, memref<2x5x8x4xf32>) outs(%dw : memref<3x3x3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  memref.dealloc %padded : memref<2x7x10x3xf32>
  return
}

// -----

// The gradient of A in y = A B: dA[m, k] = sum_n dy[m, n] * B[k, n], loops
// (m, k, n): dy @ B^T, trans_b = 1.

// CHECK-LABEL: func.func @matmul_grad_lhs
// CHECK-SAME:    (%[[DY:.*]]: memref<4x5xf32>, %[[B:.*]]: memref<3x5xf32>, %[[DA:.*]]: memref<4x3xf32>)
// CHECK-DAG:     %[[NO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[YES:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[M:.*]] = arith.constant 4 : i64
// CHECK-DAG:     %[[N:.*]] = arith.constant 3 : i64
// CHECK-DAG:     %[[K:.*]] = arith.constant 5 : i64
// CHECK:         call @shardrt_matmul_f32(%[[YES]], %[[NO]], %[[YES]], %[[M]], %[[N]], %[[K]], %[[K]], %[[K]], %[[N]],
#dy = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @matmul_grad_lhs(%dy: memref<4x5xf32>, %b: memref<3x5xf32>, %da: memref<4x3xf32>) {
  linalg.generic {indexing_maps = [#dy, #b, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dy, %b : memref<4x5xf32>, memref<3x5xf32>) outs(%da : memref<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The gradient of B: dB[k, n] = sum_m A[m, k] * dy[m, n], loops (k, n, m):
// A^T @ dy, trans_a = 1.

// CHECK-LABEL: func.func @matmul_grad_rhs
// CHECK-DAG:     %[[NO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[YES:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[M:.*]] = arith.constant 3 : i64
// CHECK-DAG:     %[[N:.*]] = arith.constant 5 : i64
// CHECK-DAG:     %[[K:.*]] = arith.constant 4 : i64
// CHECK:         call @shardrt_matmul_f32(%[[YES]], %[[YES]], %[[NO]], %[[M]], %[[N]], %[[K]], %[[M]], %[[N]], %[[N]],
#a = affine_map<(d0, d1, d2) -> (d2, d0)>
#dy = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @matmul_grad_rhs(%a: memref<4x3xf32>, %dy: memref<4x5xf32>, %db: memref<3x5xf32>) {
  linalg.generic {indexing_maps = [#a, #dy, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %dy : memref<4x3xf32>, memref<4x5xf32>) outs(%db : memref<3x5xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %p, %o : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// B given first, the reduction loop first, both operands transposed: A is
// the input that shares the output's row loop.

// CHECK-LABEL: func.func @matmul_swapped_inputs
// CHECK-SAME:    (%[[B:.*]]: memref<5x3xf32>, %[[A:.*]]: memref<3x4xf32>, %[[C:.*]]: memref<4x5xf32>)
// CHECK-DAG:     %[[YES:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[M:.*]] = arith.constant 4 : i64
// CHECK-DAG:     %[[N:.*]] = arith.constant 5 : i64
// CHECK-DAG:     %[[K:.*]] = arith.constant 3 : i64
// CHECK:         memref.extract_aligned_pointer_as_index %[[A]]
// CHECK:         %[[AP:.*]] = llvm.inttoptr
// CHECK:         memref.extract_aligned_pointer_as_index %[[B]]
// CHECK:         %[[BP:.*]] = llvm.inttoptr
// CHECK:         call @shardrt_matmul_f32(%[[YES]], %[[YES]], %[[YES]], %[[M]], %[[N]], %[[K]], %[[M]], %[[K]], %[[N]], %[[AP]], %[[BP]],
#b = affine_map<(d0, d1, d2) -> (d2, d0)>
#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#out = affine_map<(d0, d1, d2) -> (d1, d2)>
func.func @matmul_swapped_inputs(%b: memref<5x3xf32>, %a: memref<3x4xf32>, %c: memref<4x5xf32>) {
  linalg.generic {indexing_maps = [#b, #a, #out], iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%b, %a : memref<5x3xf32>, memref<3x4xf32>) outs(%c : memref<4x5xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %y, %x : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A row block of a stacked weight (a subview with a dynamic offset) is dense:
// its pointer is the aligned pointer plus 4 bytes per element of offset.

// CHECK-LABEL: func.func @matmul_offset
// CHECK-SAME:    (%[[A:.*]]: memref<2x3xf32>, %[[W:.*]]: memref<4x3x5xf32>, %[[C:.*]]: memref<2x5xf32>, %[[L:.*]]: index)
// CHECK:         %[[SLICE:.*]] = memref.subview %[[W]][%[[L]], 0, 0] [1, 3, 5] [1, 1, 1]
// CHECK:         memref.extract_aligned_pointer_as_index %[[A]]
// CHECK:         %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[SLICE]]
// CHECK:         %[[BUF:.*]], %[[OFF:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[SLICE]]
// CHECK:         %[[FOUR:.*]] = arith.constant 4 : index
// CHECK:         %[[BYTES:.*]] = arith.muli %[[OFF]], %[[FOUR]] : index
// CHECK:         %[[ADDR:.*]] = arith.addi %[[BASE]], %[[BYTES]] : index
// CHECK:         %[[ADDR64:.*]] = arith.index_cast %[[ADDR]] : index to i64
// CHECK:         %[[WP:.*]] = llvm.inttoptr %[[ADDR64]] : i64 to !llvm.ptr
// CHECK:         call @shardrt_matmul_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[WP]],
func.func @matmul_offset(%a: memref<2x3xf32>, %w: memref<4x3x5xf32>, %c: memref<2x5xf32>, %l: index) {
  %s = memref.subview %w[%l, 0, 0] [1, 3, 5] [1, 1, 1] : memref<4x3x5xf32> to memref<3x5xf32, strided<[5, 1], offset: ?>>
  linalg.matmul ins(%a, %s : memref<2x3xf32>, memref<3x5xf32, strided<[5, 1], offset: ?>>) outs(%c : memref<2x5xf32>)
  return
}

// -----

// A column block of a wider matrix is a strided view: B's leading dimension is
// the whole row's 10.

// CHECK-LABEL: func.func @matmul_column_block
// CHECK-DAG:     %[[LDB:.*]] = arith.constant 10 : i64
// CHECK-DAG:     %[[ACC:.*]] = arith.constant 1 : i32
// CHECK:         call @shardrt_matmul_f32(%[[ACC]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LDB]], %{{.*}},
func.func @matmul_column_block(%a: memref<4x3xf32>, %wide: memref<3x10xf32>, %c: memref<4x5xf32>) {
  %cols = memref.subview %wide[0, 0] [3, 5] [1, 1] : memref<3x10xf32> to memref<3x5xf32, strided<[10, 1]>>
  linalg.matmul ins(%a, %cols : memref<4x3xf32>, memref<3x5xf32, strided<[10, 1]>>) outs(%c : memref<4x5xf32>)
  return
}

// -----

// A batched matmul: one call for the batch, with each operand's batch stride
// (12, 15 and 20 elements; the outer batch of one, stride 0).

// CHECK-LABEL: func.func @batch_matmul
// CHECK-DAG:     %[[NO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG:     %[[TWO:.*]] = arith.constant 2 : i64
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG:     %[[SA:.*]] = arith.constant 12 : i64
// CHECK-DAG:     %[[SB:.*]] = arith.constant 15 : i64
// CHECK-DAG:     %[[SC:.*]] = arith.constant 20 : i64
// CHECK-NOT:     scf.for
// CHECK:         call @shardrt_batched_matmul_f32(%{{.*}}, %[[NO]], %[[NO]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]], %[[TWO]], %[[ZERO]], %[[SA]], %[[ZERO]], %[[SB]], %[[ZERO]], %[[SC]],
// CHECK-NEXT:    return
func.func @batch_matmul(%a: memref<2x4x3xf32>, %b: memref<2x3x5xf32>, %c: memref<2x4x5xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<2x4x3xf32>, memref<2x3x5xf32>) outs(%c : memref<2x4x5xf32>)
  return
}

// -----

// Three batch loops: the innermost two go to the kernel, the outer one stays a
// loop advancing each pointer by its stride (72, 54 and 72 elements).

// CHECK-LABEL: func.func @three_batch_loops
// CHECK-DAG:     %[[B1:.*]] = arith.constant 3 : i64
// CHECK-DAG:     %[[B2:.*]] = arith.constant 2 : i64
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK-DAG:       arith.constant 72 : index
// CHECK-DAG:       arith.constant 54 : index
// CHECK:           call @shardrt_batched_matmul_f32({{.*}}, %[[B1]], %[[B2]],
// CHECK-NOT:     scf.for
#a3 = affine_map<(p, q, r, m, n, k) -> (p, q, r, m, k)>
#b3 = affine_map<(p, q, r, m, n, k) -> (p, q, r, k, n)>
#c3 = affine_map<(p, q, r, m, n, k) -> (p, q, r, m, n)>
func.func @three_batch_loops(%a: memref<2x3x2x4x3xf32>, %b: memref<2x3x2x3x3xf32>, %c: memref<2x3x2x4x3xf32>) {
  linalg.generic {indexing_maps = [#a3, #b3, #c3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<2x3x2x4x3xf32>, memref<2x3x2x3x3xf32>) outs(%c : memref<2x3x2x4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %r = arith.addf %o, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Attention's scores by axis names, scores[b, h, s, t] = sum_d q[b, s, h, d] k[b, t, h, d]:
// batch loops b and h interleaved with the matrix dimensions, q read with leading
// dimension 12 (h * d), k transposed: one call for the 2 x 3 products, q and k
// advancing 72 elements a batch and 4 a head, the scores 108 and 36.

// CHECK-LABEL: func.func @attention_scores
// CHECK-DAG:     %[[NO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[YES:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[SIX:.*]] = arith.constant 6 : i64
// CHECK-DAG:     %[[FOUR:.*]] = arith.constant 4 : i64
// CHECK-DAG:     %[[TWELVE:.*]] = arith.constant 12 : i64
// CHECK-DAG:     %[[B:.*]] = arith.constant 2 : i64
// CHECK-DAG:     %[[H:.*]] = arith.constant 3 : i64
// CHECK-DAG:     %[[QB:.*]] = arith.constant 72 : i64
// CHECK-DAG:     %[[SB:.*]] = arith.constant 108 : i64
// CHECK-DAG:     %[[SH:.*]] = arith.constant 36 : i64
// CHECK-NOT:     scf.for
// CHECK:         call @shardrt_batched_matmul_f32(%[[YES]], %[[NO]], %[[YES]], %[[SIX]], %[[SIX]], %[[FOUR]], %[[TWELVE]], %[[TWELVE]], %[[SIX]], %[[B]], %[[H]], %[[QB]], %[[FOUR]], %[[QB]], %[[FOUR]], %[[SB]], %[[SH]],
#q = affine_map<(b, s, h, t, d) -> (b, s, h, d)>
#k = affine_map<(b, s, h, t, d) -> (b, t, h, d)>
#scores = affine_map<(b, s, h, t, d) -> (b, h, s, t)>
func.func @attention_scores(%q: memref<2x6x3x4xf32>, %k: memref<2x6x3x4xf32>, %s: memref<2x3x6x6xf32>) {
  linalg.generic {indexing_maps = [#q, #k, #scores], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<2x6x3x4xf32>, memref<2x6x3x4xf32>) outs(%s : memref<2x3x6x6xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %r = arith.addf %o, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// x[b, s, e] @ W[e, h, d]: the loops (b, s) flatten to M = 12 rows, (h, d) to
// N = 12 columns: one call, no loop.

// CHECK-LABEL: func.func @grouped_loops
// CHECK-DAG:     %[[NO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[TWELVE:.*]] = arith.constant 12 : i64
// CHECK-DAG:     %[[EIGHT:.*]] = arith.constant 8 : i64
// CHECK-DAG:     %[[ACC:.*]] = arith.constant 1 : i32
// CHECK-NOT:     scf.for
// CHECK:         call @shardrt_matmul_f32(%[[ACC]], %[[NO]], %[[NO]], %[[TWELVE]], %[[TWELVE]], %[[EIGHT]], %[[EIGHT]], %[[TWELVE]], %[[TWELVE]],
#x = affine_map<(b, s, h, d, e) -> (b, s, e)>
#w = affine_map<(b, s, h, d, e) -> (e, h, d)>
#y = affine_map<(b, s, h, d, e) -> (b, s, h, d)>
func.func @grouped_loops(%x: memref<2x6x8xf32>, %w: memref<8x3x4xf32>, %y: memref<2x6x3x4xf32>) {
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<2x6x8xf32>, memref<8x3x4xf32>) outs(%y : memref<2x6x3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %o, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// An output laid out [N, M] is computed as C^T = B^T A^T: the inputs swap and
// both are read transposed.

// CHECK-LABEL: func.func @transposed_output
// CHECK-SAME:    (%[[A:.*]]: memref<4x3xf32>, %[[B:.*]]: memref<3x5xf32>, %[[C:.*]]: memref<5x4xf32>)
// CHECK-DAG:     %[[YES:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[FIVE:.*]] = arith.constant 5 : i64
// CHECK-DAG:     %[[FOUR:.*]] = arith.constant 4 : i64
// CHECK-DAG:     %[[THREE:.*]] = arith.constant 3 : i64
// CHECK:         memref.extract_aligned_pointer_as_index %[[B]]
// CHECK:         memref.extract_aligned_pointer_as_index %[[A]]
// CHECK:         call @shardrt_matmul_f32(%[[YES]], %[[YES]], %[[YES]], %[[FIVE]], %[[FOUR]], %[[THREE]], %[[FIVE]], %[[THREE]], %[[FOUR]],
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#ct = affine_map<(m, n, k) -> (n, m)>
func.func @transposed_output(%a: memref<4x3xf32>, %b: memref<3x5xf32>, %c: memref<5x4xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #ct], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%c : memref<5x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %r = arith.addf %o, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Left to convert-linalg-to-loops: f64; every other column (no unit stride for
// BLAS); a body that is not out + a * b; a tensor op; a loop that only the
// output has (a broadcast, not a product).

// CHECK-LABEL: func.func @not_lowered
// CHECK-NOT:     call
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : memref<4x3xf64>, memref<3x5xf64>)
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : memref<4x3xf32>, memref<3x5xf32, strided<[10, 2]>>)
// CHECK:         linalg.generic
// CHECK:           arith.subf
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<3x5xf32>)
// CHECK:         linalg.generic
// CHECK-NOT:     call
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
#a4 = affine_map<(d0, d1, d2, d3) -> (d0, d3)>
#b4 = affine_map<(d0, d1, d2, d3) -> (d3, d1)>
#out4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @not_lowered(%a64: memref<4x3xf64>, %b64: memref<3x5xf64>, %c64: memref<4x5xf64>,
                       %a: memref<4x3xf32>, %wide: memref<3x10xf32>, %b: memref<3x5xf32>, %c: memref<4x5xf32>,
                       %ta: tensor<4x3xf32>, %tb: tensor<3x5xf32>, %tc: tensor<4x5xf32>,
                       %c3: memref<4x5x2xf32>) -> tensor<4x5xf32> {
  linalg.matmul ins(%a64, %b64 : memref<4x3xf64>, memref<3x5xf64>) outs(%c64 : memref<4x5xf64>)
  %cols = memref.subview %wide[0, 0] [3, 5] [1, 2] : memref<3x10xf32> to memref<3x5xf32, strided<[10, 2]>>
  linalg.matmul ins(%a, %cols : memref<4x3xf32>, memref<3x5xf32, strided<[10, 2]>>) outs(%c : memref<4x5xf32>)
  linalg.generic {indexing_maps = [#a, #b, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%c : memref<4x5xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.subf %o, %p : f32
    linalg.yield %s : f32
  }
  %t = linalg.matmul ins(%ta, %tb : tensor<4x3xf32>, tensor<3x5xf32>) outs(%tc : tensor<4x5xf32>) -> tensor<4x5xf32>
  linalg.generic {indexing_maps = [#a4, #b4, #out4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%c3 : memref<4x5x2xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return %t : tensor<4x5xf32>
}

// -----

// CHECK:       func.func private @shardrt_conv2d_f32(i32, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK-LABEL: func.func @conv
// Sizes n, h, w, c, pads 0 and 0, kh, kw, f, oh, ow, strides 2 and 1, dilations 1 and 2.
// CHECK-DAG:     %[[N:.*]] = arith.constant 2 : i64
// CHECK-DAG:     %[[H:.*]] = arith.constant 9 : i64
// CHECK-DAG:     %[[W:.*]] = arith.constant 10 : i64
// CHECK-DAG:     %[[C:.*]] = arith.constant 3 : i64
// CHECK-DAG:     %[[F:.*]] = arith.constant 4 : i64
// CHECK-DAG:     %[[OW:.*]] = arith.constant 6 : i64
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG:     %[[ACC:.*]] = arith.constant 1 : i32
// CHECK:         call @shardrt_conv2d_f32(%[[ACC]], %[[N]], %[[H]], %[[W]], %[[C]], %[[ZERO]], %[[ZERO]], %[[C]], %[[C]], %[[F]], %[[F]], %[[OW]], %[[N]], %[[ONE]], %[[ONE]], %[[N]],
func.func @conv(%x: memref<2x9x10x3xf32>, %k: memref<3x3x3x4xf32>, %y: memref<2x4x6x4xf32>) {
  linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<[2, 1]> : tensor<2xi64>}
      ins(%x, %k : memref<2x9x10x3xf32>, memref<3x3x3x4xf32>) outs(%y : memref<2x4x6x4xf32>)
  return
}

// -----

// The filter gradient (MLIRGen's form, library_call included), strides 2
// and 1 read off the maps; d0 + d5 * 2 and d5 * 2 + d0 alike.

// CHECK:       func.func private @shardrt_conv2d_filter_grad_f32(i32, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK-LABEL: func.func @filter_grad
// CHECK-SAME:    (%[[X:.*]]: memref<2x9x8x3xf32>, %[[DY:.*]]: memref<2x4x6x5xf32>, %[[DW:.*]]: memref<3x3x3x5xf32>)
// Sizes n, hp, wp, c, pads 0 and 0, kh, kw, f, oh, ow, sh, sw.
// CHECK-DAG:     %[[N:.*]] = arith.constant 2 : i64
// CHECK-DAG:     %[[HP:.*]] = arith.constant 9 : i64
// CHECK-DAG:     %[[WP:.*]] = arith.constant 8 : i64
// CHECK-DAG:     %[[C:.*]] = arith.constant 3 : i64
// CHECK-DAG:     %[[F:.*]] = arith.constant 5 : i64
// CHECK-DAG:     %[[OH:.*]] = arith.constant 4 : i64
// CHECK-DAG:     %[[OW:.*]] = arith.constant 6 : i64
// CHECK-DAG:     %[[SW:.*]] = arith.constant 1 : i64
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG:     %[[ACC:.*]] = arith.constant 1 : i32
// CHECK:         %[[XP:.*]] = llvm.inttoptr
// CHECK:         %[[DYP:.*]] = llvm.inttoptr
// CHECK:         %[[DWP:.*]] = llvm.inttoptr
// CHECK:         call @shardrt_conv2d_filter_grad_f32(%[[ACC]], %[[N]], %[[HP]], %[[WP]], %[[C]], %[[ZERO]], %[[ZERO]], %[[C]], %[[C]], %[[F]], %[[OH]], %[[OW]], %[[N]], %[[SW]], %[[XP]], %[[DYP]], %[[DWP]])
// CHECK-NOT:     linalg.generic
#xpad = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5 * 2 + d0, d1 + d6, d2)>
#dy = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
#dw = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @filter_grad(%x: memref<2x9x8x3xf32>, %dy: memref<2x4x6x5xf32>, %dw: memref<3x3x3x5xf32>) {
  linalg.generic {indexing_maps = [#xpad, #dy, #dw],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"],
                  library_call = "conv2d_filter_grad"}
      ins(%x, %dy : memref<2x9x8x3xf32>, memref<2x4x6x5xf32>) outs(%dw : memref<3x3x3x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The input gradient: dyp [N, H+KH-1, W+KW-1, F] read at d1 - d4 + 2.

// CHECK:       func.func private @shardrt_conv2d_input_grad_f32(i32, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr)
// CHECK-LABEL: func.func @input_grad
// Sizes n, h, w, c, kh, kw, f, dyp's 9 x 8, pads 0 and 0.
// CHECK-DAG:     %[[N:.*]] = arith.constant 2 : i64
// CHECK-DAG:     %[[H:.*]] = arith.constant 7 : i64
// CHECK-DAG:     %[[W:.*]] = arith.constant 6 : i64
// CHECK-DAG:     %[[C:.*]] = arith.constant 1 : i64
// CHECK-DAG:     %[[K:.*]] = arith.constant 3 : i64
// CHECK-DAG:     %[[F:.*]] = arith.constant 4 : i64
// CHECK-DAG:     %[[HQ:.*]] = arith.constant 9 : i64
// CHECK-DAG:     %[[WQ:.*]] = arith.constant 8 : i64
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG:     %[[ACC:.*]] = arith.constant 1 : i32
// CHECK:         call @shardrt_conv2d_input_grad_f32(%[[ACC]], %[[N]], %[[H]], %[[W]], %[[C]], %[[K]], %[[K]], %[[F]], %[[HQ]], %[[WQ]], %[[ZERO]], %[[ZERO]],
#dyp = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 - d4 + 2, d2 - d5 + 2, d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d3, d6)>
#dx = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
func.func @input_grad(%dyp: memref<2x9x8x4xf32>, %w: memref<3x3x1x4xf32>, %dx: memref<2x7x6x1xf32>) {
  linalg.generic {indexing_maps = [#dyp, #w, #dx],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"],
                  library_call = "conv2d_input_grad"}
      ins(%dyp, %w : memref<2x9x8x4xf32>, memref<3x3x1x4xf32>) outs(%dx : memref<2x7x6x1xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Near misses stay generics: an input gradient whose offset is not KH-1 (the
// kernel reads dyp from its first row), a filter gradient with dilation, and
// the average-pooling gradient (floordiv).

// CHECK-LABEL: func.func @near_misses
// CHECK-NOT:     call
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT:     call
#dyp = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 - d4 + 1, d2 - d5 + 2, d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d3, d6)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
#xpad = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5 + d0 * 2, d6 + d1, d2)>
#dy = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5, d6, d3)>
#pool_dy = affine_map<(d0, d1, d2, d3) -> (d0, d1 floordiv 2, d2 floordiv 2, d3)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @near_misses(%dyp: memref<2x9x8x4xf32>, %w: memref<3x3x1x4xf32>, %dx: memref<2x7x6x1xf32>,
                       %x: memref<2x9x8x3xf32>, %dy: memref<2x3x6x5xf32>, %dw: memref<3x3x3x5xf32>,
                       %pdy: memref<2x3x3x4xf32>, %pdx: memref<2x6x6x4xf32>) {
  linalg.generic {indexing_maps = [#dyp, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%dyp, %w : memref<2x9x8x4xf32>, memref<3x3x1x4xf32>) outs(%dx : memref<2x7x6x1xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#xpad, #dy, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %dy : memref<2x9x8x3xf32>, memref<2x3x6x5xf32>) outs(%dw : memref<3x3x3x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  %quarter = arith.constant 0.25 : f32
  linalg.generic {indexing_maps = [#pool_dy, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%pdy : memref<2x3x3x4xf32>) outs(%pdx : memref<2x6x6x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %quarter : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A fresh buffer whose only write before the kernel is a zero fill: the fill
// goes and the kernel overwrites (accumulate = 0). Two inits that another op
// reads first, or fill with another value, stay and are added to (accumulate = 1).

// CHECK-LABEL: func.func @overwrite_zero_init
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         %[[FRESH:.*]] = memref.alloc() : memref<4x5xf32>
// CHECK-NOT:     linalg.fill
// CHECK:         %[[OVERWRITE:.*]] = arith.constant 0 : i32
// CHECK-NOT:     linalg.fill
// CHECK:         call @shardrt_matmul_f32(%[[OVERWRITE]],
// CHECK:         %[[READ:.*]] = memref.alloc() : memref<4x5xf32>
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%[[READ]]
// CHECK:         memref.copy %[[READ]]
// CHECK:         %[[ADD:.*]] = arith.constant 1 : i32
// CHECK:         call @shardrt_matmul_f32(%[[ADD]],
// CHECK:         %[[ONES:.*]] = memref.alloc() : memref<4x5xf32>
// CHECK:         linalg.fill ins(%[[ONE]] : f32) outs(%[[ONES]]
// CHECK:         %[[ADD2:.*]] = arith.constant 1 : i32
// CHECK:         call @shardrt_matmul_f32(%[[ADD2]],
func.func @overwrite_zero_init(%a: memref<4x3xf32>, %b: memref<3x5xf32>, %seen: memref<4x5xf32>)
    -> (memref<4x5xf32>, memref<4x5xf32>, memref<4x5xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %fresh = memref.alloc() : memref<4x5xf32>
  linalg.fill ins(%zero : f32) outs(%fresh : memref<4x5xf32>)
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%fresh : memref<4x5xf32>)
  %read = memref.alloc() : memref<4x5xf32>
  linalg.fill ins(%zero : f32) outs(%read : memref<4x5xf32>)
  memref.copy %read, %seen : memref<4x5xf32> to memref<4x5xf32>
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%read : memref<4x5xf32>)
  %ones = memref.alloc() : memref<4x5xf32>
  linalg.fill ins(%one : f32) outs(%ones : memref<4x5xf32>)
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%ones : memref<4x5xf32>)
  return %fresh, %read, %ones : memref<4x5xf32>, memref<4x5xf32>, memref<4x5xf32>
}

// -----

// A function's output argument (a layer function's result, in its caller's
// buffer) zero-filled before other ops: the fill goes and the kernel overwrites.
// One that an op reads between the fill and the kernel keeps it.

// CHECK-LABEL: func.func @overwrite_zero_filled_argument
// CHECK-NOT:     linalg.fill {{.*}} outs(%arg2
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%arg3
// CHECK:         %[[OVERWRITE:.*]] = arith.constant 0 : i32
// CHECK:         call @shardrt_matmul_f32(%[[OVERWRITE]],
// CHECK:         memref.copy %arg3
// CHECK:         %[[ADD:.*]] = arith.constant 1 : i32
// CHECK:         call @shardrt_matmul_f32(%[[ADD]],
func.func @overwrite_zero_filled_argument(%a: memref<4x3xf32>, %b: memref<3x5xf32>,
                                          %out: memref<4x5xf32>, %read: memref<4x5xf32>,
                                          %seen: memref<4x5xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<4x5xf32>)
  linalg.fill ins(%zero : f32) outs(%read : memref<4x5xf32>)
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%out : memref<4x5xf32>)
  memref.copy %read, %seen : memref<4x5xf32> to memref<4x5xf32>
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%read : memref<4x5xf32>)
  return
}

// -----

// A slot of a stack (a layer loop's residual, made in place) zero-filled right
// before the kernel: the fill goes and the kernel overwrites. One with a copy into
// the stack between the fill and the kernel (it may write the slot) keeps its fill.

// CHECK-LABEL: func.func @overwrite_zero_filled_slot
// CHECK:         %[[SLOT:.*]] = memref.subview %arg2[0, 0, 0]
// CHECK-NOT:     linalg.fill
// CHECK:         %[[OVERWRITE:.*]] = arith.constant 0 : i32
// CHECK:         call @shardrt_matmul_f32(%[[OVERWRITE]],
// CHECK:         %[[OTHER:.*]] = memref.subview %arg2[1, 0, 0]
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%[[OTHER]]
// CHECK:         memref.copy
// CHECK:         %[[ADD:.*]] = arith.constant 1 : i32
// CHECK:         call @shardrt_matmul_f32(%[[ADD]],
func.func @overwrite_zero_filled_slot(%a: memref<4x3xf32>, %b: memref<3x5xf32>,
                                      %stack: memref<2x4x5xf32>, %seen: memref<2x4x5xf32>) {
  %zero = arith.constant 0.0 : f32
  %slot = memref.subview %stack[0, 0, 0] [1, 4, 5] [1, 1, 1] : memref<2x4x5xf32> to memref<4x5xf32, strided<[5, 1]>>
  linalg.fill ins(%zero : f32) outs(%slot : memref<4x5xf32, strided<[5, 1]>>)
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%slot : memref<4x5xf32, strided<[5, 1]>>)
  %other = memref.subview %stack[1, 0, 0] [1, 4, 5] [1, 1, 1] : memref<2x4x5xf32> to memref<4x5xf32, strided<[5, 1], offset: 20>>
  linalg.fill ins(%zero : f32) outs(%other : memref<4x5xf32, strided<[5, 1], offset: 20>>)
  memref.copy %seen, %stack : memref<2x4x5xf32> to memref<2x4x5xf32>
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x5xf32>) outs(%other : memref<4x5xf32, strided<[5, 1], offset: 20>>)
  return
}

// -----

// A convolution's zero-filled output is overwritten too.

// CHECK-LABEL: func.func @conv_overwrite
// CHECK:         %[[OVERWRITE:.*]] = arith.constant 0 : i32
// CHECK-NOT:     linalg.fill
// CHECK:         call @shardrt_conv2d_f32(%[[OVERWRITE]],
func.func @conv_overwrite(%x: memref<1x5x5x2xf32>, %k: memref<3x3x2x4xf32>) -> memref<1x3x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %y = memref.alloc() : memref<1x3x3x4xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<1x3x3x4xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %k : memref<1x5x5x2xf32>, memref<3x3x2x4xf32>) outs(%y : memref<1x3x3x4xf32>)
  return %y : memref<1x3x3x4xf32>
}
