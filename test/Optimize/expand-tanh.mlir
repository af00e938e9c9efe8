// shardc-expand-tanh: math.tanh becomes upstream's exp-based expansion, and nothing
// else is rewritten (upstream's math-expand-ops would also fold the addition).
// RUN: %shardc-opt %s --shardc-expand-tanh | FileCheck %s

// CHECK-LABEL: func.func @gelu_part
// CHECK-NOT:     math.tanh
// CHECK:         math.exp
// CHECK:         %[[ONE:.*]] = arith.constant 1 : i32
// CHECK:         %[[TWO:.*]] = arith.constant 2 : i32
// CHECK:         arith.addi %[[ONE]], %[[TWO]] : i32
func.func @gelu_part(%x: f32) -> (f32, i32) {
  %t = math.tanh %x : f32
  %one = arith.constant 1 : i32
  %two = arith.constant 2 : i32
  %three = arith.addi %one, %two : i32
  return %t, %three : f32, i32
}
