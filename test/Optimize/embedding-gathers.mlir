// shardc-embedding-gathers: a contraction with a one-hot of ids (MLIRGen's
// embedding, its gradient, the cross-entropy's labels) becomes a gather when it
// sums over the classes and a scatter-add when it sums over the ids.
// RUN: %shardc-opt %s --shardc-embedding-gathers -split-input-file | FileCheck %s

#ids = affine_map<(d0, d1, d2) -> (d0, d1)>
#all = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#onehot = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#table = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>

// The lookup: out[b, s, e] = table[ids[b, s], e], read with tensor.extract; the
// one-hot goes.

// CHECK-LABEL: func.func @lookup
// CHECK-SAME:    (%[[IDS:.*]]: tensor<2x3xi32>, %[[TABLE:.*]]: tensor<5x4xf32>)
// CHECK-NOT:     arith.uitofp
// CHECK-DAG:     %[[FIRST:.*]] = arith.constant 0 : i32
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[IDS]] : tensor<2x3xi32>) outs(%{{.*}} : tensor<2x3x4xf32>)
// CHECK:         ^bb0(%[[ID:.*]]: i32, %[[ACC:.*]]: f32):
// CHECK:           %[[ROW:.*]] = arith.subi %[[ID]], %[[FIRST]] : i32
// CHECK:           arith.cmpi sge, %[[ROW]]
// CHECK:           arith.cmpi slt, %[[ROW]]
// CHECK:           %[[E:.*]] = linalg.index 2 : index
// CHECK:           %[[V:.*]] = tensor.extract %[[TABLE]][%{{.*}}, %[[E]]] : tensor<5x4xf32>
// CHECK:           %[[SUM:.*]] = arith.addf %[[ACC]], %[[V]] : f32
// CHECK:           %[[R:.*]] = arith.select %{{.*}}, %[[SUM]], %[[ACC]] : f32
// CHECK:           linalg.yield %[[R]] : f32
func.func @lookup(%ids: tensor<2x3xi32>, %table: tensor<5x4xf32>) -> tensor<2x3x4xf32> {
  %empty = tensor.empty() : tensor<2x3x5xf32>
  %onehot = linalg.generic {indexing_maps = [#ids, #all], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<2x3xi32>) outs(%empty : tensor<2x3x5xf32>) {
  ^bb0(%id: i32, %o: f32):
    %i = linalg.index 2 : index
    %c = arith.index_cast %i : index to i32
    %eq = arith.cmpi eq, %id, %c : i32
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<2x3x5xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %out = linalg.generic {indexing_maps = [#onehot, #table, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%onehot, %table : tensor<2x3x5xf32>, tensor<5x4xf32>) outs(%init : tensor<2x3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3x4xf32>
  return %out : tensor<2x3x4xf32>
}

// -----

// The vocabulary split over `model` (Megatron's vocab-parallel embedding): the
// one-hot is sliced over its classes, and this rank's first class is the first
// element of the same slice of the classes' indices.

#ids = affine_map<(d0, d1, d2) -> (d0, d1)>
#all = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#onehot = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#table = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
shard.grid @mesh(shape = 2x2)

// CHECK-LABEL: func.func @vocab_parallel
// CHECK-NOT:     arith.uitofp
// CHECK:         %[[IOTA:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<6xi32>)
// CHECK:           linalg.index 0
// CHECK:         %[[MINE:.*]] = shard.all_slice %[[IOTA]] on @mesh grid_axes = [1] slice_axis = 0 : tensor<6xi32> -> tensor<3xi32>
// CHECK:         %[[FIRST:.*]] = tensor.extract %[[MINE]][%{{.*}}] : tensor<3xi32>
// CHECK:         linalg.generic
// CHECK:           arith.subi %{{.*}}, %[[FIRST]] : i32
// CHECK:           arith.constant 3 : i32
// CHECK:           tensor.extract %{{.*}} : tensor<3x4xf32>
// CHECK-NOT:     shard.all_slice
func.func @vocab_parallel(%ids: tensor<2x3xi32>, %table: tensor<3x4xf32>) -> tensor<2x3x4xf32> {
  %empty = tensor.empty() : tensor<2x3x6xf32>
  %onehot = linalg.generic {indexing_maps = [#ids, #all], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<2x3xi32>) outs(%empty : tensor<2x3x6xf32>) {
  ^bb0(%id: i32, %o: f32):
    %i = linalg.index 2 : index
    %c = arith.index_cast %i : index to i32
    %eq = arith.cmpi eq, %c, %id : i32
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<2x3x6xf32>
  %mine = shard.all_slice %onehot on @mesh grid_axes = [1] slice_axis = 2 : tensor<2x3x6xf32> -> tensor<2x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %out = linalg.generic {indexing_maps = [#onehot, #table, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%mine, %table : tensor<2x3x3xf32>, tensor<3x4xf32>) outs(%init : tensor<2x3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3x4xf32>
  return %out : tensor<2x3x4xf32>
}

// -----

// The gradient: dy's rows added into the rows the ids pick, one loop per ids
// dim; ids this rank does not hold add nothing.

#ids = affine_map<(d0, d1, d2) -> (d0, d1)>
#all = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#onehot = affine_map<(d0, d1, d2, d3) -> (d2, d3, d0)>
#dy = affine_map<(d0, d1, d2, d3) -> (d2, d3, d1)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1)>

// CHECK-LABEL: func.func @gradient
// CHECK-SAME:    (%[[IDS:.*]]: tensor<2x3xi32>, %[[DY:.*]]: tensor<2x3x4xf32>)
// CHECK-NOT:     arith.uitofp
// CHECK:         %[[INIT:.*]] = linalg.fill
// CHECK:         %[[OUTER:.*]] = scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[S0:.*]] = %[[INIT]]) -> (tensor<5x4xf32>)
// CHECK:           scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[S1:.*]] = %[[S0]]) -> (tensor<5x4xf32>)
// CHECK:             %[[ID:.*]] = tensor.extract %[[IDS]][%[[B]], %[[T]]] : tensor<2x3xi32>
// CHECK:             scf.if %{{.*}} -> (tensor<5x4xf32>)
// CHECK:               %[[IN:.*]] = tensor.extract_slice %[[DY]][%[[B]], %[[T]], 0] [1, 1, 4] [1, 1, 1] : tensor<2x3x4xf32> to tensor<4xf32>
// CHECK:               %[[OLD:.*]] = tensor.extract_slice %[[S1]][%{{.*}}, 0] [1, 4] [1, 1] : tensor<5x4xf32> to tensor<4xf32>
// CHECK:               %[[NEW:.*]] = linalg.add ins(%[[OLD]], %[[IN]] : tensor<4xf32>, tensor<4xf32>) outs(%[[OLD]] : tensor<4xf32>)
// CHECK:               tensor.insert_slice %[[NEW]] into %[[S1]][%{{.*}}, 0] [1, 4] [1, 1] : tensor<4xf32> into tensor<5x4xf32>
// CHECK:             } else {
// CHECK:               scf.yield %[[S1]] : tensor<5x4xf32>
// CHECK:         return %[[OUTER]]
func.func @gradient(%ids: tensor<2x3xi32>, %dy: tensor<2x3x4xf32>) -> tensor<5x4xf32> {
  %empty = tensor.empty() : tensor<2x3x5xf32>
  %onehot = linalg.generic {indexing_maps = [#ids, #all], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<2x3xi32>) outs(%empty : tensor<2x3x5xf32>) {
  ^bb0(%id: i32, %o: f32):
    %i = linalg.index 2 : index
    %c = arith.index_cast %i : index to i32
    %eq = arith.cmpi eq, %id, %c : i32
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<2x3x5xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<5x4xf32>) -> tensor<5x4xf32>
  %out = linalg.generic {indexing_maps = [#onehot, #dy, #out], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%onehot, %dy : tensor<2x3x5xf32>, tensor<2x3x4xf32>) outs(%init : tensor<5x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<5x4xf32>
  return %out : tensor<5x4xf32>
}

// -----

// The cross-entropy's -sum(labels * log_probs) over the classes: a gather of the
// negated log-probability at the label. The labels' one-hot stays: the loss's
// gradient reads it too.

#ids = affine_map<(d0, d1) -> (d0)>
#all = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @cross_entropy
// CHECK:         %[[ONEHOT:.*]] = linalg.generic
// CHECK:           arith.uitofp
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel"]}
// CHECK:           %[[V:.*]] = tensor.extract %{{.*}} : tensor<3x5xf32>
// CHECK:           %[[N:.*]] = arith.negf %[[V]] : f32
// CHECK:           arith.addf %{{.*}}, %[[N]] : f32
// CHECK:         return %{{.*}}, %[[ONEHOT]]
func.func @cross_entropy(%labels: tensor<3xi32>, %logp: tensor<3x5xf32>) -> (tensor<3xf32>, tensor<3x5xf32>) {
  %empty = tensor.empty() : tensor<3x5xf32>
  %onehot = linalg.generic {indexing_maps = [#ids, #all], iterator_types = ["parallel", "parallel"]}
      ins(%labels : tensor<3xi32>) outs(%empty : tensor<3x5xf32>) {
  ^bb0(%id: i32, %o: f32):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i32
    %eq = arith.cmpi eq, %id, %c : i32
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<3x5xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %loss = linalg.generic {indexing_maps = [#all, #all, #red], iterator_types = ["parallel", "reduction"]}
      ins(%onehot, %logp : tensor<3x5xf32>, tensor<3x5xf32>) outs(%init : tensor<3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %n = arith.negf %p : f32
    %s = arith.addf %acc, %n : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  return %loss, %onehot : tensor<3xf32>, tensor<3x5xf32>
}

// -----

// Not a one-hot: the index compared is not the last dim's. Kept.

#ids = affine_map<(d0, d1) -> (d0)>
#all = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @not_one_hot
// CHECK:         linalg.index 0
// CHECK:         arith.uitofp
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:           arith.mulf
func.func @not_one_hot(%labels: tensor<3xi32>, %x: tensor<3x5xf32>) -> tensor<3xf32> {
  %empty = tensor.empty() : tensor<3x5xf32>
  %mask = linalg.generic {indexing_maps = [#ids, #all], iterator_types = ["parallel", "parallel"]}
      ins(%labels : tensor<3xi32>) outs(%empty : tensor<3x5xf32>) {
  ^bb0(%id: i32, %o: f32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i32
    %eq = arith.cmpi eq, %id, %c : i32
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<3x5xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %sum = linalg.generic {indexing_maps = [#all, #all, #red], iterator_types = ["parallel", "reduction"]}
      ins(%mask, %x : tensor<3x5xf32>, tensor<3x5xf32>) outs(%init : tensor<3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  return %sum : tensor<3xf32>
}
