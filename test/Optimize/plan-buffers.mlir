// shardc-plan-buffers: a function's temporaries in one arena, a buffer reusing
// the bytes of one that is no longer live.
// RUN: %shardc-opt %s --shardc-plan-buffers -split-input-file | FileCheck %s

// %a dies before %b's first use: they share offset 0. %c is live with %b: it
// goes after it. 1024 + 64 bytes, not 1024 * 2 + 64.

// CHECK-LABEL: func.func @reuse
// CHECK-SAME:    attributes {shardc.arena_bytes = 1088 : i64}
// CHECK:         %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1088xi8>
// CHECK:         %[[AT_A:.*]] = arith.constant 0 : index
// CHECK:         %[[A:.*]] = memref.view %[[ARENA]][%[[AT_A]]][] : memref<1088xi8> to memref<256xf32>
// CHECK:         %[[AT_B:.*]] = arith.constant 0 : index
// CHECK:         %[[B:.*]] = memref.view %[[ARENA]][%[[AT_B]]][] : memref<1088xi8> to memref<256xf32>
// CHECK:         %[[AT_C:.*]] = arith.constant 1024 : index
// CHECK:         %[[C:.*]] = memref.view %[[ARENA]][%[[AT_C]]][] : memref<1088xi8> to memref<4xf32>
// CHECK-NOT:     memref.dealloc %[[A]]
// CHECK-NOT:     memref.dealloc %[[B]]
// CHECK:         memref.dealloc %[[ARENA]]
// CHECK-NEXT:    return
func.func @reuse(%x: memref<256xf32>, %out: memref<4xf32>) {
  %a = memref.alloc() : memref<256xf32>
  memref.copy %x, %a : memref<256xf32> to memref<256xf32>
  memref.dealloc %a : memref<256xf32>
  %b = memref.alloc() : memref<256xf32>
  %c = memref.alloc() : memref<4xf32>
  memref.copy %x, %b : memref<256xf32> to memref<256xf32>
  %s = memref.subview %b[0] [4] [1] : memref<256xf32> to memref<4xf32, strided<[1]>>
  memref.copy %s, %c : memref<4xf32, strided<[1]>> to memref<4xf32>
  memref.copy %c, %out : memref<4xf32> to memref<4xf32>
  memref.dealloc %b : memref<256xf32>
  memref.dealloc %c : memref<4xf32>
  return
}

// -----

// Buffers freed in a branch, or never, keep their own allocation, and so do
// buffers of indices (no fixed byte size).

// CHECK-LABEL: func.func @not_planned
// CHECK-SAME:    attributes {shardc.arena_bytes = 0 : i64}
// CHECK:         memref.alloc() : memref<8xf32>
// CHECK:         memref.alloc() : memref<8xf32>
// CHECK:         memref.alloc() : memref<4xindex>
// CHECK-NOT:     memref.view
func.func @not_planned(%cond: i1) -> memref<8xf32> {
  %kept = memref.alloc() : memref<8xf32>
  %branch = memref.alloc() : memref<8xf32>
  scf.if %cond {
    memref.dealloc %branch : memref<8xf32>
  }
  %indices = memref.alloc() : memref<4xindex>
  memref.dealloc %indices : memref<4xindex>
  return %kept : memref<8xf32>
}

// -----

// An i1 takes a byte in memory, as LLVM stores it: 100 masks need 128 bytes, not 64.

// CHECK-LABEL: func.func @masks
// CHECK-SAME:    attributes {shardc.arena_bytes = 192 : i64}
func.func @masks(%x: memref<100xi1>, %y: memref<4xf32>) {
  %m = memref.alloc() : memref<100xi1>
  %f = memref.alloc() : memref<4xf32>
  memref.copy %x, %m : memref<100xi1> to memref<100xi1>
  memref.copy %y, %f : memref<4xf32> to memref<4xf32>
  memref.copy %m, %x : memref<100xi1> to memref<100xi1>
  memref.dealloc %m : memref<100xi1>
  memref.dealloc %f : memref<4xf32>
  return
}

// -----

// As the deallocation pipeline leaves them: every dealloc at the end. A buffer
// is live to its last access, here through a pointer taken of it: %a's bytes
// are free once the call that reads them returns, and %b takes them.

// CHECK-LABEL: func.func @freed_at_the_end
// CHECK-SAME:    attributes {shardc.arena_bytes = 1024 : i64}
// CHECK:         arith.constant 0 : index
// CHECK:         memref.view
// CHECK:         arith.constant 0 : index
// CHECK:         memref.view
func.func private @read(!llvm.ptr)
func.func @freed_at_the_end(%x: memref<256xf32>, %out: memref<256xf32>) {
  %a = memref.alloc() : memref<256xf32>
  memref.copy %x, %a : memref<256xf32> to memref<256xf32>
  %address = memref.extract_aligned_pointer_as_index %a : memref<256xf32> -> index
  %i = arith.index_cast %address : index to i64
  %p = llvm.inttoptr %i : i64 to !llvm.ptr
  func.call @read(%p) : (!llvm.ptr) -> ()
  %b = memref.alloc() : memref<256xf32>
  memref.copy %x, %b : memref<256xf32> to memref<256xf32>
  memref.copy %b, %out : memref<256xf32> to memref<256xf32>
  memref.dealloc %a : memref<256xf32>
  memref.dealloc %b : memref<256xf32>
  return
}

// -----

// A buffer read after a later buffer's first use overlaps it: 2 x 1024 bytes.

// CHECK-LABEL: func.func @still_read
// CHECK-SAME:    attributes {shardc.arena_bytes = 2048 : i64}
func.func private @read(!llvm.ptr)
func.func @still_read(%x: memref<256xf32>, %out: memref<256xf32>) {
  %a = memref.alloc() : memref<256xf32>
  memref.copy %x, %a : memref<256xf32> to memref<256xf32>
  %b = memref.alloc() : memref<256xf32>
  memref.copy %x, %b : memref<256xf32> to memref<256xf32>
  %address = memref.extract_aligned_pointer_as_index %a : memref<256xf32> -> index
  %i = arith.index_cast %address : index to i64
  %p = llvm.inttoptr %i : i64 to !llvm.ptr
  func.call @read(%p) : (!llvm.ptr) -> ()
  memref.copy %b, %out : memref<256xf32> to memref<256xf32>
  memref.dealloc %a : memref<256xf32>
  memref.dealloc %b : memref<256xf32>
  return
}

// -----

// A loop's body (a microbatch) is planned within the loop: its two temporaries, one
// dead before the other is made, share 1024 bytes, which the function's plan places
// after %before (live across the loop, read after it): 2048 bytes, every iteration
// reusing the same ones.

// CHECK-LABEL: func.func @loop_body
// CHECK-SAME:    attributes {shardc.arena_bytes = 2048 : i64}
// CHECK:         %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2048xi8>
// CHECK:         arith.constant 4 : index
// CHECK-NEXT:    %[[AT_BEFORE:.*]] = arith.constant 0 : index
// CHECK-NEXT:    memref.view %[[ARENA]][%[[AT_BEFORE]]][] : memref<2048xi8> to memref<256xf32>
// CHECK:         scf.for
// CHECK:           %[[AT_A:.*]] = arith.constant 1024 : index
// CHECK-NEXT:      memref.view %[[ARENA]][%[[AT_A]]][] : memref<2048xi8> to memref<256xf32>
// CHECK:           %[[AT_B:.*]] = arith.constant 1024 : index
// CHECK-NEXT:      memref.view %[[ARENA]][%[[AT_B]]][] : memref<2048xi8> to memref<256xf32>
// CHECK-NOT:       memref.dealloc
// CHECK:         }
// CHECK:         memref.dealloc %[[ARENA]]
func.func @loop_body(%x: memref<256xf32>, %out: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %before = memref.alloc() : memref<256xf32>
  memref.copy %x, %before : memref<256xf32> to memref<256xf32>
  scf.for %k = %c0 to %c4 step %c1 {
    %a = memref.alloc() : memref<256xf32>
    memref.copy %x, %a : memref<256xf32> to memref<256xf32>
    memref.copy %a, %out : memref<256xf32> to memref<256xf32>
    memref.dealloc %a : memref<256xf32>
    %b = memref.alloc() : memref<256xf32>
    memref.copy %out, %b : memref<256xf32> to memref<256xf32>
    memref.copy %b, %out : memref<256xf32> to memref<256xf32>
    memref.dealloc %b : memref<256xf32>
  }
  memref.copy %before, %out : memref<256xf32> to memref<256xf32>
  memref.dealloc %before : memref<256xf32>
  return
}

// -----

// The cases of a switch (a pipeline's stages: a rank runs one) are each planned from
// the switch's first byte: case 0's two live-together buffers (2048 bytes) and the
// default's one share the switch's 2048 bytes, and %out2 (live across the switch)
// goes after them.

// CHECK-LABEL: func.func @switch_cases
// CHECK-SAME:    attributes {shardc.arena_bytes = 3072 : i64}
// CHECK:         %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<3072xi8>
// CHECK:         %[[AT_OUT:.*]] = arith.constant 2048 : index
// CHECK-NEXT:    memref.view %[[ARENA]][%[[AT_OUT]]][] : memref<3072xi8> to memref<256xf32>
// CHECK:         scf.index_switch
// CHECK:         case 0 {
// CHECK:           %[[AT_A:.*]] = arith.constant 0 : index
// CHECK-NEXT:      memref.view %[[ARENA]][%[[AT_A]]][] : memref<3072xi8> to memref<256xf32>
// CHECK:           %[[AT_B:.*]] = arith.constant 1024 : index
// CHECK-NEXT:      memref.view %[[ARENA]][%[[AT_B]]][] : memref<3072xi8> to memref<256xf32>
// CHECK:         default {
// CHECK:           %[[AT_C:.*]] = arith.constant 0 : index
// CHECK-NEXT:      memref.view %[[ARENA]][%[[AT_C]]][] : memref<3072xi8> to memref<256xf32>
// CHECK-NOT:       memref.dealloc
// CHECK:         }
// CHECK:         memref.dealloc %[[ARENA]]
func.func @switch_cases(%x: memref<256xf32>, %out: memref<256xf32>, %stage: index) {
  %out2 = memref.alloc() : memref<256xf32>
  scf.index_switch %stage
  case 0 {
    %a = memref.alloc() : memref<256xf32>
    %b = memref.alloc() : memref<256xf32>
    memref.copy %x, %a : memref<256xf32> to memref<256xf32>
    memref.copy %a, %b : memref<256xf32> to memref<256xf32>
    memref.copy %b, %out2 : memref<256xf32> to memref<256xf32>
    memref.dealloc %a : memref<256xf32>
    memref.dealloc %b : memref<256xf32>
    scf.yield
  }
  default {
    %c = memref.alloc() : memref<256xf32>
    memref.copy %x, %c : memref<256xf32> to memref<256xf32>
    memref.copy %c, %out2 : memref<256xf32> to memref<256xf32>
    memref.dealloc %c : memref<256xf32>
    scf.yield
  }
  memref.copy %out2, %out : memref<256xf32> to memref<256xf32>
  memref.dealloc %out2 : memref<256xf32>
  return
}

// -----

// An entry point of the runtime (shardc.arena_argument) takes the arena as a new last
// argument, the runtime's step arena, and neither allocates nor frees it; a single
// buffer goes there too. Without buffers the mark goes and the signature stays.

// CHECK-LABEL: func.func @entry
// CHECK-SAME:    (%{{.*}}: memref<256xf32>, %{{.*}}: memref<256xf32>, %[[ARENA:.*]]: memref<1024xi8>)
// CHECK-SAME:    attributes {shardc.arena_argument, shardc.arena_bytes = 1024 : i64}
// CHECK-NOT:     memref.alloc
// CHECK:         memref.view %[[ARENA]]
// CHECK-NOT:     memref.dealloc
// CHECK:         return
func.func @entry(%x: memref<256xf32>, %out: memref<256xf32>) attributes {shardc.arena_argument} {
  %a = memref.alloc() : memref<256xf32>
  memref.copy %x, %a : memref<256xf32> to memref<256xf32>
  memref.copy %a, %out : memref<256xf32> to memref<256xf32>
  memref.dealloc %a : memref<256xf32>
  return
}

// CHECK-LABEL: func.func @entry_without_buffers
// CHECK-SAME:    (%{{.*}}: memref<256xf32>, %{{.*}}: memref<256xf32>)
// CHECK-SAME:    attributes {shardc.arena_bytes = 0 : i64}
func.func @entry_without_buffers(%x: memref<256xf32>, %out: memref<256xf32>) attributes {shardc.arena_argument} {
  memref.copy %x, %out : memref<256xf32> to memref<256xf32>
  return
}

// -----

// A layer function (shardc.arena_argument, called) is planned first and takes its
// arena last; each call passes a buffer of that size that lives only during the
// call, so the caller's plan puts both calls' arenas at one offset, beside %keep.

// CHECK-LABEL: func.func @step
// CHECK-SAME:    (%{{.*}}: memref<256xf32>, %{{.*}}: memref<256xf32>, %{{.*}}: memref<3072xi8>)
// CHECK-SAME:    attributes {shardc.arena_argument, shardc.arena_bytes = 3072 : i64}
// CHECK:         %[[AT:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[FIRST:.*]] = memref.view %{{.*}}[%[[AT]]][] : memref<3072xi8> to memref<2048xi8>
// CHECK-NEXT:    call @layer(%{{.*}}, %{{.*}}, %[[FIRST]])
// CHECK-NEXT:    %[[AGAIN:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[SECOND:.*]] = memref.view %{{.*}}[%[[AGAIN]]][] : memref<3072xi8> to memref<2048xi8>
// CHECK-NEXT:    call @layer(%{{.*}}, %{{.*}}, %[[SECOND]])
// CHECK-NOT:     memref.dealloc
// CHECK-LABEL: func.func private @layer
// CHECK-SAME:    (%{{.*}}: memref<256xf32>, %{{.*}}: memref<256xf32>, %[[ARENA:.*]]: memref<2048xi8>)
// CHECK-SAME:    attributes {shardc.arena_argument, shardc.arena_bytes = 2048 : i64}
// CHECK-NOT:     memref.alloc
// CHECK:         memref.view %[[ARENA]]
func.func @step(%x: memref<256xf32>, %out: memref<256xf32>) attributes {shardc.arena_argument} {
  %keep = memref.alloc() : memref<256xf32>
  call @layer(%x, %keep) : (memref<256xf32>, memref<256xf32>) -> ()
  call @layer(%keep, %out) : (memref<256xf32>, memref<256xf32>) -> ()
  memref.dealloc %keep : memref<256xf32>
  return
}

func.func private @layer(%x: memref<256xf32>, %out: memref<256xf32>) attributes {shardc.arena_argument} {
  %a = memref.alloc() : memref<256xf32>
  %b = memref.alloc() : memref<256xf32>
  memref.copy %x, %a : memref<256xf32> to memref<256xf32>
  memref.copy %a, %b : memref<256xf32> to memref<256xf32>
  memref.copy %b, %out : memref<256xf32> to memref<256xf32>
  memref.dealloc %a : memref<256xf32>
  memref.dealloc %b : memref<256xf32>
  return
}

// -----

// Donation: the caller frees %saved right after the call, so once the layer
// function has read it for the last time its bytes take %b (not %a, live while
// %saved is read). The function takes those bytes before its arena; the caller
// allocates %saved as bytes viewed as f32 and passes both.

// CHECK-LABEL: func.func @backward
// CHECK-SAME:    attributes {shardc.arena_argument, shardc.arena_bytes = 2048 : i64}
// CHECK:         %[[RAW:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<2048xi8> to memref<1024xi8>
// CHECK:         %[[SAVED:.*]] = memref.view %[[RAW]][%{{.*}}][] : memref<1024xi8> to memref<256xf32>
// CHECK:         memref.copy %{{.*}}, %[[SAVED]]
// CHECK:         %[[ARENA:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<2048xi8> to memref<1024xi8>
// CHECK-NEXT:    call @layer_backward(%[[SAVED]], %{{.*}}, %[[RAW]], %[[ARENA]])
// CHECK-LABEL: func.func private @layer_backward
// CHECK-SAME:    (%[[ARG:.*]]: memref<256xf32>, %{{.*}}: memref<256xf32>, %[[BYTES:.*]]: memref<1024xi8>, %[[OWN:.*]]: memref<1024xi8>)
// CHECK-SAME:    shardc.arena_bytes = 1024 : i64
// CHECK:         %[[A:.*]] = memref.view %[[OWN]]
// CHECK:         memref.copy %[[ARG]], %[[A]]
// CHECK:         %[[B:.*]] = memref.view %[[BYTES]]
// CHECK:         memref.copy %[[A]], %[[B]]
func.func @backward(%x: memref<256xf32>, %out: memref<256xf32>) attributes {shardc.arena_argument} {
  %saved = memref.alloc() : memref<256xf32>
  memref.copy %x, %saved : memref<256xf32> to memref<256xf32>
  call @layer_backward(%saved, %out) : (memref<256xf32>, memref<256xf32>) -> ()
  memref.dealloc %saved : memref<256xf32>
  return
}

func.func private @layer_backward(%saved: memref<256xf32>, %out: memref<256xf32>) attributes {shardc.arena_argument} {
  %a = memref.alloc() : memref<256xf32>
  memref.copy %saved, %a : memref<256xf32> to memref<256xf32>
  %b = memref.alloc() : memref<256xf32>
  memref.copy %a, %b : memref<256xf32> to memref<256xf32>
  memref.copy %b, %out : memref<256xf32> to memref<256xf32>
  memref.dealloc %a : memref<256xf32>
  memref.dealloc %b : memref<256xf32>
  return
}
