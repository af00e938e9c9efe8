// shardc-fuse-siblings: elementwise loops over the same loop ranges that read a common
// tensor become one loop with both results, where nothing between them stops it.
// RUN: %shardc-opt %s --shardc-fuse-siblings -split-input-file | FileCheck %s
// RUN: %shardc-opt %s --shardc-fuse-siblings --shardc-update-in-place --one-shot-bufferize --canonicalize -split-input-file | FileCheck %s --check-prefix=BUFFERS

// Momentum after shardc-fuse-elementwise: the new trace, and the new weight that
// computes the trace again (a cheap producer is fused into every reader), both read
// the old trace and the gradient. One loop reads each tensor once and computes the
// trace once; the weight and the trace are then both written in place, where apart
// the weight's update read the old trace after the trace's update and the trace
// needed a buffer of its own and a copy back.

// CHECK-LABEL: func.func @momentum
// CHECK-DAG:     %[[W:.*]] = bufferization.to_tensor %arg0
// CHECK-DAG:     %[[T:.*]] = bufferization.to_tensor %arg1
// CHECK-DAG:     %[[G:.*]] = bufferization.to_tensor %arg2
// CHECK:         %[[NEW:.*]]:2 = linalg.generic
// CHECK-SAME:      ins(%[[T]], %[[G]], %[[W]] : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT:    ^bb0(%[[TI:.*]]: f32, %[[GI:.*]]: f32, %[[WI:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[BT:.*]] = arith.mulf %[[TI]]
// CHECK-NEXT:      %[[TRACE:.*]] = arith.addf %[[GI]], %[[BT]]
// CHECK-NEXT:      %[[STEP:.*]] = arith.mulf %[[TRACE]]
// CHECK-NEXT:      %[[NEWW:.*]] = arith.subf %[[WI]], %[[STEP]]
// CHECK-NEXT:      linalg.yield %[[TRACE]], %[[NEWW]] : f32, f32
// CHECK-NOT:     linalg.generic
// CHECK:         bufferization.materialize_in_destination %[[NEW]]#1 in writable %arg0
// CHECK:         bufferization.materialize_in_destination %[[NEW]]#0 in writable %arg1

// BUFFERS-LABEL: func.func @momentum
// BUFFERS-NOT:     memref.alloc
// BUFFERS:         linalg.generic {{.*}} ins(%arg1, %arg2, %arg0 : {{.*}}) outs(%arg1, %arg0 : memref<8xf32>, memref<8xf32>)
// BUFFERS-NOT:     memref.copy
// BUFFERS:         return
#id = affine_map<(d0) -> (d0)>
func.func @momentum(%arg0: memref<8xf32>, %arg1: memref<8xf32>, %arg2: memref<8xf32>) {
  %beta = arith.constant 0.9 : f32
  %lr = arith.constant 0.1 : f32
  %w = bufferization.to_tensor %arg0 restrict writable : memref<8xf32> to tensor<8xf32>
  %t = bufferization.to_tensor %arg1 restrict writable : memref<8xf32> to tensor<8xf32>
  %g = bufferization.to_tensor %arg2 restrict : memref<8xf32> to tensor<8xf32>
  %e0 = tensor.empty() : tensor<8xf32>
  %trace = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%t, %g : tensor<8xf32>, tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%ti: f32, %gi: f32, %out: f32):
    %bt = arith.mulf %ti, %beta : f32
    %v = arith.addf %gi, %bt : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %neww = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
      ins(%t, %g, %w : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%ti: f32, %gi: f32, %wi: f32, %out: f32):
    %bt = arith.mulf %ti, %beta : f32
    %v = arith.addf %gi, %bt : f32
    %s = arith.mulf %v, %lr : f32
    %n = arith.subf %wi, %s : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  bufferization.materialize_in_destination %neww in writable %arg0 : (tensor<8xf32>, memref<8xf32>) -> ()
  bufferization.materialize_in_destination %trace in writable %arg1 : (tensor<8xf32>, memref<8xf32>) -> ()
  return
}

// -----

// Three siblings (Adam's new weight, first and second moment) with a scalar operand
// and an unrelated loop between them: one loop of three results, the scalar read
// once; the loop between, which shares no tensor with them, stays apart.

// CHECK-LABEL: func.func @three
// CHECK-SAME:    (%[[P:.*]]: tensor<4x8xf32>, %[[M:.*]]: tensor<4x8xf32>, %[[V:.*]]: tensor<4x8xf32>, %[[G:.*]]: tensor<4x8xf32>, %[[LR:.*]]: tensor<f32>, %[[X:.*]]: tensor<4x8xf32>)
// CHECK:         %[[OTHER:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[X]] : tensor<4x8xf32>)
// CHECK:         %[[NEW:.*]]:3 = linalg.generic
// CHECK-SAME:      ins(%[[P]], %[[M]], %[[G]], %[[V]], %[[LR]] : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>)
// CHECK-COUNT-1:   math.sqrt
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[NEW]]#0, %[[NEW]]#1, %[[NEW]]#2, %[[OTHER]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>
func.func @three(%p: tensor<4x8xf32>, %m: tensor<4x8xf32>, %v: tensor<4x8xf32>, %g: tensor<4x8xf32>,
                 %lr: tensor<f32>, %x: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %newp = linalg.generic {indexing_maps = [#id, #id, #id, #id, #scalar, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %m, %g, %v, %lr : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>)
      outs(%e : tensor<4x8xf32>) {
  ^bb0(%pi: f32, %mi: f32, %gi: f32, %vi: f32, %l: f32, %out: f32):
    %mu = arith.addf %mi, %gi : f32
    %gg = arith.mulf %gi, %gi : f32
    %nu = arith.addf %vi, %gg : f32
    %r = math.sqrt %nu : f32
    %d = arith.divf %mu, %r : f32
    %s = arith.mulf %d, %l : f32
    %n = arith.subf %pi, %s : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  %other = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%xi: f32, %out: f32):
    %n = arith.negf %xi : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  %newm = linalg.generic {indexing_maps = [#id, #id, #scalar, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m, %g, %lr : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%mi: f32, %gi: f32, %l: f32, %out: f32):
    %mu = arith.addf %mi, %gi : f32
    linalg.yield %mu : f32
  } -> tensor<4x8xf32>
  %newv = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%v, %g : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%vi: f32, %gi: f32, %out: f32):
    %gg = arith.mulf %gi, %gi : f32
    %nu = arith.addf %vi, %gg : f32
    linalg.yield %nu : f32
  } -> tensor<4x8xf32>
  return %newp, %newm, %newv, %other : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// What stays apart: a loop that reads the first's result; loops with a reduction
// (a kernel-to-be) between them; loops over other ranges; loops of two scan layers;
// a loop that broadcasts.

// CHECK-LABEL: func.func @apart
// CHECK-COUNT-10: linalg.generic
// CHECK-NOT:     linalg.generic
#id = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#sum = affine_map<(d0) -> ()>
func.func @apart(%x: tensor<8xf32>, %y: tensor<16xf32>, %z: tensor<4x8xf32>, %s: tensor<f32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<8xf32>, tensor<16xf32>, tensor<8xf32>,
        tensor<8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%i: f32, %o: f32):
    %v = arith.negf %i : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  // Reads %x and %a.
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %a : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %v = arith.addf %i, %j : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  // A reduction over %x: nothing fuses across it.
  %r = linalg.generic {indexing_maps = [#id, #sum], iterator_types = ["reduction"]}
      ins(%x : tensor<8xf32>) outs(%s : tensor<f32>) {
  ^bb0(%i: f32, %o: f32):
    %v = arith.addf %i, %o : f32
    linalg.yield %v : f32
  } -> tensor<f32>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%i: f32, %o: f32):
    %v = arith.mulf %i, %i : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  // Other loop ranges.
  %ey = tensor.empty() : tensor<16xf32>
  %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%y : tensor<16xf32>) outs(%ey : tensor<16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %v = arith.negf %i : f32
    linalg.yield %v : f32
  } -> tensor<16xf32>
  // Two scan layers' updates of one tensor.
  %l0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%i: f32, %o: f32):
    %v = arith.addf %i, %i : f32
    linalg.yield %v : f32
  } -> tensor<8xf32> loc("layer 0 update"("here"))
  %l1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%i: f32, %o: f32):
    %v = arith.subf %i, %i : f32
    linalg.yield %v : f32
  } -> tensor<8xf32> loc("layer 1 update"("here"))
  // A layer's backward op and its update.
  %l2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%i: f32, %o: f32):
    %v = arith.mulf %i, %i : f32
    linalg.yield %v : f32
  } -> tensor<8xf32> loc("layer 1 backward"("here"))
  // A broadcast of %x read over rows: not elementwise.
  %ez = tensor.empty() : tensor<4x8xf32>
  %f = linalg.generic {indexing_maps = [#row, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %z : tensor<8xf32>, tensor<4x8xf32>) outs(%ez : tensor<4x8xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %v = arith.addf %i, %j : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  // Reads %y alone, after %d: no common tensor with the loops over 8.
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%e : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%i: f32, %o: f32):
    linalg.yield %i : f32
  } -> tensor<8xf32>
  return %a, %b, %r, %c, %d, %l0, %l1, %l2, %f, %h
      : tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<8xf32>, tensor<16xf32>, tensor<8xf32>,
        tensor<8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>
}
