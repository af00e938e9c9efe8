// End to end on a mesh of 2: every collective lowered by shardc-shard-to-runtime,
// through shardc's code generation pipeline, linked with libshardrt and run on 2
// ranks. Inputs are filled by Inputs/e2e_main.c: element i of a rank's buffer is
// 100 * rank + i.
// Functions take and return tensors; test_main moves between memrefs (filled and
// printed by the C driver) and tensors with bufferization.to_tensor / to_buffer.

// RUN: %shardc-opt %s %codegen | mlir-translate-22 --mlir-to-llvmir -o %t.ll
// RUN: %e2e_link %t.ll -o %t
// RUN: timeout 120 %mpirun -np 2 %t 2 | sort | FileCheck %s

shard.grid @grid(shape = 2)

func.func private @fill_f32(memref<*xf32>)
func.func private @fill_i32(memref<*xi32>)
func.func private @print_f32(i32, memref<*xf32>)
func.func private @print_i32(i32, memref<*xi32>)
func.func private @print_index(i32, index)

func.func @all_reduce_sum(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = shard.all_reduce %x on @grid grid_axes = [0] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

func.func @all_reduce_i32(%x: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) {
  %0 = shard.all_reduce %x on @grid grid_axes = [0] reduction = max : tensor<4xi32> -> tensor<4xi32>
  %1 = shard.all_reduce %x on @grid grid_axes = [0] reduction = min : tensor<4xi32> -> tensor<4xi32>
  return %0, %1 : tensor<4xi32>, tensor<4xi32>
}

func.func @all_reduce_product(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = shard.all_reduce %x on @grid grid_axes = [0] reduction = product : tensor<3xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

func.func @all_gather_dim1(%x: tensor<2x3xf32>) -> tensor<2x6xf32> {
  %0 = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 1 : tensor<2x3xf32> -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

func.func @reduce_scatter(%x: tensor<4x2xf32>) -> tensor<2x2xf32> {
  %0 = shard.reduce_scatter %x on @grid grid_axes = [0] scatter_axis = 0 : tensor<4x2xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

func.func @all_to_all(%x: tensor<4x2xi32>) -> tensor<2x4xi32> {
  %0 = shard.all_to_all %x on @grid grid_axes = [0] split_axis = 0 concat_axis = 1 : tensor<4x2xi32> -> tensor<2x4xi32>
  return %0 : tensor<2x4xi32>
}

func.func @all_slice(%x: tensor<2x4xf32>) -> tensor<2x2xf32> {
  %0 = shard.all_slice %x on @grid grid_axes = [0] slice_axis = 1 : tensor<2x4xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

func.func @indices() -> (index, index, index) {
  %0 = shard.process_multi_index on @grid : index
  %1 = shard.process_linear_index on @grid : index
  %2 = shard.grid_shape @grid : index
  return %0, %1, %2 : index, index, index
}

// A collective in a loop: the sum over 2 ranks doubles the value each time, and
// its buffers are reused or freed every iteration (with deallocation).
func.func @loop(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %x) -> tensor<2xf32> {
    %s = shard.all_reduce %acc on @grid grid_axes = [0] : tensor<2xf32> -> tensor<2xf32>
    scf.yield %s : tensor<2xf32>
  }
  return %r : tensor<2xf32>
}

// The input of an all_reduce stays as it was.
func.func @all_reduce_keeps_input(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = shard.all_reduce %x on @grid grid_axes = [0] : tensor<2xf32> -> tensor<2xf32>
  return %0, %x : tensor<2xf32>, tensor<2xf32>
}

func.func @test_main() {
  // CHECK-LABEL: rank 0 #01 [2x3]: 100 102 104 106 108 110
  // CHECK-NEXT:  rank 0 #02 [4]: 100 101 102 103
  // CHECK-NEXT:  rank 0 #03 [4]: 0 1 2 3
  // CHECK-NEXT:  rank 0 #04 [3]: 0 101 204
  // CHECK-NEXT:  rank 0 #05 [2x6]: 0 1 2 100 101 102 3 4 5 103 104 105
  // CHECK-NEXT:  rank 0 #06 [2x2]: 100 102 104 106
  // CHECK-NEXT:  rank 0 #07 [2x4]: 0 1 100 101 2 3 102 103
  // CHECK-NEXT:  rank 0 #08 [2x2]: 0 1 4 5
  // CHECK-NEXT:  rank 0 #09 index: 0
  // CHECK-NEXT:  rank 0 #10 index: 0
  // CHECK-NEXT:  rank 0 #11 index: 2
  // CHECK-NEXT:  rank 0 #12 [2]: 400 408
  // CHECK-NEXT:  rank 0 #13 [2]: 100 102
  // CHECK-NEXT:  rank 0 #14 [2]: 0 1
  // One communicator for the one axis subset used, however many calls.
  // CHECK-NEXT:  rank 0 communicators: 1
  // CHECK-NEXT:  rank 1 #01 [2x3]: 100 102 104 106 108 110
  // CHECK-NEXT:  rank 1 #02 [4]: 100 101 102 103
  // CHECK-NEXT:  rank 1 #03 [4]: 0 1 2 3
  // CHECK-NEXT:  rank 1 #04 [3]: 0 101 204
  // CHECK-NEXT:  rank 1 #05 [2x6]: 0 1 2 100 101 102 3 4 5 103 104 105
  // CHECK-NEXT:  rank 1 #06 [2x2]: 108 110 112 114
  // CHECK-NEXT:  rank 1 #07 [2x4]: 4 5 104 105 6 7 106 107
  // CHECK-NEXT:  rank 1 #08 [2x2]: 102 103 106 107
  // CHECK-NEXT:  rank 1 #09 index: 1
  // CHECK-NEXT:  rank 1 #10 index: 1
  // CHECK-NEXT:  rank 1 #11 index: 2
  // CHECK-NEXT:  rank 1 #12 [2]: 400 408
  // CHECK-NEXT:  rank 1 #13 [2]: 100 102
  // CHECK-NEXT:  rank 1 #14 [2]: 100 101
  // CHECK-NEXT:  rank 1 communicators: 1
  %b23 = memref.alloc() : memref<2x3xf32>
  %u23 = memref.cast %b23 : memref<2x3xf32> to memref<*xf32>
  call @fill_f32(%u23) : (memref<*xf32>) -> ()
  %t23 = bufferization.to_tensor %b23 restrict : memref<2x3xf32> to tensor<2x3xf32>

  %c1 = arith.constant 1 : i32
  %r1 = call @all_reduce_sum(%t23) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %m1 = bufferization.to_buffer %r1 read_only : tensor<2x3xf32> to memref<2x3xf32>
  %p1 = memref.cast %m1 : memref<2x3xf32> to memref<*xf32>
  call @print_f32(%c1, %p1) : (i32, memref<*xf32>) -> ()

  %b4 = memref.alloc() : memref<4xi32>
  %u4 = memref.cast %b4 : memref<4xi32> to memref<*xi32>
  call @fill_i32(%u4) : (memref<*xi32>) -> ()
  %t4 = bufferization.to_tensor %b4 restrict : memref<4xi32> to tensor<4xi32>
  %r2:2 = call @all_reduce_i32(%t4) : (tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>)
  %c2 = arith.constant 2 : i32
  %m2 = bufferization.to_buffer %r2#0 read_only : tensor<4xi32> to memref<4xi32>
  %p2 = memref.cast %m2 : memref<4xi32> to memref<*xi32>
  call @print_i32(%c2, %p2) : (i32, memref<*xi32>) -> ()
  %c3 = arith.constant 3 : i32
  %m3 = bufferization.to_buffer %r2#1 read_only : tensor<4xi32> to memref<4xi32>
  %p3 = memref.cast %m3 : memref<4xi32> to memref<*xi32>
  call @print_i32(%c3, %p3) : (i32, memref<*xi32>) -> ()

  %b3 = memref.alloc() : memref<3xf32>
  %u3 = memref.cast %b3 : memref<3xf32> to memref<*xf32>
  call @fill_f32(%u3) : (memref<*xf32>) -> ()
  %t3 = bufferization.to_tensor %b3 restrict : memref<3xf32> to tensor<3xf32>
  %r4 = call @all_reduce_product(%t3) : (tensor<3xf32>) -> tensor<3xf32>
  %c4 = arith.constant 4 : i32
  %m4 = bufferization.to_buffer %r4 read_only : tensor<3xf32> to memref<3xf32>
  %p4 = memref.cast %m4 : memref<3xf32> to memref<*xf32>
  call @print_f32(%c4, %p4) : (i32, memref<*xf32>) -> ()

  %r5 = call @all_gather_dim1(%t23) : (tensor<2x3xf32>) -> tensor<2x6xf32>
  %c5 = arith.constant 5 : i32
  %m5 = bufferization.to_buffer %r5 read_only : tensor<2x6xf32> to memref<2x6xf32>
  %p5 = memref.cast %m5 : memref<2x6xf32> to memref<*xf32>
  call @print_f32(%c5, %p5) : (i32, memref<*xf32>) -> ()

  %b42 = memref.alloc() : memref<4x2xf32>
  %u42 = memref.cast %b42 : memref<4x2xf32> to memref<*xf32>
  call @fill_f32(%u42) : (memref<*xf32>) -> ()
  %t42 = bufferization.to_tensor %b42 restrict : memref<4x2xf32> to tensor<4x2xf32>
  %r6 = call @reduce_scatter(%t42) : (tensor<4x2xf32>) -> tensor<2x2xf32>
  %c6 = arith.constant 6 : i32
  %m6 = bufferization.to_buffer %r6 read_only : tensor<2x2xf32> to memref<2x2xf32>
  %p6 = memref.cast %m6 : memref<2x2xf32> to memref<*xf32>
  call @print_f32(%c6, %p6) : (i32, memref<*xf32>) -> ()

  %b42i = memref.alloc() : memref<4x2xi32>
  %u42i = memref.cast %b42i : memref<4x2xi32> to memref<*xi32>
  call @fill_i32(%u42i) : (memref<*xi32>) -> ()
  %t42i = bufferization.to_tensor %b42i restrict : memref<4x2xi32> to tensor<4x2xi32>
  %r7 = call @all_to_all(%t42i) : (tensor<4x2xi32>) -> tensor<2x4xi32>
  %c7 = arith.constant 7 : i32
  %m7 = bufferization.to_buffer %r7 read_only : tensor<2x4xi32> to memref<2x4xi32>
  %p7 = memref.cast %m7 : memref<2x4xi32> to memref<*xi32>
  call @print_i32(%c7, %p7) : (i32, memref<*xi32>) -> ()

  %b24 = memref.alloc() : memref<2x4xf32>
  %u24 = memref.cast %b24 : memref<2x4xf32> to memref<*xf32>
  call @fill_f32(%u24) : (memref<*xf32>) -> ()
  %t24 = bufferization.to_tensor %b24 restrict : memref<2x4xf32> to tensor<2x4xf32>
  %r8 = call @all_slice(%t24) : (tensor<2x4xf32>) -> tensor<2x2xf32>
  %c8 = arith.constant 8 : i32
  %m8 = bufferization.to_buffer %r8 read_only : tensor<2x2xf32> to memref<2x2xf32>
  %p8 = memref.cast %m8 : memref<2x2xf32> to memref<*xf32>
  call @print_f32(%c8, %p8) : (i32, memref<*xf32>) -> ()

  %i:3 = call @indices() : () -> (index, index, index)
  %c9 = arith.constant 9 : i32
  call @print_index(%c9, %i#0) : (i32, index) -> ()
  %c10 = arith.constant 10 : i32
  call @print_index(%c10, %i#1) : (i32, index) -> ()
  %c11 = arith.constant 11 : i32
  call @print_index(%c11, %i#2) : (i32, index) -> ()

  %b2 = memref.alloc() : memref<2xf32>
  %u2 = memref.cast %b2 : memref<2xf32> to memref<*xf32>
  call @fill_f32(%u2) : (memref<*xf32>) -> ()
  %t2 = bufferization.to_tensor %b2 restrict : memref<2xf32> to tensor<2xf32>
  %r12 = call @loop(%t2) : (tensor<2xf32>) -> tensor<2xf32>
  %c12 = arith.constant 12 : i32
  %m12 = bufferization.to_buffer %r12 read_only : tensor<2xf32> to memref<2xf32>
  %p12 = memref.cast %m12 : memref<2xf32> to memref<*xf32>
  call @print_f32(%c12, %p12) : (i32, memref<*xf32>) -> ()

  %r13:2 = call @all_reduce_keeps_input(%t2) : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  %c13 = arith.constant 13 : i32
  %m13 = bufferization.to_buffer %r13#0 read_only : tensor<2xf32> to memref<2xf32>
  %p13 = memref.cast %m13 : memref<2xf32> to memref<*xf32>
  call @print_f32(%c13, %p13) : (i32, memref<*xf32>) -> ()
  %c14 = arith.constant 14 : i32
  %m14 = bufferization.to_buffer %r13#1 read_only : tensor<2xf32> to memref<2xf32>
  %p14 = memref.cast %m14 : memref<2xf32> to memref<*xf32>
  call @print_f32(%c14, %p14) : (i32, memref<*xf32>) -> ()

  return
}
