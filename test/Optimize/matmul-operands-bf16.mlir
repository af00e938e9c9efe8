// shardc-matmul-operands-bf16: under `precision matmul : bf16` each f32 matrix
// product reads its operands rounded to bfloat16 (one rounding per operand and
// block, shared by the products that read it) and accumulates in f32; a
// convolution, an elementwise op and a module without the attribute are left alone.
// RUN: %shardc-opt %s --shardc-matmul-operands-bf16 -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @products
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x2xf32>, %[[V:.*]]: tensor<8x2xf32>, %[[Z:.*]]: tensor<4x2xf32>)
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<4x8xbf16>
// CHECK:         %[[X16:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4x8xf32>) outs(%[[E]] : tensor<4x8xbf16>)
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
// CHECK:         %[[W16:.*]] = linalg.generic {{.*}} ins(%[[W]] : tensor<8x2xf32>)
// CHECK:         %[[P:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X16]], %[[W16]] : tensor<4x8xbf16>, tensor<8x2xbf16>) outs(%[[Z]] : tensor<4x2xf32>)
// CHECK:           %[[A:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK:           %[[B:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK:           %[[M:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK:           arith.addf %{{.*}}, %[[M]] : f32
// The second product reads x's rounding again; v gets its own.
// CHECK:         %[[V16:.*]] = linalg.generic {{.*}} ins(%[[V]] : tensor<8x2xf32>)
// CHECK:         %[[Q:.*]] = linalg.generic {{.*}} ins(%[[X16]], %[[V16]] : tensor<4x8xbf16>, tensor<8x2xbf16>)
// CHECK-NOT:     truncf
// CHECK:         return %[[P]], %[[Q]]
module attributes {shardc.matmul_precision = "bf16"} {
  func.func @products(%x: tensor<4x8xf32>, %w: tensor<8x2xf32>, %v: tensor<8x2xf32>, %z: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
    %p = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x2xf32>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
    %q = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                         iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x, %v : tensor<4x8xf32>, tensor<8x2xf32>) outs(%z : tensor<4x2xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %o, %m : f32
      linalg.yield %s : f32
    } -> tensor<4x2xf32>
    return %p, %q : tensor<4x2xf32>, tensor<4x2xf32>
  }
}

// -----

// A convolution reads its input at sums of loops: not a matrix product here.
// CHECK-LABEL: func.func @convolution
// CHECK-NOT:     bf16
// CHECK:         linalg.conv_2d_nhwc_hwcf
module attributes {shardc.matmul_precision = "bf16"} {
  func.func @convolution(%x: tensor<1x4x4x2xf32>, %k: tensor<3x3x2x2xf32>, %y: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
    %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
        ins(%x, %k : tensor<1x4x4x2xf32>, tensor<3x3x2x2xf32>) outs(%y : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    return %c : tensor<1x2x2x2xf32>
  }
}

// -----

// Without the rules file's precision the products stay f32.
// CHECK-LABEL: func.func @f32_products
// CHECK-NOT:     bf16
// CHECK:         linalg.matmul
module {
  func.func @f32_products(%x: tensor<4x8xf32>, %w: tensor<8x2xf32>, %z: tensor<4x2xf32>) -> tensor<4x2xf32> {
    %p = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x2xf32>) outs(%z : tensor<4x2xf32>) -> tensor<4x2xf32>
    return %p : tensor<4x2xf32>
  }
}
