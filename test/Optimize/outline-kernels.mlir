// shardc-outline-kernels: each linalg op on buffers in a kernel function, ops
// that print alike (two layers' copies of one op) sharing one.
// RUN: %shardc-opt %s --shardc-outline-kernels -split-input-file | FileCheck %s

// The same relu on two layers' buffers: one kernel, called twice. The
// constant its body reads is cloned in; the fill's scalar is an argument.
// A relu of another shape is a kernel of its own.

#id = affine_map<(d0) -> (d0)>
func.func @layers(%a: memref<8xf32>, %b: memref<8xf32>, %c: memref<8xf32>, %d: memref<8xf32>,
                  %e: memref<4xf32>, %f: memref<4xf32>, %v: f32) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<8xf32>) outs(%b : memref<8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%c : memref<8xf32>) outs(%d : memref<8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%e : memref<4xf32>) outs(%f : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%v : f32) outs(%b : memref<8xf32>)
  return
}

// CHECK-LABEL: func.func @layers
// CHECK-SAME:    (%[[A:.*]]: memref<8xf32>, %[[B:.*]]: memref<8xf32>, %[[C:.*]]: memref<8xf32>, %[[D:.*]]: memref<8xf32>, %[[E:.*]]: memref<4xf32>, %[[F:.*]]: memref<4xf32>, %[[V:.*]]: f32)
// CHECK-NOT:     linalg.
// CHECK:         call @[[RELU8:shardc_kernel_[0-9]+]](%[[A]], %[[B]]) : (memref<8xf32>, memref<8xf32>) -> ()
// CHECK-NEXT:    call @[[RELU8]](%[[C]], %[[D]])
// CHECK-NEXT:    call @[[RELU4:shardc_kernel_[0-9]+]](%[[E]], %[[F]]) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    call @[[FILL:shardc_kernel_[0-9]+]](%[[V]], %[[B]]) : (f32, memref<8xf32>) -> ()
// CHECK:       func.func private @[[RELU8]](%{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>) attributes {llvm.linkage = #llvm.linkage<internal>, no_inline}
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    linalg.generic
// CHECK:           arith.maximumf %{{.*}}, %[[ZERO]] : f32
// CHECK:         return
// CHECK:       func.func private @[[RELU4]](%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>)
// CHECK:       func.func private @[[FILL]](%{{.*}}: f32, %{{.*}}: memref<8xf32>)
// CHECK-NEXT:    linalg.fill
// CHECK-NOT:   func.func

// -----

// A value computed outside the op that its body reads is an argument; an
// operand at a dynamic offset that is not a slice keeps its op in place.

#id = affine_map<(d0) -> (d0)>
func.func @captured(%a: memref<8xf32>, %b: memref<8xf32>, %s: f32,
                    %block: memref<4xf32, strided<[1], offset: ?>>) {
  %scale = arith.mulf %s, %s : f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<8xf32>) outs(%b : memref<8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.mulf %x, %scale : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%s : f32) outs(%block : memref<4xf32, strided<[1], offset: ?>>)
  return
}

// CHECK-LABEL: func.func @captured
// CHECK:         %[[SCALE:.*]] = arith.mulf
// CHECK-NEXT:    call @[[SCALED:shardc_kernel_[0-9]+]](%{{.*}}, %{{.*}}, %[[SCALE]]) : (memref<8xf32>, memref<8xf32>, f32) -> ()
// CHECK-NEXT:    linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<4xf32, strided<[1], offset: ?>>)
// CHECK:       func.func private @[[SCALED]](%{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>, %[[S:.*]]: f32)
// CHECK:           arith.mulf %{{.*}}, %[[S]] : f32

// -----

// A rank's block at a dynamic offset: the kernel takes the whole buffer and the
// offset, and slices it itself; two blocks of one buffer share the kernel.

func.func @block(%whole: memref<8xf32>, %at: index, %other: index, %v: f32) {
  %block = memref.subview %whole[%at] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: ?>>
  linalg.fill ins(%v : f32) outs(%block : memref<4xf32, strided<[1], offset: ?>>)
  %next = memref.subview %whole[%other] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: ?>>
  linalg.fill ins(%v : f32) outs(%next : memref<4xf32, strided<[1], offset: ?>>)
  return
}

// CHECK-LABEL: func.func @block
// CHECK-SAME:    (%[[WHOLE:.*]]: memref<8xf32>, %[[AT:.*]]: index, %[[OTHER:.*]]: index, %[[V:.*]]: f32)
// CHECK:         call @[[FILL:shardc_kernel_[0-9]+]](%[[V]], %[[WHOLE]], %[[AT]]) : (f32, memref<8xf32>, index) -> ()
// CHECK:         call @[[FILL]](%[[V]], %[[WHOLE]], %[[OTHER]])
// CHECK:       func.func private @[[FILL]](%[[KV:.*]]: f32, %[[KW:.*]]: memref<8xf32>, %[[KAT:.*]]: index)
// CHECK-NEXT:    %[[SLICE:.*]] = memref.subview %[[KW]][%[[KAT]]] [4] [1]
// CHECK-NEXT:    linalg.fill ins(%[[KV]] : f32) outs(%[[SLICE]] : memref<4xf32, strided<[1], offset: ?>>)

// -----

// shardc-lower-to-kernels' loop over a batched matmul's heads (index arithmetic,
// pointers, runtime calls): outlined whole, its bounds and constants cloned in, the
// two layers' loops sharing one kernel. A loop that allocates is not a loop of calls
// and stays.

// CHECK-LABEL: func.func @heads
// CHECK-SAME:    (%[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<4x8xf32>)
// CHECK:         call @[[LOOP:shardc_kernel_[0-9]+]](%[[A]]) : (memref<4x8xf32>) -> ()
// CHECK-NEXT:    call @[[LOOP]](%[[B]]) : (memref<4x8xf32>) -> ()
// CHECK-NEXT:    scf.for
// CHECK:           memref.alloc
// CHECK:       func.func private @[[LOOP]](%[[X:.*]]: memref<4x8xf32>)
// CHECK-SAME:    attributes {llvm.linkage = #llvm.linkage<internal>, no_inline}
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK:         scf.for %{{.*}} = %[[C0]] to %[[C4]]
// CHECK:           memref.extract_aligned_pointer_as_index %[[X]]
// CHECK:           call @head
func.func private @head(!llvm.ptr)
func.func @heads(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  scf.for %h = %c0 to %c4 step %c1 {
    %base = memref.extract_aligned_pointer_as_index %a : memref<4x8xf32> -> index
    %offset = arith.muli %h, %c32 : index
    %at = arith.addi %base, %offset : index
    %i = arith.index_cast %at : index to i64
    %p = llvm.inttoptr %i : i64 to !llvm.ptr
    func.call @head(%p) : (!llvm.ptr) -> ()
  }
  scf.for %h = %c0 to %c4 step %c1 {
    %base = memref.extract_aligned_pointer_as_index %b : memref<4x8xf32> -> index
    %offset = arith.muli %h, %c32 : index
    %at = arith.addi %base, %offset : index
    %i = arith.index_cast %at : index to i64
    %p = llvm.inttoptr %i : i64 to !llvm.ptr
    func.call @head(%p) : (!llvm.ptr) -> ()
  }
  scf.for %h = %c0 to %c4 step %c1 {
    %t = memref.alloc() : memref<8xf32>
    memref.dealloc %t : memref<8xf32>
  }
  return
}
