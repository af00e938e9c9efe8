// shardc-update-in-place: a new value stored back into the buffer its old value was
// read from (the train entry's parameters and state) is made over the old value, its
// empty init replaced by the old tensor; one-shot bufferization then writes in place
// where nothing reads the old value afterwards, and into a new buffer copied back at
// the end where something does.
// RUN: %shardc-opt %s --shardc-update-in-place -split-input-file | FileCheck %s
// RUN: %shardc-opt %s --shardc-update-in-place --one-shot-bufferize --canonicalize -split-input-file | FileCheck %s --check-prefix=BUFFERS

#id = affine_map<(d0) -> (d0)>

// Momentum: the trace's update comes first and the weight's update reads the old
// trace after it, so only the weight is written in place; the trace gets a buffer.

// CHECK-LABEL: func.func @momentum
// CHECK-DAG:     %[[W:.*]] = bufferization.to_tensor %arg0 restrict writable
// CHECK-DAG:     %[[M:.*]] = bufferization.to_tensor %arg1 restrict writable
// CHECK-NOT:     tensor.empty
// CHECK:         %[[NEWM:.*]] = linalg.generic {{.*}} outs(%[[M]] : tensor<8xf32>)
// CHECK:         %[[NEWW:.*]] = linalg.generic {{.*}} outs(%[[W]] : tensor<8xf32>)
// CHECK:         bufferization.materialize_in_destination %[[NEWW]] in writable %arg0
// CHECK:         bufferization.materialize_in_destination %[[NEWM]] in writable %arg1

// BUFFERS-LABEL: func.func @momentum
// BUFFERS:         %[[TRACE:.*]] = memref.alloc()
// BUFFERS:         linalg.generic {{.*}} ins(%arg1, %arg2 : {{.*}}) outs(%[[TRACE]] : memref<8xf32>)
// BUFFERS:         linalg.generic {{.*}} ins(%arg0, %arg1, %arg2 : {{.*}}) outs(%arg0 : memref<8xf32>)
// BUFFERS:         memref.copy %[[TRACE]], %arg1
// BUFFERS-NOT:     memref.copy
// BUFFERS:         return
func.func @momentum(%arg0: memref<8xf32>, %arg1: memref<8xf32>, %arg2: memref<8xf32>) {
  %w = bufferization.to_tensor %arg0 restrict writable : memref<8xf32> to tensor<8xf32>
  %m = bufferization.to_tensor %arg1 restrict writable : memref<8xf32> to tensor<8xf32>
  %g = bufferization.to_tensor %arg2 restrict : memref<8xf32> to tensor<8xf32>
  %e0 = tensor.empty() : tensor<8xf32>
  %newm = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%m, %g : tensor<8xf32>, tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %neww = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]} ins(%w, %m, %g : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %s = arith.addf %b, %c : f32
    %d = arith.subf %a, %s : f32
    linalg.yield %d : f32
  } -> tensor<8xf32>
  bufferization.materialize_in_destination %neww in writable %arg0 : (tensor<8xf32>, memref<8xf32>) -> ()
  bufferization.materialize_in_destination %newm in writable %arg1 : (tensor<8xf32>, memref<8xf32>) -> ()
  return
}

// -----

#id = affine_map<(d0) -> (d0)>

// Left alone: a value stored into a buffer of its own (`restrict`: an eval result),
// and one that something else reads too.

// CHECK-LABEL: func.func @elsewhere
// CHECK:         %[[E0:.*]] = tensor.empty
// CHECK:         linalg.generic {{.*}} outs(%[[E0]] :
// CHECK:         %[[E1:.*]] = tensor.empty
// CHECK:         linalg.generic {{.*}} outs(%[[E1]] :
func.func @elsewhere(%arg0: memref<8xf32>, %arg1: memref<8xf32>, %arg2: memref<8xf32>) -> tensor<8xf32> {
  %w = bufferization.to_tensor %arg0 restrict writable : memref<8xf32> to tensor<8xf32>
  %e0 = tensor.empty() : tensor<8xf32>
  %doubled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%w : tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %negated = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%w : tensor<8xf32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.negf %a : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  bufferization.materialize_in_destination %doubled in restrict writable %arg1 : (tensor<8xf32>, memref<8xf32>) -> ()
  bufferization.materialize_in_destination %negated in writable %arg0 : (tensor<8xf32>, memref<8xf32>) -> ()
  return %negated : tensor<8xf32>
}
