// A reduction split over ranks needs the collective that combines the
// partial results; for a combiner outside the table (here `acc - x`, which
// shardc's own softmax_cross_entropy used to emit) partition stops with an
// error on the op instead of computing something wrong. No layout of the
// examples reaches it since the language emits `acc + (-x)` instead.
// RUN: not %shardc-opt %s \
// RUN:   --pass-pipeline='builtin.module(func.func(sharding-propagation,cse),func.func(shard-partition))' \
// RUN:   2>&1 | FileCheck %s
// CHECK: error: 'linalg.generic' op cannot partition: split reduction without a known combiner

shard.grid @grid(shape = 2)

#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
func.func @negated_sum(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<4x8xf32>
  %zero = arith.constant dense<0.0> : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%xs : tensor<4x8xf32>) outs(%zero : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %d = arith.subf %acc, %in : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
