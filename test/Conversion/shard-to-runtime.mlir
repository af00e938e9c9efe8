// The IR that shardc-shard-to-runtime makes for each shard op: runtime calls on pointers
// to dense buffers, still at tensor level.
// RUN: %shardc-opt %s --shardc-shard-to-runtime -split-input-file | FileCheck %s

// Runtime functions are declared once, with the C ABI's types, and the grid goes
// away when nothing refers to it any more.
// CHECK-NOT:   shard.grid
// CHECK-DAG:   func.func private @shardrt_all_reduce_f32(i32, !llvm.ptr, !llvm.ptr, i64, i32)
// CHECK-DAG:   func.func private @shardrt_all_reduce_i32(i32, !llvm.ptr, !llvm.ptr, i64, i32)
// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<i32>)
// The input read-only, the output a fresh buffer, both dense.
// CHECK:         %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<4x8xf32> to memref<4x8xf32>
// CHECK:         %[[INI:.*]] = memref.extract_aligned_pointer_as_index %[[IN]]
// CHECK:         %[[INI64:.*]] = arith.index_cast %[[INI]] : index to i64
// CHECK:         %[[INP:.*]] = llvm.inttoptr %[[INI64]] : i64 to !llvm.ptr
// CHECK:         %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
// CHECK:         %[[OUTI:.*]] = memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK:         %[[OUTI64:.*]] = arith.index_cast %[[OUTI]] : index to i64
// CHECK:         %[[OUTP:.*]] = llvm.inttoptr %[[OUTI64]] : i64 to !llvm.ptr
// Axis 1 is bit 1; 32 elements; max is SHARDRT_MAX = 1.
// CHECK-DAG:     %[[MASK:.*]] = arith.constant 2 : i32
// CHECK-DAG:     %[[COUNT:.*]] = arith.constant 32 : i64
// CHECK-DAG:     %[[MAX:.*]] = arith.constant 1 : i32
// CHECK:         call @shardrt_all_reduce_f32(%[[MASK]], %[[INP]], %[[OUTP]], %[[COUNT]], %[[MAX]])
// CHECK:         %[[R0:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<4x8xf32> to tensor<4x8xf32>
// The order of grid_axes does not matter to a reduction: both axes, mask 3.
// CHECK:         bufferization.to_buffer %[[Y]] read_only : tensor<i32> to memref<i32>
// CHECK:         memref.alloc() {alignment = 64 : i64} : memref<i32>
// CHECK-DAG:     %[[MASK3:.*]] = arith.constant 3 : i32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG:     %[[PRODUCT:.*]] = arith.constant 3 : i32
// CHECK:         call @shardrt_all_reduce_i32(%[[MASK3]], %{{.*}}, %{{.*}}, %[[ONE]], %[[PRODUCT]])
// CHECK:         %[[R1:.*]] = bufferization.to_tensor
// CHECK:         return %[[R0]], %[[R1]]
shard.grid @grid(shape = 2x4)
func.func @all_reduce(%x: tensor<4x8xf32>, %y: tensor<i32>) -> (tensor<4x8xf32>, tensor<i32>) {
  %0 = shard.all_reduce %x on @grid grid_axes = [1] reduction = max : tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = shard.all_reduce %y on @grid grid_axes = [1, 0] reduction = product : tensor<i32> -> tensor<i32>
  return %0, %1 : tensor<4x8xf32>, tensor<i32>
}

// -----

// The local shape goes in a constant global, one per distinct shape.
// CHECK:       memref.global "private" constant @__shardrt_shape_4_8 : memref<2xi64> = dense<[4, 8]>
// CHECK-NOT:   memref.global
// CHECK-LABEL: func.func @all_gather
// Read-only input, fresh output, the local shape (4, 8) by pointer, dimension 1.
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>)
// CHECK:         %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<4x8xf32> to memref<4x8xf32>
// CHECK:         %[[INI:.*]] = memref.extract_aligned_pointer_as_index %[[IN]]
// CHECK:         %[[INI64:.*]] = arith.index_cast %[[INI]] : index to i64
// CHECK:         %[[INP:.*]] = llvm.inttoptr %[[INI64]] : i64 to !llvm.ptr
// CHECK:         %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
// CHECK:         %[[OUTI:.*]] = memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK:         %[[OUTI64:.*]] = arith.index_cast %[[OUTI]] : index to i64
// CHECK:         %[[OUTP:.*]] = llvm.inttoptr %[[OUTI64]] : i64 to !llvm.ptr
// CHECK:         %[[MASK:.*]] = arith.constant 1 : i32
// CHECK:         %[[NDIM:.*]] = arith.constant 2 : i32
// CHECK:         %[[SHAPE:.*]] = memref.get_global @__shardrt_shape_4_8 : memref<2xi64>
// CHECK:         %[[SHAPEI:.*]] = memref.extract_aligned_pointer_as_index %[[SHAPE]]
// CHECK:         %[[SHAPEI64:.*]] = arith.index_cast %[[SHAPEI]]
// CHECK:         %[[SHAPEP:.*]] = llvm.inttoptr %[[SHAPEI64]]
// CHECK:         %[[DIM:.*]] = arith.constant 1 : i32
// CHECK:         call @shardrt_all_gather_f32(%[[MASK]], %[[INP]], %[[OUTP]], %[[NDIM]], %[[SHAPEP]], %[[DIM]])
// CHECK:         %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK:         memref.get_global @__shardrt_shape_4_8
// CHECK:         call @shardrt_all_gather_f32
// CHECK:         return %[[R]]
shard.grid @grid(shape = 2x4)
func.func @all_gather(%x: tensor<4x8xf32>) -> (tensor<4x16xf32>, tensor<16x8xf32>) {
  %0 = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 1 : tensor<4x8xf32> -> tensor<4x16xf32>
  %1 = shard.all_gather %x on @grid grid_axes = [1] gather_axis = 0 : tensor<4x8xf32> -> tensor<16x8xf32>
  return %0, %1 : tensor<4x16xf32>, tensor<16x8xf32>
}

// -----

// grid_axes = [1, 0]: the runtime returns the blocks ordered by (axis 0, axis 1);
// shard wants (axis 1, axis 0). The gathered dimension 32 = 2 (axis 0) x 4 (axis 1)
// x 4 is transposed to 4 x 2 x 4.
// CHECK-LABEL: func.func @all_gather_reversed_axes
// CHECK-DAG:     %[[MASK:.*]] = arith.constant 3 : i32
// CHECK-DAG:     %[[DIM:.*]] = arith.constant 0 : i32
// CHECK:         call @shardrt_all_gather_i32(%[[MASK]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[DIM]])
// CHECK:         %[[G:.*]] = bufferization.to_tensor %{{.*}} restrict writable : memref<32x3xi32> to tensor<32x3xi32>
// CHECK:         %[[E:.*]] = tensor.expand_shape %[[G]] {{\[}}[0, 1, 2], [3]] output_shape [2, 4, 4, 3] : tensor<32x3xi32> into tensor<2x4x4x3xi32>
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<4x2x4x3xi32>
// CHECK:         %[[T:.*]] = linalg.transpose ins(%[[E]] : tensor<2x4x4x3xi32>) outs(%[[INIT]] : tensor<4x2x4x3xi32>) permutation = [1, 0, 2, 3]
// CHECK:         %[[C:.*]] = tensor.collapse_shape %[[T]] {{\[}}[0, 1, 2], [3]] : tensor<4x2x4x3xi32> into tensor<32x3xi32>
// CHECK:         return %[[C]]
shard.grid @grid(shape = 2x4)
func.func @all_gather_reversed_axes(%x: tensor<4x3xi32>) -> tensor<32x3xi32> {
  %0 = shard.all_gather %x on @grid grid_axes = [1, 0] gather_axis = 0 : tensor<4x3xi32> -> tensor<32x3xi32>
  return %0 : tensor<32x3xi32>
}

// -----

// CHECK-LABEL: func.func @reduce_scatter
// CHECK-SAME:    (%[[X:.*]]: tensor<8x2xf32>)
// CHECK:         bufferization.to_buffer %[[X]] read_only : tensor<8x2xf32> to memref<8x2xf32>
// CHECK:         %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x2xf32>
// CHECK-DAG:     %[[MASK:.*]] = arith.constant 2 : i32
// CHECK-DAG:     %[[NDIM:.*]] = arith.constant 2 : i32
// CHECK-DAG:     memref.get_global @__shardrt_shape_8_2 : memref<2xi64>
// CHECK-DAG:     %[[DIM:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[MIN:.*]] = arith.constant 2 : i32
// CHECK:         call @shardrt_reduce_scatter_f32(%[[MASK]], %{{.*}}, %{{.*}}, %[[NDIM]], %{{.*}}, %[[DIM]], %[[MIN]])
// CHECK:         %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<2x2xf32> to tensor<2x2xf32>
// CHECK:         return %[[R]]
shard.grid @grid(shape = 2x4)
func.func @reduce_scatter(%x: tensor<8x2xf32>) -> tensor<2x2xf32> {
  %0 = shard.reduce_scatter %x on @grid grid_axes = [1] reduction = min scatter_axis = 0 : tensor<8x2xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// grid_axes = [1, 0]: the input's blocks are reordered from shard's group order
// to the runtime's before the call.
// CHECK-LABEL: func.func @reduce_scatter_reversed_axes
// CHECK-SAME:    (%[[X:.*]]: tensor<8x2xf32>)
// CHECK:         %[[E:.*]] = tensor.expand_shape %[[X]] {{\[}}[0, 1, 2], [3]] output_shape [4, 2, 1, 2] : tensor<8x2xf32> into tensor<4x2x1x2xf32>
// CHECK:         %[[T:.*]] = linalg.transpose ins(%[[E]] : tensor<4x2x1x2xf32>) outs(%{{.*}} : tensor<2x4x1x2xf32>) permutation = [1, 0, 2, 3]
// CHECK:         %[[C:.*]] = tensor.collapse_shape %[[T]] {{\[}}[0, 1, 2], [3]] : tensor<2x4x1x2xf32> into tensor<8x2xf32>
// CHECK:         bufferization.to_buffer %[[C]] read_only
// CHECK:         call @shardrt_reduce_scatter_f32
shard.grid @grid(shape = 2x4)
func.func @reduce_scatter_reversed_axes(%x: tensor<8x2xf32>) -> tensor<1x2xf32> {
  %0 = shard.reduce_scatter %x on @grid grid_axes = [1, 0] scatter_axis = 0 : tensor<8x2xf32> -> tensor<1x2xf32>
  return %0 : tensor<1x2xf32>
}

// -----

// A parameter's gradient (shardc.gradient_sync, shardc-mark-gradient-syncs) goes to the
// runtime's gradient entries: --reduce-precision bf16 sends those in bfloat16. Its
// all_reduce or reduce_scatter starts where it is and waits just before the first op
// that reads the sum (--overlap-gradients), here after the next product, or before the
// return; the runtime progresses the
// reductions in flight before each large loop nest.
// CHECK-DAG:   func.func private @shardrt_all_reduce_gradient_start_f32(i32, !llvm.ptr, !llvm.ptr, i64, i32) -> i64
// CHECK-DAG:   func.func private @shardrt_wait(i64, !llvm.ptr)
// CHECK-DAG:   func.func private @shardrt_reduce_scatter_gradient_start_f32(i32, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i32, i32) -> i64
// CHECK-DAG:   func.func private @shardrt_progress_gradients()
// CHECK-LABEL: func.func @gradients
// CHECK:         %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
// CHECK:         %[[INDEX:.*]] = memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK:         %[[INT:.*]] = arith.index_cast %[[INDEX]]
// CHECK:         %[[PTR:.*]] = llvm.inttoptr %[[INT]]
// CHECK:         %[[H:.*]] = call @shardrt_all_reduce_gradient_start_f32(%{{.*}}, %{{.*}}, %[[PTR]],
// CHECK:         %[[SCATTERED:.*]] = call @shardrt_reduce_scatter_gradient_start_f32
// CHECK:         call @shardrt_progress_gradients()
// CHECK-NEXT:    %[[P:.*]] = linalg.matmul
// CHECK:         call @shardrt_wait(%[[H]], %[[PTR]]) : (i64, !llvm.ptr) -> ()
// CHECK-NEXT:    %[[SUM:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-NEXT:    linalg.add ins(%[[SUM]], %[[P]]
// CHECK:         call @shardrt_wait(%[[SCATTERED]],
// CHECK-NEXT:    bufferization.to_tensor
// CHECK-NEXT:    return
shard.grid @grid(shape = 2x4)
func.func @gradients(%w: tensor<4x8xf32>, %v: tensor<8x2xf32>, %a: tensor<4x16384xf32>, %b: tensor<16384x8xf32>) -> (tensor<4x8xf32>, tensor<2x2xf32>) {
  %0 = shard.all_reduce %w on @grid grid_axes = [0] {shardc.gradient_sync} : tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = shard.reduce_scatter %v on @grid grid_axes = [1] scatter_axis = 0 {shardc.gradient_sync} : tensor<8x2xf32> -> tensor<2x2xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %p = linalg.matmul ins(%a, %b : tensor<4x16384xf32>, tensor<16384x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = linalg.add ins(%0, %p : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %s, %1 : tensor<4x8xf32>, tensor<2x2xf32>
}

// -----

// A parameter's gather under FSDP (shardc.regather, shardc-regather-parameters) starts
// where it is, which shardc-prefetch-gathers made before the previous weight's reader,
// and waits just before its own reader (--prefetch-weights); one along a dimension
// that is not the outermost too (the runtime lays the blocks out at the wait). Other
// gathers, and a parameter's over axes not in mesh order, gather at once.
// CHECK-DAG:   func.func private @shardrt_all_gather_start_f32(i32, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i32) -> i64
// CHECK-LABEL: func.func @prefetched_weights
// CHECK:         %[[H0:.*]] = call @shardrt_all_gather_start_f32(%{{.*}}, %{{.*}}, %[[OUT0:.*]], %{{.*}}, %{{.*}}, %{{.*}}) : (i32, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i32) -> i64
// CHECK:         %[[H1:.*]] = call @shardrt_all_gather_start_f32(%{{.*}}, %{{.*}}, %[[OUT1:.*]], %{{.*}}, %{{.*}}, %{{.*}}) : (i32, !llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i32) -> i64
// CHECK:         call @shardrt_wait(%[[H0]], %[[OUT0]])
// CHECK-NEXT:    %[[W0:.*]] = bufferization.to_tensor
// CHECK:         %[[Y:.*]] = linalg.matmul ins(%{{.*}}, %[[W0]]
// CHECK:         call @shardrt_wait(%[[H1]], %[[OUT1]])
// CHECK-NEXT:    %[[W1:.*]] = bufferization.to_tensor
// CHECK-NEXT:    linalg.matmul ins(%[[Y]], %[[W1]]
// CHECK:         call @shardrt_all_gather_f32(
// CHECK:         call @shardrt_all_gather_f32(
// CHECK-NOT:     call @shardrt_all_gather_start_f32
// CHECK:         return
shard.grid @grid(shape = 2x2)
func.func @prefetched_weights(%w0: tensor<2x4xf32>, %w1: tensor<4x2xf32>, %x: tensor<2x4xf32>, %e: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x8xf32>) {
  %wf0 = shard.all_gather %w0 on @grid grid_axes = [0] gather_axis = 0 {shardc.regather = 0 : i64} : tensor<2x4xf32> -> tensor<4x4xf32>
  %wf1 = shard.all_gather %w1 on @grid grid_axes = [1] gather_axis = 1 {shardc.regather = 1 : i64} : tensor<4x2xf32> -> tensor<4x4xf32>
  %y = linalg.matmul ins(%e, %wf0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %z = linalg.matmul ins(%y, %wf1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %xf = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
  %wr = shard.all_gather %w0 on @grid grid_axes = [1, 0] gather_axis = 1 {shardc.regather = 2 : i64} : tensor<2x4xf32> -> tensor<2x16xf32>
  %c = tensor.collapse_shape %wr [[0, 1]] : tensor<2x16xf32> into tensor<32xf32>
  %r = tensor.expand_shape %c [[0, 1]] output_shape [4, 8] : tensor<32xf32> into tensor<4x8xf32>
  return %z, %xf, %r : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x8xf32>
}

// -----

// A private function (a scan layer's backward pass, shardc-outline-layers) that returns
// a gradient's sum unread returns the reduction's handle too; each call waits for it
// just before the first reader of that result, so the reduction runs on through what
// the caller does meanwhile, and names the result's buffer (the runtime checks that it
// is the one the start writes). A sum the function reads itself is waited for there.
// CHECK-LABEL: func.func private @layer_backward
// CHECK-SAME:    -> (tensor<4x8xf32>, tensor<4x8xf32>, i64)
// CHECK:         %[[KEPT:.*]] = call @shardrt_all_reduce_gradient_start_f32
// CHECK:         %[[READ:.*]] = call @shardrt_all_reduce_gradient_start_f32
// CHECK:         call @shardrt_wait(%[[READ]], %{{.*}})
// CHECK:         linalg.add
// CHECK:         return %{{.*}}, %{{.*}}, %[[KEPT]] : tensor<4x8xf32>, tensor<4x8xf32>, i64
// CHECK-LABEL: func.func @step
// CHECK:         %[[R:.*]]:3 = call @layer_backward(%{{.*}}) : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, i64)
// CHECK-NEXT:    %[[R2:.*]]:3 = call @layer_backward(%[[R]]#1)
// CHECK:         %[[SUM:.*]] = bufferization.to_buffer %[[R]]#0 read_only
// CHECK:         call @shardrt_wait(%[[R]]#2, %{{.*}}) : (i64, !llvm.ptr) -> ()
// CHECK-NEXT:    tensor.extract %[[R]]#0
// CHECK:         call @shardrt_wait(%[[R2]]#2, %{{.*}}) : (i64, !llvm.ptr) -> ()
// CHECK-NEXT:    return %[[R2]]#0
shard.grid @grid(shape = 2)
func.func private @layer_backward(%g: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %kept = shard.all_reduce %g on @grid grid_axes = [0] {shardc.gradient_sync} : tensor<4x8xf32> -> tensor<4x8xf32>
  %read = shard.all_reduce %g on @grid grid_axes = [0] {shardc.gradient_sync} : tensor<4x8xf32> -> tensor<4x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %s = linalg.add ins(%read, %g : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %kept, %s : tensor<4x8xf32>, tensor<4x8xf32>
}
func.func @step(%g: tensor<4x8xf32>, %x: f32) -> (tensor<4x8xf32>, f32) {
  %0:2 = call @layer_backward(%g) : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %1:2 = call @layer_backward(%0#1) : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  %c0 = arith.constant 0 : index
  %c = tensor.extract %0#0[%c0, %c0] : tensor<4x8xf32>
  %y = arith.addf %x, %c : f32
  return %1#0, %y : tensor<4x8xf32>, f32
}

// -----

// CHECK-LABEL: func.func @all_to_all
// CHECK-SAME:    (%[[X:.*]]: tensor<8x3xi32>)
// CHECK:         bufferization.to_buffer %[[X]] read_only : tensor<8x3xi32> to memref<8x3xi32>
// CHECK:         %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x12xi32>
// CHECK-DAG:     %[[MASK:.*]] = arith.constant 2 : i32
// CHECK-DAG:     memref.get_global @__shardrt_shape_8_3 : memref<2xi64>
// CHECK-DAG:     %[[SPLIT:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[CONCAT:.*]] = arith.constant 1 : i32
// CHECK:         call @shardrt_all_to_all_i32(%[[MASK]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SPLIT]], %[[CONCAT]])
// CHECK:         %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<2x12xi32> to tensor<2x12xi32>
// CHECK:         return %[[R]]
shard.grid @grid(shape = 2x4)
func.func @all_to_all(%x: tensor<8x3xi32>) -> tensor<2x12xi32> {
  %0 = shard.all_to_all %x on @grid grid_axes = [1] split_axis = 0 concat_axis = 1 : tensor<8x3xi32> -> tensor<2x12xi32>
  return %0 : tensor<2x12xi32>
}

// -----

// grid_axes = [1, 0]: blocks reordered on the split dimension before the call and
// on the concatenated dimension after it.
// CHECK-LABEL: func.func @all_to_all_reversed_axes
// CHECK:         linalg.transpose ins(%{{.*}} : tensor<4x2x1x3xf32>) outs(%{{.*}} : tensor<2x4x1x3xf32>) permutation = [1, 0, 2, 3]
// CHECK:         call @shardrt_all_to_all_f32
// CHECK:         %[[G:.*]] = bufferization.to_tensor %{{.*}} restrict writable : memref<1x24xf32> to tensor<1x24xf32>
// CHECK:         tensor.expand_shape %[[G]] {{\[}}[0], [1, 2, 3]] output_shape [1, 2, 4, 3] : tensor<1x24xf32> into tensor<1x2x4x3xf32>
// CHECK:         linalg.transpose ins(%{{.*}} : tensor<1x2x4x3xf32>) outs(%{{.*}} : tensor<1x4x2x3xf32>) permutation = [0, 2, 1, 3]
shard.grid @grid(shape = 2x4)
func.func @all_to_all_reversed_axes(%x: tensor<8x3xf32>) -> tensor<1x24xf32> {
  %0 = shard.all_to_all %x on @grid grid_axes = [1, 0] split_axis = 0 concat_axis = 1 : tensor<8x3xf32> -> tensor<1x24xf32>
  return %0 : tensor<1x24xf32>
}

// -----

// No communication: the rank's index in its group picks the slice.
// CHECK:       func.func private @shardrt_group_index(i32) -> i64
// CHECK-LABEL: func.func @all_slice
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>)
// CHECK:         %[[MASK:.*]] = arith.constant 2 : i32
// CHECK:         %[[G:.*]] = call @shardrt_group_index(%[[MASK]]) : (i32) -> i64
// CHECK:         %[[GI:.*]] = arith.index_cast %[[G]] : i64 to index
// CHECK:         %[[SIZE:.*]] = arith.constant 2 : index
// CHECK:         %[[OFF:.*]] = arith.muli %[[GI]], %[[SIZE]] : index
// CHECK:         %[[S:.*]] = tensor.extract_slice %[[X]][0, %[[OFF]]] [4, 2] [1, 1] : tensor<4x8xf32> to tensor<4x2xf32>
// CHECK:         return %[[S]]
shard.grid @grid(shape = 2x4)
func.func @all_slice(%x: tensor<4x8xf32>) -> tensor<4x2xf32> {
  %0 = shard.all_slice %x on @grid grid_axes = [1] slice_axis = 1 : tensor<4x8xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// grid_axes = [1, 0]: the group index is coord1 * 2 + coord0.
// CHECK-LABEL: func.func @all_slice_reversed_axes
// CHECK-SAME:    (%[[X:.*]]: tensor<8x3xi32>)
// CHECK:         %[[A1:.*]] = arith.constant 1 : i32
// CHECK:         %[[C1:.*]] = call @shardrt_mesh_coord(%[[A1]]) : (i32) -> i64
// CHECK:         %[[A0:.*]] = arith.constant 0 : i32
// CHECK:         %[[C0:.*]] = call @shardrt_mesh_coord(%[[A0]]) : (i32) -> i64
// CHECK:         %[[TWO:.*]] = arith.constant 2 : i64
// CHECK:         %[[M:.*]] = arith.muli %[[C1]], %[[TWO]] : i64
// CHECK:         %[[L:.*]] = arith.addi %[[M]], %[[C0]] : i64
// CHECK:         %[[LI:.*]] = arith.index_cast %[[L]] : i64 to index
// CHECK:         %[[OFF:.*]] = arith.muli %[[LI]], %{{.*}} : index
// CHECK:         tensor.extract_slice %[[X]][%[[OFF]], 0] [1, 3] [1, 1] : tensor<8x3xi32> to tensor<1x3xi32>
shard.grid @grid(shape = 2x4)
func.func @all_slice_reversed_axes(%x: tensor<8x3xi32>) -> tensor<1x3xi32> {
  %0 = shard.all_slice %x on @grid grid_axes = [1, 0] slice_axis = 0 : tensor<8x3xi32> -> tensor<1x3xi32>
  return %0 : tensor<1x3xi32>
}

// -----

// CHECK-DAG:   func.func private @shardrt_mesh_coord(i32) -> i64
// CHECK-DAG:   func.func private @shardrt_rank() -> i32
// CHECK-LABEL: func.func @process_indices
// CHECK:         %[[A0:.*]] = arith.constant 0 : i32
// CHECK:         %[[C0:.*]] = call @shardrt_mesh_coord(%[[A0]]) : (i32) -> i64
// CHECK:         %[[I0:.*]] = arith.index_cast %[[C0]] : i64 to index
// An axis of size 1: the coordinate is 0 without a call.
// CHECK:         %[[I1:.*]] = arith.constant 0 : index
// CHECK:         %[[A2:.*]] = arith.constant 2 : i32
// CHECK:         %[[C2:.*]] = call @shardrt_mesh_coord(%[[A2]]) : (i32) -> i64
// CHECK:         %[[I2:.*]] = arith.index_cast %[[C2]] : i64 to index
// CHECK:         %[[C2B:.*]] = call @shardrt_mesh_coord(%{{.*}}) : (i32) -> i64
// CHECK:         %[[I2B:.*]] = arith.index_cast %[[C2B]] : i64 to index
// CHECK:         %[[RANK:.*]] = call @shardrt_rank() : () -> i32
// CHECK:         %[[LIN:.*]] = arith.index_cast %[[RANK]] : i32 to index
// CHECK:         return %[[I0]], %[[I1]], %[[I2]], %[[I2B]], %[[LIN]]
shard.grid @grid(shape = 2x1x4)
func.func @process_indices() -> (index, index, index, index, index) {
  %0:3 = shard.process_multi_index on @grid : index, index, index
  %1 = shard.process_multi_index on @grid axes = [2] : index
  %2 = shard.process_linear_index on @grid : index
  return %0#0, %0#1, %0#2, %1, %2 : index, index, index, index, index
}

// -----

// Static sizes fold to constants; a dynamic one is asked of the runtime.
// CHECK:       func.func private @shardrt_mesh_axis_size(i32) -> i64
// CHECK-LABEL: func.func @grid_shape
// CHECK:         %[[S0:.*]] = arith.constant 2 : index
// CHECK:         %[[A1:.*]] = arith.constant 1 : i32
// CHECK:         %[[S1:.*]] = call @shardrt_mesh_axis_size(%[[A1]]) : (i32) -> i64
// CHECK:         %[[S1I:.*]] = arith.index_cast %[[S1]] : i64 to index
// CHECK:         %[[S2:.*]] = arith.constant 4 : index
// CHECK:         %[[T:.*]] = arith.constant 4 : index
// CHECK:         return %[[S0]], %[[S1I]], %[[S2]], %[[T]]
shard.grid @grid(shape = 2x?x4)
func.func @grid_shape() -> (index, index, index, index) {
  %0:3 = shard.grid_shape @grid : index, index, index
  %1 = shard.grid_shape @grid axes = [2] : index
  return %0#0, %0#1, %0#2, %1 : index, index, index, index
}

// -----

// On grid 2x4 along axis 1, (i, j) has neighbours i * 4 + j - 1 (or -1 at j = 0)
// and i * 4 + j + 1 (or -1 at j = 3).
// CHECK-LABEL: func.func @neighbors
// CHECK-SAME:    (%[[I:.*]]: index, %[[J:.*]]: index)
// CHECK-DAG:     %[[MINUS1:.*]] = arith.constant -1 : index
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : index
// CHECK:         %[[JD:.*]] = arith.subi %[[J]], %[[ONE]] : index
// CHECK:         %[[ID:.*]] = arith.muli %[[I]], %{{.*}} : index
// CHECK:         %[[LD:.*]] = arith.addi %[[ID]], %[[JD]] : index
// CHECK:         %[[FIRST:.*]] = arith.cmpi sle, %[[J]], %{{.*}} : index
// CHECK:         %[[DOWN:.*]] = arith.select %[[FIRST]], %[[MINUS1]], %[[LD]] : index
// CHECK:         %[[JU:.*]] = arith.addi %[[J]], %{{.*}} : index
// CHECK:         %[[IU:.*]] = arith.muli %[[I]], %{{.*}} : index
// CHECK:         %[[LU:.*]] = arith.addi %[[IU]], %[[JU]] : index
// CHECK:         %[[THREE:.*]] = arith.constant 3 : index
// CHECK:         %[[LAST:.*]] = arith.cmpi sge, %[[J]], %[[THREE]] : index
// CHECK:         %[[UP:.*]] = arith.select %[[LAST]], %[[MINUS1]], %[[LU]] : index
// CHECK:         return %[[DOWN]], %[[UP]]
shard.grid @grid(shape = 2x4)
func.func @neighbors(%i: index, %j: index) -> (index, index) {
  %0:2 = shard.neighbors_linear_indices on @grid[%i, %j] split_axes = [1] : index, index
  return %0#0, %0#1 : index, index
}

// -----

// A grid that something else still refers to stays.
// CHECK:     shard.grid @kept(shape = 2)
// CHECK-NOT: shard.grid @gone
// CHECK-LABEL: func.func @grid_kept() -> index attributes {uses = @kept}
// CHECK:       call @shardrt_rank()
shard.grid @kept(shape = 2)
shard.grid @gone(shape = 2)
func.func @grid_kept() -> index attributes {uses = @kept} {
  %0 = shard.process_linear_index on @gone : index
  return %0 : index
}

// -----

// A global of the name taken: the shape global is renamed.
// CHECK:       memref.global "private" constant @[[NAME:__shardrt_shape_4_8_0]] : memref<2xi64> = dense<[4, 8]>
// CHECK:       memref.global "private" constant @__shardrt_shape_4_8 : memref<1xi64> = dense<7>
// CHECK-LABEL: func.func @shape_global_renamed
// CHECK:         memref.get_global @[[NAME]] : memref<2xi64>
memref.global "private" constant @__shardrt_shape_4_8 : memref<1xi64> = dense<[7]>
shard.grid @grid(shape = 2)
func.func @shape_global_renamed(%x: tensor<4x8xf32>) -> tensor<8x8xf32> {
  %0 = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// A pipeline's send and recv (shardc-pipeline-schedule): the peer's index in the
// group of the grid axes, the op's shardc.transfer as the tag, the byte count.
// CHECK-DAG:   func.func private @shardrt_send(i32, !llvm.ptr, i64, i64, i32)
// CHECK-DAG:   func.func private @shardrt_recv(i32, !llvm.ptr, i64, i64, i32)
// CHECK-LABEL: func.func @send_recv
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-DAG:     %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only
// CHECK-DAG:     %[[INP:.*]] = llvm.inttoptr
// CHECK-DAG:     %[[MASK:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[BYTES:.*]] = arith.constant 128 : i64
// CHECK-DAG:     %[[PEER:.*]] = arith.constant 1 : i64
// CHECK-DAG:     %[[TAG:.*]] = arith.constant 4 : i32
// CHECK:         call @shardrt_send(%[[MASK]], %[[INP]], %[[BYTES]], %[[PEER]], %[[TAG]])
// CHECK:         %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
// CHECK:         %[[OUTP:.*]] = llvm.inttoptr
// CHECK:         call @shardrt_recv(%{{.*}}, %[[OUTP]], %{{.*}}, %{{.*}}, %{{.*}}_i32)
// CHECK:         %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK:         return %[[R]]
shard.grid @grid(shape = 2x4)
func.func @send_recv(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sent = shard.send %x on @grid grid_axes = [0] destination = [1] {shardc.transfer = 4 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %empty = tensor.empty() : tensor<4x8xf32>
  %got = shard.recv %empty on @grid grid_axes = [0] source = [1] {shardc.transfer = 5 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %got : tensor<4x8xf32>
}
