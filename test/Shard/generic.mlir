// linalg.generic runs on shardc's model: upstream's propagation and partition
// plus two fixes. A `linalg.index` of a split loop gets the rank's offset
// (upstream leaves the local position: silently wrong), and a body may
// capture values from outside under a split reduction (upstream crashes).
// The other cases pin the forms the compiler emits (broadcasts, 0-d operands,
// i1 results, addf / maximumf / minsi reductions, splat constant inits).
//
// RUN: %shardc-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(sharding-propagation,cse),func.func(shard-partition,canonicalize))' \
// RUN:   | FileCheck %s

shard.grid @grid(shape = 2x4)

// one_hot with the classes split over axis 1 (4 devices, 4 classes each):
// rank r compares against classes 4r .. 4r+3.

// CHECK-LABEL: func.func @one_hot_split_classes
//  CHECK-SAME: (%[[L:.*]]: tensor<4xi32>) -> tensor<4x4xf32>
//   CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
//       CHECK: %[[POS:.*]] = shard.process_multi_index on @grid axes = [1] : index
//       CHECK: %[[OFF:.*]] = arith.muli %[[POS]], %[[C4]] : index
//       CHECK: linalg.generic {{.*}} ins(%[[L]] : tensor<4xi32>) outs(%{{.*}} : tensor<4x4xf32>)
//       CHECK:   %[[I:.*]] = linalg.index 1 : index
//  CHECK-NEXT:   %[[G:.*]] = arith.addi %[[I]], %[[OFF]] : index
//  CHECK-NEXT:   arith.index_cast %[[G]] : index to i32
#id = affine_map<(d0, d1) -> (d0, d1)>
#r0 = affine_map<(d0, d1) -> (d0)>
func.func @one_hot_split_classes(%l: tensor<8xi32>) -> tensor<8x16xf32> {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#r0, #id], iterator_types = ["parallel", "parallel"]}
      ins(%l : tensor<8xi32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: i32, %o: f32):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %c = arith.cmpi eq, %a, %ii : i32
    %v = arith.select %c, %one, %zero : f32
    linalg.yield %v : f32
  } -> tensor<8x16xf32>
  %s = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %r_s = shard.shard %r to %s : tensor<8x16xf32>
  return %r_s : tensor<8x16xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// one_hot with the batch split only: linalg.index is left alone.

// CHECK-LABEL: func.func @one_hot_split_batch
//  CHECK-SAME: (%[[L:.*]]: tensor<4xi32>) -> tensor<4x16xf32>
//   CHECK-NOT: shard.process_multi_index
//       CHECK: %[[I:.*]] = linalg.index 1 : index
//  CHECK-NEXT: arith.index_cast %[[I]] : index to i32
#id = affine_map<(d0, d1) -> (d0, d1)>
#r0 = affine_map<(d0, d1) -> (d0)>
func.func @one_hot_split_batch(%l: tensor<8xi32>) -> tensor<8x16xf32> {
  %sl = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %l_s = shard.shard %l to %sl : tensor<8xi32>
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#r0, #id], iterator_types = ["parallel", "parallel"]}
      ins(%l_s : tensor<8xi32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: i32, %o: f32):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %c = arith.cmpi eq, %a, %ii : i32
    %v = arith.select %c, %one, %zero : f32
    linalg.yield %v : f32
  } -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// argmax over a split axis: min of the matching global indices, finished by
// an all_reduce min; the body captures %big from outside.

// CHECK-LABEL: func.func @argmax_index
//  CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>, %[[M:.*]]: tensor<4xf32>) -> tensor<4xi32>
//   CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
//   CHECK-DAG: %[[BIG:.*]] = arith.constant 2147483647 : i32
//       CHECK: %[[INIT:.*]] = scf.if
//       CHECK: %[[POS:.*]] = shard.process_multi_index on @grid axes = [1] : index
//       CHECK: %[[OFF:.*]] = arith.muli %[[POS]], %[[C4]] : index
//       CHECK: %[[PARTIAL:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[M]] : tensor<4x4xf32>, tensor<4xf32>) outs(%[[INIT]] : tensor<4xi32>)
//       CHECK:   %[[I:.*]] = linalg.index 1 : index
//  CHECK-NEXT:   %[[G:.*]] = arith.addi %[[I]], %[[OFF]] : index
//       CHECK:   arith.select %{{.*}}, %{{.*}}, %[[BIG]] : i32
//       CHECK: shard.all_reduce %[[PARTIAL]] on @grid grid_axes = [1] reduction = min : tensor<4xi32> -> tensor<4xi32>
#id = affine_map<(d0, d1) -> (d0, d1)>
#r0 = affine_map<(d0, d1) -> (d0)>
func.func @argmax_index(%x: tensor<8x16xf32>, %m: tensor<8xf32>) -> tensor<8xi32> {
  %sx = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %x_s = shard.shard %x to %sx : tensor<8x16xf32>
  %big = arith.constant 2147483647 : i32
  %e = tensor.empty() : tensor<8xi32>
  %f = linalg.fill ins(%big : i32) outs(%e : tensor<8xi32>) -> tensor<8xi32>
  %r = linalg.generic {indexing_maps = [#id, #r0, #r0], iterator_types = ["parallel", "reduction"]}
      ins(%x_s, %m : tensor<8x16xf32>, tensor<8xf32>) outs(%f : tensor<8xi32>) {
  ^bb0(%a: f32, %mx: f32, %o: i32):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %eq = arith.cmpf oeq, %a, %mx : f32
    %c = arith.select %eq, %ii, %big : i32
    %t = arith.minsi %c, %o : i32
    linalg.yield %t : i32
  } -> tensor<8xi32>
  return %r : tensor<8xi32>
}

// -----

shard.grid @grid(shape = 2x4)

// Bias add with a broadcast (d0, d1) -> (d1) and a 0-d scale: the bias is
// split like the features, the 0-d operand stays whole.

// CHECK-LABEL: func.func @bias_broadcast
//  CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>, %[[B:.*]]: tensor<4xf32>, %[[S:.*]]: tensor<f32>) -> tensor<4x4xf32>
//       CHECK: linalg.generic {{.*}} ins(%[[X]], %[[B]], %[[S]] : tensor<4x4xf32>, tensor<4xf32>, tensor<f32>) outs(%{{.*}} : tensor<4x4xf32>)
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#sc = affine_map<(d0, d1) -> ()>
func.func @bias_broadcast(%x: tensor<8x16xf32>, %b: tensor<16xf32>, %s: tensor<f32>) -> tensor<8x16xf32> {
  %sx = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %x_s = shard.shard %x to %sx : tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #sc, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x_s, %b, %s : tensor<8x16xf32>, tensor<16xf32>, tensor<f32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %bb: f32, %c: f32, %o: f32):
    %t = arith.addf %a, %bb : f32
    %u = arith.mulf %t, %c : f32
    linalg.yield %u : f32
  } -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// An i1 result (relu mask from arith.cmpf).

// CHECK-LABEL: func.func @cmpf_mask
//  CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>) -> tensor<4x16xi1>
//       CHECK: linalg.generic {{.*}} ins(%[[X]] : tensor<4x16xf32>) outs(%{{.*}} : tensor<4x16xi1>)
//       CHECK:   arith.cmpf ogt
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @cmpf_mask(%x: tensor<8x16xf32>) -> tensor<8x16xi1> {
  %sx = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %x_s = shard.shard %x to %sx : tensor<8x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xi1>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x_s : tensor<8x16xf32>) outs(%e : tensor<8x16xi1>) {
  ^bb0(%a: f32, %o: i1):
    %t = arith.cmpf ogt, %a, %zero : f32
    linalg.yield %t : i1
  } -> tensor<8x16xi1>
  return %r : tensor<8x16xi1>
}

// -----

shard.grid @grid(shape = 2x4)

// Sum over a split axis whose body scales by a captured constant.

// CHECK-LABEL: func.func @scaled_sum
//  CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>) -> tensor<4xf32>
//   CHECK-DAG: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
//       CHECK: %[[PARTIAL:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4x4xf32>)
//       CHECK:   arith.mulf %{{.*}}, %[[HALF]] : f32
//       CHECK: shard.all_reduce %[[PARTIAL]] on @grid grid_axes = [1] : tensor<4xf32> -> tensor<4xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
#r0 = affine_map<(d0, d1) -> (d0)>
func.func @scaled_sum(%x: tensor<8x16xf32>) -> tensor<8xf32> {
  %sx = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %x_s = shard.shard %x to %sx : tensor<8x16xf32>
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #r0], iterator_types = ["parallel", "reduction"]}
      ins(%x_s : tensor<8x16xf32>) outs(%f : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %half : f32
    %t = arith.addf %m, %o : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// Max over a split axis (log_softmax): all_reduce max; the non-lead ranks
// start from the neutral element of maximumf.

// CHECK-LABEL: func.func @max_reduce
//  CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>) -> tensor<4xf32>
//       CHECK: %[[INIT:.*]] = scf.if
//       CHECK: %[[PARTIAL:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4x4xf32>) outs(%[[INIT]] : tensor<4xf32>)
//       CHECK:   arith.maximumf
//       CHECK: shard.all_reduce %[[PARTIAL]] on @grid grid_axes = [1] reduction = max : tensor<4xf32> -> tensor<4xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
#r0 = affine_map<(d0, d1) -> (d0)>
func.func @max_reduce(%x: tensor<8x16xf32>) -> tensor<8xf32> {
  %sx = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %x_s = shard.shard %x to %sx : tensor<8x16xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #r0], iterator_types = ["parallel", "reduction"]}
      ins(%x_s : tensor<8x16xf32>) outs(%f : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.maximumf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

shard.grid @grid(shape = 2x4)

// A splat constant as the init of a reduction over an unsplit axis: the
// constant shrinks with the batch split.

// CHECK-LABEL: func.func @splat_init
//  CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>) -> tensor<4xf32>
//       CHECK: %[[INIT:.*]] = arith.constant dense<0.000000e+00> : tensor<4xf32>
//       CHECK: linalg.generic {{.*}} ins(%[[X]] : tensor<4x16xf32>) outs(%[[INIT]] : tensor<4xf32>)
//   CHECK-NOT: shard.all_reduce
#id = affine_map<(d0, d1) -> (d0, d1)>
#r0 = affine_map<(d0, d1) -> (d0)>
func.func @splat_init(%x: tensor<8x16xf32>) -> tensor<8xf32> {
  %sx = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %x_s = shard.shard %x to %sx : tensor<8x16xf32>
  %init = arith.constant dense<0.0> : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #r0], iterator_types = ["parallel", "reduction"]}
      ins(%x_s : tensor<8x16xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
