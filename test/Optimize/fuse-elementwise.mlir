// shardc-fuse-elementwise: elementwise producers fuse into their one consumer,
// data movement into every consumer, nothing into a multiply-accumulate.
// RUN: %shardc-opt %s --shardc-fuse-elementwise -split-input-file | FileCheck %s

// A bias add and a relu: one loop nest that reads the convolution's output and
// the bias and writes relu(x + b).

// CHECK-LABEL: func.func @bias_relu
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK:         %[[R:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[X]], %[[B]] : tensor<4x8xf32>, tensor<8xf32>)
// CHECK:           arith.addf
// CHECK:           arith.maximumf
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @bias_relu(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// exp(x) read by two ops stays one op: fusing it into both would compute it twice.

// CHECK-LABEL: func.func @shared_exp
// CHECK:         %[[E:.*]] = linalg.generic
// CHECK:           math.exp
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[E]]
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[E]]
#id = affine_map<(d0) -> (d0)>
func.func @shared_exp(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %two = arith.constant 2.0 : f32
  %e0 = tensor.empty() : tensor<8xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%e : tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = arith.mulf %in, %two : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%e : tensor<8xf32>) outs(%e0 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = arith.addf %in, %two : f32
    linalg.yield %v : f32
  } -> tensor<8xf32>
  return %a, %b : tensor<8xf32>, tensor<8xf32>
}

// -----

// A broadcast only moves data: it goes into each of its two consumers, and no
// [4, 8] buffer of copies is left.

// CHECK-LABEL: func.func @shared_broadcast
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[X]], %[[B]] : tensor<4x8xf32>, tensor<8xf32>)
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[X]], %[[B]] : tensor<4x8xf32>, tensor<8xf32>)
// CHECK-NOT:     linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @shared_broadcast(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %bb = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %bb : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32, %out: f32):
    %v = arith.addf %a, %c : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %prod = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %bb : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %c: f32, %out: f32):
    %v = arith.mulf %a, %c : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %sum, %prod : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// The relu mask of a gradient is not fused into the matmul that reads it (the
// matmul becomes sgemm), but a plain sum over the same values takes it.

// CHECK-LABEL: func.func @not_into_contractions
// CHECK-SAME:    (%[[DY:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x3xf32>)
// CHECK:         %[[MASKED:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[DY]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK:           arith.select
// CHECK:         linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME:      ins(%[[MASKED]], %[[W]] : tensor<4x8xf32>, tensor<8x3xf32>)
// CHECK:         linalg.generic
// CHECK-SAME:      iterator_types = ["reduction", "parallel"]
// CHECK-SAME:      ins(%[[DY]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK:           arith.select
// CHECK:           arith.addf
#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @not_into_contractions(%dy: tensor<4x8xf32>, %y: tensor<4x8xf32>, %w: tensor<8x3xf32>)
    -> (tensor<4x3xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %masked = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%dy, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%g: f32, %v: f32, %out: f32):
    %pos = arith.cmpf ogt, %v, %zero : f32
    %r = arith.select %pos, %g, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %masked2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%dy, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%g: f32, %v: f32, %out: f32):
    %pos = arith.cmpf ogt, %v, %zero : f32
    %r = arith.select %pos, %g, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %z43 = tensor.empty() : tensor<4x3xf32>
  %dx = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%masked, %w : tensor<4x8xf32>, tensor<8x3xf32>) outs(%z43 : tensor<4x3xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  %z8 = tensor.empty() : tensor<8xf32>
  %db = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%masked2 : tensor<4x8xf32>) outs(%z8 : tensor<8xf32>) {
  ^bb0(%p: f32, %acc: f32):
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %dx, %db : tensor<4x3xf32>, tensor<8xf32>
}

// -----

// A bias add read by the relu and by the relu's gradient mask is cheap to
// repeat: it goes into both, and its [4, 8] result is never written.

// CHECK-LABEL: func.func @cheap_bias_add
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>, %[[DY:.*]]: tensor<4x8xf32>)
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[X]], %[[B]] : tensor<4x8xf32>, tensor<8xf32>)
// CHECK:           arith.addf
// CHECK:           arith.maximumf
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[X]], %[[B]], %[[DY]] : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>)
// CHECK:           arith.addf
// CHECK:           arith.cmpf
// CHECK-NOT:     linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @cheap_bias_add(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %dy: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %mask = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y, %dy : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %g: f32, %out: f32):
    %pos = arith.cmpf ogt, %v, %zero : f32
    %r = arith.select %pos, %g, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %relu, %mask : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Scan layers: the forward's add fuses into the same layer's backward relu; the
// next layer's relu keeps reading layer 0's add (not fused across layers), which stays.

// CHECK-LABEL: func.func @layers
// CHECK:         %[[ADD:.*]] = linalg.generic
// CHECK:           arith.addf
// CHECK-NEXT:      linalg.yield
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[ADD]] :
// CHECK:           arith.maximumf
// CHECK:         linalg.generic
// CHECK:           arith.addf
// CHECK-NEXT:      arith.maximumf
#id = affine_map<(d0) -> (d0)>
func.func @layers(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<8xf32> loc("layer 0 forward"("m.shard":1:1))
  %next = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%y : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8xf32> loc("layer 1 forward"("m.shard":1:1))
  %back = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%y : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8xf32> loc("layer 0 backward"("m.shard":1:1))
  return %next, %back : tensor<8xf32>, tensor<8xf32>
}
