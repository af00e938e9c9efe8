// shardc-expand-bf16: the f32 <-> bf16 conversions become integer ops (no call of
// __truncsfbf2 for LLVM to make on a CPU without AVX512-BF16), and nothing else is
// rewritten: other conversions and arith ops stay as they are.
// RUN: %shardc-opt %s --shardc-expand-bf16 | FileCheck %s

// CHECK-LABEL: func.func @round_and_widen
// CHECK-SAME:    (%[[X:.*]]: f32, %[[Y:.*]]: f64, %[[A:.*]]: f32)
// CHECK-NOT:     arith.truncf %[[X]]
// CHECK:         %[[NAN:.*]] = arith.cmpf une, %[[X]], %[[X]] : f32
// CHECK:         %[[BITS:.*]] = arith.bitcast %[[X]] : f32 to i32
// CHECK:         arith.addi %[[BITS]]
// CHECK:         %[[HIGH:.*]] = arith.trunci {{.*}} : i32 to i16
// CHECK:         %[[ROUNDED:.*]] = arith.select %[[NAN]], {{.*}}, %[[HIGH]] : i16
// CHECK:         %[[H:.*]] = arith.bitcast %[[ROUNDED]] : i16 to bf16
// CHECK-NOT:     arith.extf %[[H]]
// CHECK:         arith.extui {{.*}} : i16 to i32
// CHECK:         arith.shli
// CHECK:         arith.bitcast {{.*}} : i32 to f32
// CHECK:         arith.truncf %[[Y]] : f64 to f32
// CHECK:         arith.maximumf %[[A]], %[[A]] : f32
func.func @round_and_widen(%x: f32, %y: f64, %a: f32) -> (f32, f32, f32) {
  %h = arith.truncf %x : f32 to bf16
  %w = arith.extf %h : bf16 to f32
  %n = arith.truncf %y : f64 to f32
  %m = arith.maximumf %a, %a : f32
  return %w, %n, %m : f32, f32, f32
}
