// shardc-split-deallocs: each memref of a bufferization.dealloc without retained
// values whose buffer is a memref.alloc that nothing else in the dealloc views gets a
// dealloc of its own; what may alias stays together.
// RUN: %shardc-opt %s --shardc-split-deallocs -split-input-file | FileCheck %s

// Two allocations and a view of a third that the dealloc also frees directly: %a and
// %b go alone, %c and its view's base stay together, as does the argument.

// CHECK-LABEL: func.func @split
// CHECK-SAME:    (%[[ARG:.*]]: memref<4xf32>, %[[C1:.*]]: i1, %[[C2:.*]]: i1)
// CHECK-DAG:     %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK-DAG:     %[[B:.*]] = memref.alloc() : memref<8xf32>
// CHECK-DAG:     %[[C:.*]] = memref.alloc() : memref<16xf32>
// CHECK:         %[[BASE:.*]], %{{.*}}, %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[VIEW:.*]] :
// CHECK-NEXT:    bufferization.dealloc (%[[A]] : memref<4xf32>) if (%[[C1]])
// CHECK-NEXT:    bufferization.dealloc (%[[B]] : memref<8xf32>) if (%[[C2]])
// CHECK-NEXT:    bufferization.dealloc (%[[C]], %[[BASE]], %[[ARG]] : memref<16xf32>, memref<f32>, memref<4xf32>) if (%[[C1]], %[[C2]], %[[C1]])
// CHECK-NEXT:    return
func.func @split(%arg: memref<4xf32>, %c1: i1, %c2: i1) {
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<8xf32>
  %c = memref.alloc() : memref<16xf32>
  %view = memref.subview %c[4] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1], offset: 4>>
  %base, %offset, %size, %stride = memref.extract_strided_metadata %view : memref<8xf32, strided<[1], offset: 4>> -> memref<f32>, index, index, index
  bufferization.dealloc (%a, %b, %c, %base, %arg : memref<4xf32>, memref<8xf32>, memref<16xf32>, memref<f32>, memref<4xf32>) if (%c1, %c2, %c1, %c2, %c1)
  return
}

// -----

// With retained values the dealloc's results describe all its memrefs together: it
// stays as it is.

// CHECK-LABEL: func.func @retained
// CHECK:         bufferization.dealloc (%{{.*}}, %{{.*}} : memref<4xf32>, memref<8xf32>) if (%{{.*}}, %{{.*}}) retain (%{{.*}} : memref<4xf32>)
// CHECK-NOT:     bufferization.dealloc
func.func @retained(%arg: memref<4xf32>, %c: i1) -> i1 {
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<8xf32>
  %r = bufferization.dealloc (%a, %b : memref<4xf32>, memref<8xf32>) if (%c, %c) retain (%arg : memref<4xf32>)
  return %r : i1
}

// -----

// Every memref split off: the original dealloc goes.

// CHECK-LABEL: func.func @all_split
// CHECK-COUNT-2: bufferization.dealloc ({{[^,]*}}) if
// CHECK-NOT:     bufferization.dealloc
func.func @all_split(%c: i1) {
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<8xf32>
  bufferization.dealloc (%a, %b : memref<4xf32>, memref<8xf32>) if (%c, %c)
  return
}
