// End to end from upstream's partition: Inputs/megatron-mlp.mlir goes through
// sharding-propagation and shard-partition, then shardc's code generation
// pipeline; this module (the driver, which partition must not see) calls
// the partitioned function with its local shards on 2 ranks.
//
// X = 1 (4x8), local W1 shard (8x8) on rank r = 100 r + i (row-major i), W2 = 1,
// H = 0 and Y = 1 (the init, added once). Local H[i, j] = 800 r + 224 + 8 j, its row
// sum 6400 r + 2016, so Y = 1 + 2016 + 8416 = 10433 everywhere.

// RUN: mlir-opt-22 %S/Inputs/megatron-mlp.mlir --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))' -o %t.spmd.mlir
// RUN: FileCheck %s --input-file=%t.spmd.mlir --check-prefix=SPMD
// RUN: %shardc-opt %t.spmd.mlir %codegen | mlir-translate-22 --mlir-to-llvmir -o %t.mlp.ll
// RUN: %shardc-opt %s %codegen | mlir-translate-22 --mlir-to-llvmir -o %t.main.ll
// RUN: %e2e_link %t.mlp.ll %t.main.ll -o %t
// RUN: timeout 120 %mpirun -np 2 %t 2 | sort | FileCheck %s

// SPMD: shard.process_multi_index on @mesh axes = [0]
// SPMD: shard.all_reduce {{.*}} on @mesh grid_axes = [0] : tensor<4x8xf32> -> tensor<4x8xf32>

// CHECK:      rank 0 #01 [4x8]:{{( 10433){32}$}}
// CHECK-NEXT: rank 0 communicators: 1
// CHECK-NEXT: rank 1 #01 [4x8]:{{( 10433){32}$}}
// CHECK-NEXT: rank 1 communicators: 1

func.func private @fill_f32(memref<*xf32>)
func.func private @print_f32(i32, memref<*xf32>)
func.func private @mlp(tensor<4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>,
                       tensor<4x8xf32>) -> tensor<4x8xf32>

func.func @test_main() {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e48 = tensor.empty() : tensor<4x8xf32>
  %e88 = tensor.empty() : tensor<8x8xf32>
  %x = linalg.fill ins(%one : f32) outs(%e48 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = linalg.fill ins(%zero : f32) outs(%e48 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.fill ins(%one : f32) outs(%e48 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %w2 = linalg.fill ins(%one : f32) outs(%e88 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %b = memref.alloc() : memref<8x8xf32>
  %u = memref.cast %b : memref<8x8xf32> to memref<*xf32>
  call @fill_f32(%u) : (memref<*xf32>) -> ()
  %w1 = bufferization.to_tensor %b restrict : memref<8x8xf32> to tensor<8x8xf32>
  %r = call @mlp(%x, %w1, %w2, %h, %y)
      : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = bufferization.to_buffer %r read_only : tensor<4x8xf32> to memref<4x8xf32>
  %p = memref.cast %m : memref<4x8xf32> to memref<*xf32>
  %c1 = arith.constant 1 : i32
  call @print_f32(%c1, %p) : (i32, memref<*xf32>) -> ()
  return
}
