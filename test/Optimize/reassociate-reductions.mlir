// shardc-reassociate-reductions: the add that folds a term into a reduction's
// accumulator may be reordered (so LLVM vectorizes the loop); the term's own
// arithmetic, and generics without a reduction loop, keep their flags.
// RUN: %shardc-opt %s --shardc-reassociate-reductions | FileCheck %s

#rows = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

// CHECK-LABEL: func.func @sum_of_squares
// CHECK:         linalg.generic
// CHECK:           %[[SQUARE:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:      arith.addf %{{.*}}, %[[SQUARE]] fastmath<reassoc> : f32
func.func @sum_of_squares(%x: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %sum = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %square = arith.mulf %a, %a : f32
    %next = arith.addf %acc, %square : f32
    linalg.yield %next : f32
  } -> tensor<4xf32>
  return %sum : tensor<4xf32>
}

// A product keeps its existing flags and gains reassoc.
// CHECK-LABEL: func.func @product
// CHECK:         arith.mulf %{{.*}}, %{{.*}} fastmath<reassoc,nnan> : f32
func.func @product(%x: memref<4x8xf32>, %out: memref<4xf32>) {
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x8xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %next = arith.mulf %a, %acc fastmath<nnan> : f32
    linalg.yield %next : f32
  }
  return
}

// A maximum is exact in any order: left alone. So is an element-wise generic.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT:     reassoc
func.func @untouched(%x: tensor<4x8xf32>, %init: tensor<4xf32>, %y: tensor<4x8xf32>)
    -> (tensor<4xf32>, tensor<4x8xf32>) {
  %max = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %next = arith.maximumf %acc, %a : f32
    linalg.yield %next : f32
  } -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%y : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %next = arith.addf %a, %b : f32
    linalg.yield %next : f32
  } -> tensor<4x8xf32>
  return %max, %sum : tensor<4xf32>, tensor<4x8xf32>
}
