// shardc-replicate-unsharded: sharding-propagation derives an op's sharding
// from annotated operands or users, and leaves a tensor no annotated value
// reaches without one (below, the one_hot of a 0-d label, summed back to a 0-d
// value).
// shard-partition then dereferences the missing grid and crashes. The pass
// annotates such a result as replicated and propagates again from it, after
// which shard-partition computes it whole on every rank. Found by the program
// generator: one_hot(argmax(w)) of a vector w, and `mean(image + s)` of a
// scalar parameter s, whose gradient broadcasts the loss's 0-d cotangent.
// shardc-propagate is propagation and this pass (ANCHORED).
//
// RUN: %shardc-opt %s --pass-pipeline='builtin.module(func.func(sharding-propagation{traversal=forward-backward}))' \
// RUN:   | FileCheck %s --check-prefix=PROP
// RUN: %shardc-opt %s --shardc-propagate \
// RUN:   | FileCheck %s --check-prefix=ANCHORED
// RUN: %shardc-opt %s --shardc-propagate --shardc-partition \
// RUN:   | FileCheck %s --check-prefix=SPMD

// PROP-LABEL: func.func @one_hot_summed
// PROP:       %[[HOT:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<i32>) outs(%{{.*}} : tensor<4xf32>)
// PROP-NOT:   shard.shard %[[HOT]]
// PROP:       linalg.generic {{.*}} ins(%[[HOT]] : tensor<4xf32>)

// ANCHORED-LABEL: func.func @one_hot_summed
// ANCHORED:       %[[HOT:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4xf32>)
// ANCHORED:       %[[REP:.*]] = shard.sharding @mesh split_axes = {{\[\[\]\]}}
// ANCHORED-NEXT:  %[[ANNOTATED:.*]] = shard.shard %[[HOT]] to %[[REP]] : tensor<4xf32>
// ANCHORED:       shard.shard %[[ANNOTATED]] to %{{.*}} annotate_for_users : tensor<4xf32>
// The batch-split value keeps its sharding.
// ANCHORED:       return %{{.*}}, %sharding_annotated : tensor<f32>, tensor<8x4xf32>

// SPMD-LABEL: func.func @one_hot_summed
// SPMD-SAME:  (%arg0: tensor<i32>, %arg1: tensor<4x4xf32>) -> (tensor<f32>, tensor<4x4xf32>)
// SPMD:       linalg.generic {{.*}} outs(%{{.*}} : tensor<4xf32>)
// SPMD-NOT:   shard.
// SPMD:       return

#scalar = affine_map<(d0) -> ()>
#vector = affine_map<(d0) -> (d0)>
shard.grid @mesh(shape = 2)
func.func @one_hot_summed(%label: tensor<i32>, %x: tensor<8x4xf32>) -> (tensor<f32>, tensor<8x4xf32>) {
  %split = shard.sharding @mesh split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %split : tensor<8x4xf32>
  %empty = tensor.empty() : tensor<4xf32>
  %hot = linalg.generic {indexing_maps = [#scalar, #vector], iterator_types = ["parallel"]}
      ins(%label : tensor<i32>) outs(%empty : tensor<4xf32>) {
  ^bb0(%in: i32, %out: f32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i32
    %eq = arith.cmpi eq, %in, %c : i32
    %one = arith.uitofp %eq : i1 to f32
    linalg.yield %one : f32
  } -> tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<f32>
  %filled = linalg.fill ins(%zero : f32) outs(%init : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [#vector, #scalar], iterator_types = ["reduction"]}
      ins(%hot : tensor<4xf32>) outs(%filled : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %add = arith.addf %in, %acc : f32
    linalg.yield %add : f32
  } -> tensor<f32>
  return %sum, %xs : tensor<f32>, tensor<8x4xf32>
}
