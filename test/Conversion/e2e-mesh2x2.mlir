// End to end on a 2x2 mesh (4 ranks; rank = 2 * coord0 + coord1): collectives over
// one axis, over both axes in mesh order and in the reverse order (grid_axes = [1, 0],
// where shard orders a group with axis 1 major and the runtime with axis 0 major, so
// shardc-shard-to-runtime permutes blocks), and a collective whose input is a
// strided view.
// Element i of every filled buffer is 100 * rank + i (Inputs/e2e_main.c).
//
// With grid_axes = [1, 0] the group index of ranks 0, 1, 2, 3 is 0, 2, 1, 3.

// RUN: %shardc-opt %s %codegen | mlir-translate-22 --mlir-to-llvmir -o %t.ll
// RUN: %e2e_link %t.ll -o %t
// RUN: timeout 120 %mpirun -np 4 %t 2 2 | sort | FileCheck %s

shard.grid @grid(shape = 2x2)

func.func private @fill_f32(memref<*xf32>)
func.func private @fill_i32(memref<*xi32>)
func.func private @print_f32(i32, memref<*xf32>)
func.func private @print_i32(i32, memref<*xi32>)
func.func private @print_index(i32, index)

func.func @all_reduce_axis1(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = shard.all_reduce %x on @grid grid_axes = [1] : tensor<2xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

func.func @all_reduce_axes10(%x: tensor<2xi32>) -> tensor<2xi32> {
  %0 = shard.all_reduce %x on @grid grid_axes = [1, 0] : tensor<2xi32> -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

func.func @all_gather_axes01(%x: tensor<1x2xf32>) -> tensor<4x2xf32> {
  %0 = shard.all_gather %x on @grid grid_axes = [0, 1] gather_axis = 0 : tensor<1x2xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

func.func @all_gather_axes10(%x: tensor<1x2xf32>) -> tensor<4x2xf32> {
  %0 = shard.all_gather %x on @grid grid_axes = [1, 0] gather_axis = 0 : tensor<1x2xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

func.func @all_gather_axis0_dim1(%x: tensor<1x2xf32>) -> tensor<1x4xf32> {
  %0 = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 1 : tensor<1x2xf32> -> tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}

func.func @reduce_scatter_axes10(%x: tensor<1x4xf32>) -> tensor<1x1xf32> {
  %0 = shard.reduce_scatter %x on @grid grid_axes = [1, 0] scatter_axis = 1 : tensor<1x4xf32> -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

func.func @reduce_scatter_axes01(%x: tensor<1x4xf32>) -> tensor<1x1xf32> {
  %0 = shard.reduce_scatter %x on @grid grid_axes = [0, 1] scatter_axis = 1 : tensor<1x4xf32> -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

func.func @all_to_all_axes10(%x: tensor<4x1xi32>) -> tensor<4x1xi32> {
  %0 = shard.all_to_all %x on @grid grid_axes = [1, 0] split_axis = 0 concat_axis = 0 : tensor<4x1xi32> -> tensor<4x1xi32>
  return %0 : tensor<4x1xi32>
}

func.func @all_to_all_axes10_dims(%x: tensor<4x2xi32>) -> tensor<1x8xi32> {
  %0 = shard.all_to_all %x on @grid grid_axes = [1, 0] split_axis = 0 concat_axis = 1 : tensor<4x2xi32> -> tensor<1x8xi32>
  return %0 : tensor<1x8xi32>
}

func.func @all_slice_axes10(%x: tensor<1x4xf32>) -> tensor<1x1xf32> {
  %0 = shard.all_slice %x on @grid grid_axes = [1, 0] slice_axis = 1 : tensor<1x4xf32> -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// The slice is a strided view; bufferization copies it into a dense buffer before
// the runtime reads it.
func.func @slice_then_gather(%x: tensor<2x4xf32>) -> tensor<4x2xf32> {
  %0 = shard.all_slice %x on @grid grid_axes = [1] slice_axis = 1 : tensor<2x4xf32> -> tensor<2x2xf32>
  %1 = shard.all_gather %0 on @grid grid_axes = [0] gather_axis = 0 : tensor<2x2xf32> -> tensor<4x2xf32>
  return %1 : tensor<4x2xf32>
}

func.func @indices() -> (index, index, index, index, index) {
  %0:2 = shard.process_multi_index on @grid : index, index
  %1 = shard.process_multi_index on @grid axes = [1] : index
  %2 = shard.process_linear_index on @grid : index
  %3 = shard.grid_shape @grid axes = [1] : index
  return %0#0, %0#1, %1, %2, %3 : index, index, index, index, index
}

func.func @test_main() {
  // Axis subsets {1}, {0, 1} and {0}: three communicators on every rank.
  // CHECK-LABEL: rank 0 #01 [2]: 100 102
  // CHECK-NEXT:  rank 0 #02 [2]: 600 604
  // CHECK-NEXT:  rank 0 #03 [4x2]: 0 1 100 101 200 201 300 301
  // CHECK-NEXT:  rank 0 #04 [4x2]: 0 1 200 201 100 101 300 301
  // CHECK-NEXT:  rank 0 #05 [1x4]: 0 1 200 201
  // CHECK-NEXT:  rank 0 #06 [1x1]: 600
  // CHECK-NEXT:  rank 0 #07 [1x1]: 600
  // CHECK-NEXT:  rank 0 #08 [4x1]: 0 200 100 300
  // CHECK-NEXT:  rank 0 #09 [1x8]: 0 1 200 201 100 101 300 301
  // CHECK-NEXT:  rank 0 #10 [1x1]: 0
  // CHECK-NEXT:  rank 0 #11 [4x2]: 0 1 4 5 200 201 204 205
  // CHECK-NEXT:  rank 0 #12 index: 0
  // CHECK-NEXT:  rank 0 #13 index: 0
  // CHECK-NEXT:  rank 0 #14 index: 0
  // CHECK-NEXT:  rank 0 #15 index: 0
  // CHECK-NEXT:  rank 0 #16 index: 2
  // CHECK-NEXT:  rank 0 communicators: 3
  // CHECK-NEXT:  rank 1 #01 [2]: 100 102
  // CHECK-NEXT:  rank 1 #02 [2]: 600 604
  // CHECK-NEXT:  rank 1 #03 [4x2]: 0 1 100 101 200 201 300 301
  // CHECK-NEXT:  rank 1 #04 [4x2]: 0 1 200 201 100 101 300 301
  // CHECK-NEXT:  rank 1 #05 [1x4]: 100 101 300 301
  // CHECK-NEXT:  rank 1 #06 [1x1]: 608
  // CHECK-NEXT:  rank 1 #07 [1x1]: 604
  // CHECK-NEXT:  rank 1 #08 [4x1]: 2 202 102 302
  // CHECK-NEXT:  rank 1 #09 [1x8]: 4 5 204 205 104 105 304 305
  // CHECK-NEXT:  rank 1 #10 [1x1]: 102
  // CHECK-NEXT:  rank 1 #11 [4x2]: 102 103 106 107 302 303 306 307
  // CHECK-NEXT:  rank 1 #12 index: 0
  // CHECK-NEXT:  rank 1 #13 index: 1
  // CHECK-NEXT:  rank 1 #14 index: 1
  // CHECK-NEXT:  rank 1 #15 index: 1
  // CHECK-NEXT:  rank 1 #16 index: 2
  // CHECK-NEXT:  rank 1 communicators: 3
  // CHECK-NEXT:  rank 2 #01 [2]: 500 502
  // CHECK-NEXT:  rank 2 #02 [2]: 600 604
  // CHECK-NEXT:  rank 2 #03 [4x2]: 0 1 100 101 200 201 300 301
  // CHECK-NEXT:  rank 2 #04 [4x2]: 0 1 200 201 100 101 300 301
  // CHECK-NEXT:  rank 2 #05 [1x4]: 0 1 200 201
  // CHECK-NEXT:  rank 2 #06 [1x1]: 604
  // CHECK-NEXT:  rank 2 #07 [1x1]: 608
  // CHECK-NEXT:  rank 2 #08 [4x1]: 1 201 101 301
  // CHECK-NEXT:  rank 2 #09 [1x8]: 2 3 202 203 102 103 302 303
  // CHECK-NEXT:  rank 2 #10 [1x1]: 201
  // CHECK-NEXT:  rank 2 #11 [4x2]: 0 1 4 5 200 201 204 205
  // CHECK-NEXT:  rank 2 #12 index: 1
  // CHECK-NEXT:  rank 2 #13 index: 0
  // CHECK-NEXT:  rank 2 #14 index: 0
  // CHECK-NEXT:  rank 2 #15 index: 2
  // CHECK-NEXT:  rank 2 #16 index: 2
  // CHECK-NEXT:  rank 2 communicators: 3
  // CHECK-NEXT:  rank 3 #01 [2]: 500 502
  // CHECK-NEXT:  rank 3 #02 [2]: 600 604
  // CHECK-NEXT:  rank 3 #03 [4x2]: 0 1 100 101 200 201 300 301
  // CHECK-NEXT:  rank 3 #04 [4x2]: 0 1 200 201 100 101 300 301
  // CHECK-NEXT:  rank 3 #05 [1x4]: 100 101 300 301
  // CHECK-NEXT:  rank 3 #06 [1x1]: 612
  // CHECK-NEXT:  rank 3 #07 [1x1]: 612
  // CHECK-NEXT:  rank 3 #08 [4x1]: 3 203 103 303
  // CHECK-NEXT:  rank 3 #09 [1x8]: 6 7 206 207 106 107 306 307
  // CHECK-NEXT:  rank 3 #10 [1x1]: 303
  // CHECK-NEXT:  rank 3 #11 [4x2]: 102 103 106 107 302 303 306 307
  // CHECK-NEXT:  rank 3 #12 index: 1
  // CHECK-NEXT:  rank 3 #13 index: 1
  // CHECK-NEXT:  rank 3 #14 index: 1
  // CHECK-NEXT:  rank 3 #15 index: 3
  // CHECK-NEXT:  rank 3 #16 index: 2
  // CHECK-NEXT:  rank 3 communicators: 3
  %in1 = memref.alloc() : memref<2xf32>
  %inu1 = memref.cast %in1 : memref<2xf32> to memref<*xf32>
  call @fill_f32(%inu1) : (memref<*xf32>) -> ()
  %t1 = bufferization.to_tensor %in1 restrict : memref<2xf32> to tensor<2xf32>
  %r1 = call @all_reduce_axis1(%t1) : (tensor<2xf32>) -> tensor<2xf32>
  %m1 = bufferization.to_buffer %r1 read_only : tensor<2xf32> to memref<2xf32>
  %u1 = memref.cast %m1 : memref<2xf32> to memref<*xf32>
  %c1 = arith.constant 1 : i32
  call @print_f32(%c1, %u1) : (i32, memref<*xf32>) -> ()

  %in2 = memref.alloc() : memref<2xi32>
  %inu2 = memref.cast %in2 : memref<2xi32> to memref<*xi32>
  call @fill_i32(%inu2) : (memref<*xi32>) -> ()
  %t2 = bufferization.to_tensor %in2 restrict : memref<2xi32> to tensor<2xi32>
  %r2 = call @all_reduce_axes10(%t2) : (tensor<2xi32>) -> tensor<2xi32>
  %m2 = bufferization.to_buffer %r2 read_only : tensor<2xi32> to memref<2xi32>
  %u2 = memref.cast %m2 : memref<2xi32> to memref<*xi32>
  %c2 = arith.constant 2 : i32
  call @print_i32(%c2, %u2) : (i32, memref<*xi32>) -> ()

  %in3 = memref.alloc() : memref<1x2xf32>
  %inu3 = memref.cast %in3 : memref<1x2xf32> to memref<*xf32>
  call @fill_f32(%inu3) : (memref<*xf32>) -> ()
  %t3 = bufferization.to_tensor %in3 restrict : memref<1x2xf32> to tensor<1x2xf32>
  %r3 = call @all_gather_axes01(%t3) : (tensor<1x2xf32>) -> tensor<4x2xf32>
  %m3 = bufferization.to_buffer %r3 read_only : tensor<4x2xf32> to memref<4x2xf32>
  %u3 = memref.cast %m3 : memref<4x2xf32> to memref<*xf32>
  %c3 = arith.constant 3 : i32
  call @print_f32(%c3, %u3) : (i32, memref<*xf32>) -> ()

  %in4 = memref.alloc() : memref<1x2xf32>
  %inu4 = memref.cast %in4 : memref<1x2xf32> to memref<*xf32>
  call @fill_f32(%inu4) : (memref<*xf32>) -> ()
  %t4 = bufferization.to_tensor %in4 restrict : memref<1x2xf32> to tensor<1x2xf32>
  %r4 = call @all_gather_axes10(%t4) : (tensor<1x2xf32>) -> tensor<4x2xf32>
  %m4 = bufferization.to_buffer %r4 read_only : tensor<4x2xf32> to memref<4x2xf32>
  %u4 = memref.cast %m4 : memref<4x2xf32> to memref<*xf32>
  %c4 = arith.constant 4 : i32
  call @print_f32(%c4, %u4) : (i32, memref<*xf32>) -> ()

  %in5 = memref.alloc() : memref<1x2xf32>
  %inu5 = memref.cast %in5 : memref<1x2xf32> to memref<*xf32>
  call @fill_f32(%inu5) : (memref<*xf32>) -> ()
  %t5 = bufferization.to_tensor %in5 restrict : memref<1x2xf32> to tensor<1x2xf32>
  %r5 = call @all_gather_axis0_dim1(%t5) : (tensor<1x2xf32>) -> tensor<1x4xf32>
  %m5 = bufferization.to_buffer %r5 read_only : tensor<1x4xf32> to memref<1x4xf32>
  %u5 = memref.cast %m5 : memref<1x4xf32> to memref<*xf32>
  %c5 = arith.constant 5 : i32
  call @print_f32(%c5, %u5) : (i32, memref<*xf32>) -> ()

  %in6 = memref.alloc() : memref<1x4xf32>
  %inu6 = memref.cast %in6 : memref<1x4xf32> to memref<*xf32>
  call @fill_f32(%inu6) : (memref<*xf32>) -> ()
  %t6 = bufferization.to_tensor %in6 restrict : memref<1x4xf32> to tensor<1x4xf32>
  %r6 = call @reduce_scatter_axes10(%t6) : (tensor<1x4xf32>) -> tensor<1x1xf32>
  %m6 = bufferization.to_buffer %r6 read_only : tensor<1x1xf32> to memref<1x1xf32>
  %u6 = memref.cast %m6 : memref<1x1xf32> to memref<*xf32>
  %c6 = arith.constant 6 : i32
  call @print_f32(%c6, %u6) : (i32, memref<*xf32>) -> ()

  %in7 = memref.alloc() : memref<1x4xf32>
  %inu7 = memref.cast %in7 : memref<1x4xf32> to memref<*xf32>
  call @fill_f32(%inu7) : (memref<*xf32>) -> ()
  %t7 = bufferization.to_tensor %in7 restrict : memref<1x4xf32> to tensor<1x4xf32>
  %r7 = call @reduce_scatter_axes01(%t7) : (tensor<1x4xf32>) -> tensor<1x1xf32>
  %m7 = bufferization.to_buffer %r7 read_only : tensor<1x1xf32> to memref<1x1xf32>
  %u7 = memref.cast %m7 : memref<1x1xf32> to memref<*xf32>
  %c7 = arith.constant 7 : i32
  call @print_f32(%c7, %u7) : (i32, memref<*xf32>) -> ()

  %in8 = memref.alloc() : memref<4x1xi32>
  %inu8 = memref.cast %in8 : memref<4x1xi32> to memref<*xi32>
  call @fill_i32(%inu8) : (memref<*xi32>) -> ()
  %t8 = bufferization.to_tensor %in8 restrict : memref<4x1xi32> to tensor<4x1xi32>
  %r8 = call @all_to_all_axes10(%t8) : (tensor<4x1xi32>) -> tensor<4x1xi32>
  %m8 = bufferization.to_buffer %r8 read_only : tensor<4x1xi32> to memref<4x1xi32>
  %u8 = memref.cast %m8 : memref<4x1xi32> to memref<*xi32>
  %c8 = arith.constant 8 : i32
  call @print_i32(%c8, %u8) : (i32, memref<*xi32>) -> ()

  %in9 = memref.alloc() : memref<4x2xi32>
  %inu9 = memref.cast %in9 : memref<4x2xi32> to memref<*xi32>
  call @fill_i32(%inu9) : (memref<*xi32>) -> ()
  %t9 = bufferization.to_tensor %in9 restrict : memref<4x2xi32> to tensor<4x2xi32>
  %r9 = call @all_to_all_axes10_dims(%t9) : (tensor<4x2xi32>) -> tensor<1x8xi32>
  %m9 = bufferization.to_buffer %r9 read_only : tensor<1x8xi32> to memref<1x8xi32>
  %u9 = memref.cast %m9 : memref<1x8xi32> to memref<*xi32>
  %c9 = arith.constant 9 : i32
  call @print_i32(%c9, %u9) : (i32, memref<*xi32>) -> ()

  %in10 = memref.alloc() : memref<1x4xf32>
  %inu10 = memref.cast %in10 : memref<1x4xf32> to memref<*xf32>
  call @fill_f32(%inu10) : (memref<*xf32>) -> ()
  %t10 = bufferization.to_tensor %in10 restrict : memref<1x4xf32> to tensor<1x4xf32>
  %r10 = call @all_slice_axes10(%t10) : (tensor<1x4xf32>) -> tensor<1x1xf32>
  %m10 = bufferization.to_buffer %r10 read_only : tensor<1x1xf32> to memref<1x1xf32>
  %u10 = memref.cast %m10 : memref<1x1xf32> to memref<*xf32>
  %c10 = arith.constant 10 : i32
  call @print_f32(%c10, %u10) : (i32, memref<*xf32>) -> ()

  %in11 = memref.alloc() : memref<2x4xf32>
  %inu11 = memref.cast %in11 : memref<2x4xf32> to memref<*xf32>
  call @fill_f32(%inu11) : (memref<*xf32>) -> ()
  %t11 = bufferization.to_tensor %in11 restrict : memref<2x4xf32> to tensor<2x4xf32>
  %r11 = call @slice_then_gather(%t11) : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %m11 = bufferization.to_buffer %r11 read_only : tensor<4x2xf32> to memref<4x2xf32>
  %u11 = memref.cast %m11 : memref<4x2xf32> to memref<*xf32>
  %c11 = arith.constant 11 : i32
  call @print_f32(%c11, %u11) : (i32, memref<*xf32>) -> ()

  %i:5 = call @indices() : () -> (index, index, index, index, index)
  %c12 = arith.constant 12 : i32
  call @print_index(%c12, %i#0) : (i32, index) -> ()
  %c13 = arith.constant 13 : i32
  call @print_index(%c13, %i#1) : (i32, index) -> ()
  %c14 = arith.constant 14 : i32
  call @print_index(%c14, %i#2) : (i32, index) -> ()
  %c15 = arith.constant 15 : i32
  call @print_index(%c15, %i#3) : (i32, index) -> ()
  %c16 = arith.constant 16 : i32
  call @print_index(%c16, %i#4) : (i32, index) -> ()
  return
}
