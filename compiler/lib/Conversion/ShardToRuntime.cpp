//===- ShardToRuntime.cpp - lower shard collectives to libshardrt ---------===//
//
// The `shardc-shard-to-runtime` pass. It runs on a module after upstream
// `shard-partition`: tensors have their local (per-rank) static shapes and
// communication is explicit in shard collectives. Every such op becomes a
// call into libshardrt (runtime/include/shardrt/shardrt.h), still at tensor
// level, so that one-shot-bufferize runs afterwards. The runtime creates one
// communicator per mesh-axis subset, once; upstream's convert-shard-to-mpi
// instead splits a new communicator at every call and lowers only all_reduce.
//
// The algorithm:
//  1. Reject, with an error at the op, every shard op this pass cannot lower
//     (shard.shard, shard.sharding, broadcast, send/recv, ...): they must not
//     survive partition.
//  2. For each collective (all_reduce, all_gather, reduce_scatter, all_to_all)
//     on f32 or i32 tensors of static shape:
//     a. bufferization.to_buffer (read_only) of the input and memref.alloc of
//        the output, both with the identity layout: the runtime wants dense
//        row-major data, and one-shot-bufferize copies the input into a dense
//        buffer when its buffer is a strided view;
//     b. pointers by memref.extract_aligned_pointer_as_index, index_cast and
//        llvm.inttoptr (an identity layout has offset 0, so the aligned
//        pointer is the first element);
//     c. the local shape, where the runtime needs one, as a private constant
//        memref.global of i64 (one per distinct shape; globals rather than
//        allocas so that a collective inside a loop does not grow the stack);
//     d. a func.call of the runtime function with the axis bitmask (bit i =
//        grid axis i), then bufferization.to_tensor restrict writable of the
//        output buffer replaces the op's result.
//     The runtime orders a group by its axes in mesh order; shard orders it by
//     the op's grid_axes. When grid_axes is not ascending, the blocks along
//     the gathered / scattered / split / concatenated dimension are permuted
//     at tensor level (expand_shape, linalg.transpose, collapse_shape) from
//     one order into the other; all_reduce does not depend on the order.
//  3. all_slice needs no communication: the rank's index in its group
//     (shardrt_group_index, or mesh coordinates linearised in grid_axes
//     order) times the result size gives the offset of a tensor.extract_slice.
//  4. process_multi_index -> shardrt_mesh_coord per axis (0 for axes of size
//     1); process_linear_index -> shardrt_rank; grid_shape -> constants, or
//     shardrt_mesh_axis_size for dynamic axes; neighbors_linear_indices with
//     one split axis -> index arithmetic.
//  5. send / recv (a pipeline's activations, shardc-pipeline-schedule) ->
//     shardrt_send / shardrt_recv with the peer's index in the group of
//     grid_axes and the op's `shardc.transfer` as the message tag.
//  6. Erase the shard.grid ops that nothing refers to any more.
//
// Runtime functions are declared on first use as private func.func with
// !llvm.ptr / i32 / i64 arguments matching the C ABI.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "shardc/Conversion/Passes.h"
#include "shardc/IR/Attributes.h"
#include "shardc/IR/FirstReader.h"
#include "shardrt/scratch_regions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "shardc-shard-to-runtime"

namespace shardc {
#define GEN_PASS_DEF_SHARDTORUNTIMEPASS
#include "shardc/Conversion/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using shardc::conversion_detail::getElementPointer;
using shardc::conversion_detail::RuntimeFunctions;

namespace {

// Values of shardrt_reduction (shardrt.h).
enum RuntimeReduction : int32_t {
  kSum = 0,
  kMax = 1,
  kMin = 2,
  kProduct = 3,
};

/// Builds the runtime calls of one module: declares runtime functions and
/// shape globals once, caching them by name.
class RuntimeLowering {
public:
  RuntimeLowering(ModuleOp module)
      : module(module), symbolTable(module), ctx(module.getContext()), runtime(module) {}

  LogicalResult lower(shard::AllReduceOp op);
  LogicalResult lower(shard::AllGatherOp op);
  LogicalResult lower(shard::ReduceScatterOp op);
  LogicalResult lower(shard::AllToAllOp op);
  LogicalResult lower(shard::AllSliceOp op);
  LogicalResult lower(shard::ProcessMultiIndexOp op);
  LogicalResult lower(shard::ProcessLinearIndexOp op);
  LogicalResult lower(shard::GridShapeOp op);
  LogicalResult lower(shard::NeighborsLinearIndicesOp op);
  LogicalResult lower(shard::SendOp op);
  LogicalResult lower(shard::RecvOp op);

  /// Moves the waits of the sums that private functions return unread into
  /// their callers (after every op is lowered).
  void waitInCallers(func::FuncOp wait);
  /// Calls the runtime's progress before each large loop nest.
  void progressBeforeLoops();

private:
  /// What every collective (and all_slice) needs, checked.
  struct CollectiveOperands {
    shard::GridOp grid;
    uint32_t mask;
    RankedTensorType inType, outType;
  };

  /// Records that a blocking collective takes `regions` of the runtime's
  /// scratch buffer (shardrt/scratch_regions.h).
  template <size_t N> void needScratch(const shardrt::ScratchRegions<N> &regions) {
    shardc::conversion_detail::needScratch(module, int64_t(shardrt::scratchBytes(regions)));
  }

  /// A gradient's or a parameter's collective `op` on `input`, started by runtime function
  /// `start` (the collective's arguments: mask, in, out, then the tail's) and
  /// waited for apart.
  LogicalResult lowerInFlight(Operation *op, StringRef start, const CollectiveOperands &c,
                              Value input, ArrayRef<Type> tailTypes,
                              function_ref<SmallVector<Value>()> tailArgs);

  /// The runtime call `name` (shardrt_send, shardrt_recv) of point-to-point `op`.
  template <typename OpT>
  LogicalResult callPointToPoint(OpT op, StringRef name, const CollectiveOperands &c,
                                 ArrayRef<int64_t> peer, Value pointer, OpBuilder &b);

  struct ReturnedSum {
    Value handle;
    unsigned result; // the function's result that is the sum
  };
  llvm::MapVector<func::FuncOp, SmallVector<ReturnedSum>> returnedSums;

  /// The grid of `op` and its axes, checked; the axis bitmask in `mask`.
  FailureOr<shard::GridOp> checkGridAxes(Operation *op, FlatSymbolRefAttr gridSym,
                                         ArrayRef<shard::GridAxis> axes, bool needStaticOrderSizes,
                                         uint32_t &mask);
  /// The element suffix ("f32"/"i32") of `t`, or an error at `op`.
  FailureOr<StringRef> elementSuffix(Operation *op, Type t);
  /// Checks that `v` is a ranked tensor of static shape.
  FailureOr<RankedTensorType> staticTensor(Operation *op, Value v, StringRef what);

  /// Checks the grid axes of collective `op` and that its input and result
  /// are tensors of static shape.
  template <typename OpT>
  FailureOr<CollectiveOperands> checkOperands(OpT op, bool needStaticOrderSizes);
  /// The element suffix of a collective; one that `reduces` must not change
  /// the element type.
  FailureOr<StringRef> collectiveSuffix(Operation *op, const CollectiveOperands &c, bool reduces);

  Value call(OpBuilder &b, Location loc, func::FuncOp fn, ValueRange args);

  /// Declares collective function `name`: the axis mask, the input and
  /// output pointers, then `tailTypes`; returning `results`.
  func::FuncOp declareCollective(Operation *op, const Twine &name, ArrayRef<Type> tailTypes,
                                 ArrayRef<Type> results = {});
  /// The call of collective `fn` on a read-only buffer of `input` and a fresh
  /// one of the result type (`buffer`, its pointer `out`), then what
  /// `tailArgs` builds.
  func::CallOp emitCollectiveCall(OpBuilder &b, Location loc, func::FuncOp fn,
                                  const CollectiveOperands &c, Value input,
                                  function_ref<SmallVector<Value>()> tailArgs, Value &buffer,
                                  Value &out);
  /// emitCollectiveCall, then the output buffer as a tensor.
  Value callCollective(OpBuilder &b, Location loc, func::FuncOp fn, const CollectiveOperands &c,
                       Value input, function_ref<SmallVector<Value>()> tailArgs);
  /// Lowers a query with one index result per grid axis in `queried` (all
  /// axes when empty): the constant `known` gives for the axis size, else a
  /// call of runtime function `name` on the axis.
  LogicalResult lowerAxisQuery(Operation *op, FlatSymbolRefAttr gridSym,
                               ArrayRef<shard::GridAxis> queried, StringRef name,
                               function_ref<std::optional<int64_t>(int64_t size)> known);

  Value i32(OpBuilder &b, Location loc, int64_t v);
  Value i64(OpBuilder &b, Location loc, int64_t v);
  /// Read-only dense buffer of tensor `t` as a pointer.
  Value inputPointer(OpBuilder &b, Location loc, Value t);
  /// A fresh dense buffer of type `t`; its pointer in `ptr`.
  Value allocOutput(OpBuilder &b, Location loc, RankedTensorType t, Value &ptr);
  /// Pointer to a constant i64 array holding `shape`.
  Value shapePointer(OpBuilder &b, Location loc, ArrayRef<int64_t> shape);
  /// Checks that dimension `dim` of `t` splits into one block per rank of
  /// the group of `axes` (release builds of the shard verifier do not).
  LogicalResult checkBlocks(Operation *op, RankedTensorType t, int64_t dim,
                            ArrayRef<shard::GridAxis> axes, shard::GridOp grid);
  /// Permutes the blocks of `t` along `dim` from a group order by `from` axes
  /// to one by `to` axes (same axes, different order).
  Value permuteBlocks(OpBuilder &b, Location loc, Value t, int64_t dim,
                      ArrayRef<shard::GridAxis> from, ArrayRef<shard::GridAxis> to,
                      shard::GridOp grid);

  ModuleOp module;
  SymbolTable symbolTable;
  // Grid lookups, cached across ops.
  SymbolTableCollection symbolTables;
  MLIRContext *ctx;
  // Declarations and globals go to the top of the module, in order of use.
  RuntimeFunctions runtime;
  llvm::StringMap<memref::GlobalOp> shapeGlobals;
};

} // namespace

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// A tensor type viewed around dimension `dim`, and the bytes of its elements:
/// what the runtime's scratch regions of a collective depend on.
static shardrt::DimView viewAround(RankedTensorType type, int64_t dim) {
  return shardrt::viewOf(int(type.getRank()), type.getShape().data(), int(dim));
}

static size_t elementBytes(RankedTensorType type) {
  return size_t(type.getElementTypeBitWidth() / 8);
}

static bool isAscending(ArrayRef<shard::GridAxis> axes) {
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i - 1] >= axes[i])
      return false;
  return true;
}

static SmallVector<shard::GridAxis> sortedAxes(ArrayRef<shard::GridAxis> axes) {
  SmallVector<shard::GridAxis> s(axes.begin(), axes.end());
  llvm::sort(s);
  return s;
}

static FailureOr<int32_t> runtimeReduction(Operation *op, shard::ReductionKind kind) {
  switch (kind) {
  case shard::ReductionKind::Sum:
    return int32_t(kSum);
  case shard::ReductionKind::Max:
    return int32_t(kMax);
  case shard::ReductionKind::Min:
    return int32_t(kMin);
  case shard::ReductionKind::Product:
    return int32_t(kProduct);
  default:
    return op->emitOpError("reduction '")
           << shard::stringifyReductionKind(kind)
           << "' is not supported by libshardrt (sum, max, min, product)";
  }
}

FailureOr<shard::GridOp> RuntimeLowering::checkGridAxes(Operation *op, FlatSymbolRefAttr gridSym,
                                                        ArrayRef<shard::GridAxis> axes,
                                                        bool needStaticOrderSizes, uint32_t &mask) {
  shard::GridOp grid = shard::getGridOrNull(op, gridSym, symbolTables);
  if (!grid)
    return op->emitOpError("refers to an unknown grid ") << gridSym;
  if (grid.getRank() > 32)
    return op->emitOpError("grid has ")
           << grid.getRank() << " axes; libshardrt supports at most 32";
  mask = 0;
  for (shard::GridAxis a : axes) {
    if (a < 0 || a >= grid.getRank())
      return op->emitOpError("grid axis ") << a << " is out of range for grid " << gridSym;
    if (mask & (1u << a))
      return op->emitOpError("grid axis ") << a << " appears twice";
    mask |= 1u << a;
  }
  // Reordering blocks between shard's and the runtime's group order needs
  // the sizes of the axes.
  if (needStaticOrderSizes && !isAscending(axes))
    for (shard::GridAxis a : axes)
      if (ShapedType::isDynamic(grid.getShape()[a]))
        return op->emitOpError("grid_axes are not in ascending order and grid "
                               "axis ")
               << a << " has a dynamic size; cannot reorder the group";
  return grid;
}

FailureOr<StringRef> RuntimeLowering::elementSuffix(Operation *op, Type t) {
  if (t.isF32())
    return StringRef("f32");
  if (t.isSignlessInteger(32))
    return StringRef("i32");
  return op->emitOpError("element type ") << t << " is not supported by libshardrt (f32 or i32)";
}

FailureOr<RankedTensorType> RuntimeLowering::staticTensor(Operation *op, Value v, StringRef what) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t)
    return op->emitOpError(what) << " must be a ranked tensor (run before bufferization), got "
                                 << v.getType();
  if (!t.hasStaticShape())
    return op->emitOpError(what) << " must have a static shape, got " << t;
  return t;
}

Value RuntimeLowering::call(OpBuilder &b, Location loc, func::FuncOp fn, ValueRange args) {
  auto op = func::CallOp::create(b, loc, fn, args);
  return op.getNumResults() ? op.getResult(0) : Value();
}

Value RuntimeLowering::i32(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 32);
}

Value RuntimeLowering::i64(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 64);
}

Value RuntimeLowering::inputPointer(OpBuilder &b, Location loc, Value t) {
  auto type = cast<RankedTensorType>(t.getType());
  auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
  Value buffer = bufferization::ToBufferOp::create(b, loc, memrefType, t,
                                                   /*read_only=*/true);
  return getElementPointer(b, loc, buffer);
}

Value RuntimeLowering::allocOutput(OpBuilder &b, Location loc, RankedTensorType t, Value &ptr) {
  auto memrefType = MemRefType::get(t.getShape(), t.getElementType());
  // 64-byte alignment as one-shot-bufferize's own allocations.
  Value buffer = memref::AllocOp::create(b, loc, memrefType, b.getI64IntegerAttr(64));
  ptr = getElementPointer(b, loc, buffer);
  return buffer;
}

Value RuntimeLowering::shapePointer(OpBuilder &b, Location loc, ArrayRef<int64_t> shape) {
  std::string name = "__shardrt_shape";
  for (int64_t d : shape)
    name += "_" + std::to_string(d);
  auto type = MemRefType::get({int64_t(shape.size())}, b.getI64Type());
  memref::GlobalOp global = shapeGlobals.lookup(name);
  if (!global) {
    OpBuilder &declBuilder = runtime.declarationBuilder();
    auto tensorType = RankedTensorType::get({int64_t(shape.size())}, b.getI64Type());
    global = memref::GlobalOp::create(declBuilder, module.getLoc(), declBuilder.getStringAttr(name),
                                      declBuilder.getStringAttr("private"), TypeAttr::get(type),
                                      DenseIntElementsAttr::get(tensorType, shape),
                                      declBuilder.getUnitAttr(), declBuilder.getI64IntegerAttr(8));
    declBuilder.setInsertionPointAfter(global);
    // Renames the global if the name is taken.
    symbolTable.insert(global, Block::iterator(global));
    shapeGlobals[name] = global;
  }
  Value ref = memref::GetGlobalOp::create(b, loc, type, global.getSymNameAttr().getValue());
  return getElementPointer(b, loc, ref);
}

LogicalResult RuntimeLowering::checkBlocks(Operation *op, RankedTensorType t, int64_t dim,
                                           ArrayRef<shard::GridAxis> axes, shard::GridOp grid) {
  int64_t groupSize = shard::collectiveProcessGroupSize(axes, grid);
  if (dim < 0 || dim >= t.getRank())
    return op->emitOpError("dimension ") << dim << " is out of range for " << t;
  if (!ShapedType::isDynamic(groupSize) && t.getDimSize(dim) % groupSize != 0)
    return op->emitOpError("dimension ") << dim << " of " << t << " does not divide into "
                                         << groupSize << " blocks, one per rank of the group";
  return success();
}

Value RuntimeLowering::permuteBlocks(OpBuilder &b, Location loc, Value t, int64_t dim,
                                     ArrayRef<shard::GridAxis> from, ArrayRef<shard::GridAxis> to,
                                     shard::GridOp grid) {
  auto type = cast<RankedTensorType>(t.getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t groupSize = shard::collectiveProcessGroupSize(from, grid);
  int64_t k = from.size();

  // Expand `dim` into one dimension per axis (in `from` order) and the block.
  SmallVector<int64_t> expanded;
  SmallVector<ReassociationIndices> reassociation;
  for (int64_t i = 0, e = shape.size(); i < e; ++i) {
    ReassociationIndices group;
    if (i == dim) {
      for (shard::GridAxis a : from) {
        group.push_back(expanded.size());
        expanded.push_back(grid.getShape()[a]);
      }
      group.push_back(expanded.size());
      expanded.push_back(shape[i] / groupSize);
    } else {
      group.push_back(expanded.size());
      expanded.push_back(shape[i]);
    }
    reassociation.push_back(group);
  }
  auto expandedType = RankedTensorType::get(expanded, type.getElementType());
  Value v = tensor::ExpandShapeOp::create(b, loc, expandedType, t, reassociation);

  // Result axis dimension j holds the axis to[j], found in `from` at
  // position p: transposed dim (dim + j) = expanded dim (dim + p).
  SmallVector<int64_t> perm;
  for (int64_t i = 0, e = expanded.size(); i < e; ++i)
    perm.push_back(i);
  for (int64_t j = 0; j < k; ++j) {
    auto it = llvm::find(from, to[j]);
    perm[dim + j] = dim + (it - from.begin());
  }
  SmallVector<int64_t> transposed;
  for (int64_t p : perm)
    transposed.push_back(expanded[p]);
  Value init = tensor::EmptyOp::create(b, loc, transposed, type.getElementType());
  v = linalg::TransposeOp::create(b, loc, v, init, perm)->getResult(0);
  return tensor::CollapseShapeOp::create(b, loc, type, v, reassociation);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

static LogicalResult replaceOp(Operation *op, ValueRange values) {
  op->replaceAllUsesWith(values);
  op->erase();
  return success();
}

template <typename OpT>
FailureOr<RuntimeLowering::CollectiveOperands>
RuntimeLowering::checkOperands(OpT op, bool needStaticOrderSizes) {
  CollectiveOperands c;
  auto grid = checkGridAxes(op, op.getGridAttr(), op.getGridAxes(), needStaticOrderSizes, c.mask);
  if (failed(grid))
    return failure();
  c.grid = *grid;
  auto inType = staticTensor(op, op.getInput(), "input");
  if (failed(inType))
    return failure();
  c.inType = *inType;
  auto outType = staticTensor(op, op.getResult(), "result");
  if (failed(outType))
    return failure();
  c.outType = *outType;
  return c;
}

FailureOr<StringRef> RuntimeLowering::collectiveSuffix(Operation *op, const CollectiveOperands &c,
                                                       bool reduces) {
  if (reduces && c.inType.getElementType() != c.outType.getElementType())
    return op->emitOpError("converts ")
           << c.inType.getElementType() << " to " << c.outType.getElementType()
           << "; libshardrt reduces in the input's element type only";
  return elementSuffix(op, c.inType.getElementType());
}

/// Whether reduction `op` of `suffix` elements sums a parameter's gradient
/// (kGradientSyncAttr): the runtime's gradient entries take it, started and
/// waited for apart (--overlap-gradients), sent in bfloat16 under
/// --reduce-precision bf16.
static bool reducesGradient(Operation *op, StringRef suffix) {
  return op->hasAttr(shardc::kGradientSyncAttr) && suffix == "f32";
}

/// Whether gather `op` of `suffix` elements is a parameter's (FSDP's, kRegatherAttr):
/// started and waited for apart (--prefetch-weights), as shardc-prefetch-gathers
/// placed it.
static bool gathersParameter(Operation *op, StringRef suffix) {
  return op->hasAttr(shardc::kRegatherAttr) && suffix == "f32";
}

func::FuncOp RuntimeLowering::declareCollective(Operation *op, const Twine &name,
                                                ArrayRef<Type> tailTypes, ArrayRef<Type> results) {
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  SmallVector<Type> args = {IntegerType::get(ctx, 32), ptr, ptr};
  llvm::append_range(args, tailTypes);
  return runtime.getOrDeclare(op, name.str(), args, results);
}

func::CallOp RuntimeLowering::emitCollectiveCall(OpBuilder &b, Location loc, func::FuncOp fn,
                                                 const CollectiveOperands &c, Value input,
                                                 function_ref<SmallVector<Value>()> tailArgs,
                                                 Value &buffer, Value &out) {
  Value in = inputPointer(b, loc, input);
  buffer = allocOutput(b, loc, c.outType, out);
  SmallVector<Value> args = {i32(b, loc, c.mask), in, out};
  llvm::append_range(args, tailArgs());
  return func::CallOp::create(b, loc, fn, args);
}

Value RuntimeLowering::callCollective(OpBuilder &b, Location loc, func::FuncOp fn,
                                      const CollectiveOperands &c, Value input,
                                      function_ref<SmallVector<Value>()> tailArgs) {
  Value buffer, out;
  emitCollectiveCall(b, loc, fn, c, input, tailArgs, buffer, out);
  return bufferization::ToTensorOp::create(b, loc, c.outType, buffer, b.getUnitAttr(),
                                           b.getUnitAttr());
}

LogicalResult RuntimeLowering::lower(shard::AllReduceOp op) {
  auto c = checkOperands(op, /*needStaticOrderSizes=*/false);
  if (failed(c))
    return failure();
  auto suffix = collectiveSuffix(op, *c, /*reduces=*/true);
  if (failed(suffix))
    return failure();
  auto reduction = runtimeReduction(op, op.getReduction());
  if (failed(reduction))
    return failure();

  OpBuilder b(op);
  Location loc = op.getLoc();
  if (reducesGradient(op, *suffix))
    return lowerInFlight(op, "shardrt_all_reduce_gradient_start_f32", *c, op.getInput(),
                         {b.getI64Type(), b.getI32Type()}, [&] {
                           return SmallVector<Value>{i64(b, loc, c->outType.getNumElements()),
                                                     i32(b, loc, *reduction)};
                         });
  func::FuncOp fn =
      declareCollective(op, "shardrt_all_reduce_" + *suffix, {b.getI64Type(), b.getI32Type()});
  if (!fn)
    return failure();
  // The group is a set: the result does not depend on grid_axes' order.
  // Out of place although the runtime allows in == out: a writing to_buffer
  // of the input is Pure, so CSE would merge two all_reduces of one tensor.
  Value result = callCollective(b, loc, fn, *c, op.getInput(), [&] {
    return SmallVector<Value>{i64(b, loc, c->outType.getNumElements()), i32(b, loc, *reduction)};
  });
  return replaceOp(op, result);
}

// A gradient's all_reduce or reduce_scatter, or a parameter's all_gather,
// starts where it is and waits just before the first op of its block that
// reads the result (the terminator where none does): the ops between, the rest
// of the backward pass or the op of the weight before (shardc-prefetch-gathers),
// run while it travels (--overlap-gradients, --prefetch-weights; without them
// the start completes at once). The runtime copies the input before the start returns; the output
// buffer is allocated at the start and named by the wait, so that it stays in
// use until then.
LogicalResult RuntimeLowering::lowerInFlight(Operation *op, StringRef start,
                                             const CollectiveOperands &c, Value input,
                                             ArrayRef<Type> tailTypes,
                                             function_ref<SmallVector<Value>()> tailArgs) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  func::FuncOp startFn = declareCollective(op, start, tailTypes, {b.getI64Type()});
  func::FuncOp wait = runtime.getOrDeclare(op, "shardrt_wait",
                                           {b.getI64Type(), LLVM::LLVMPointerType::get(ctx)}, {});
  if (!startFn || !wait)
    return failure();
  Value buffer, out;
  Value handle = emitCollectiveCall(b, loc, startFn, c, input, tailArgs, buffer, out).getResult(0);
  Value result = op->getResult(0);
  Operation *firstReader = shardc::firstReaderInBlock(result, op->getBlock());
  b.setInsertionPoint(firstReader);
  auto fn = op->getParentOfType<func::FuncOp>();
  auto returned = llvm::find(firstReader->getOperands(), result);
  if (isa<func::ReturnOp>(firstReader) && fn.isPrivate() && returned != firstReader->operand_end())
    returnedSums[fn].push_back({handle, unsigned(returned - firstReader->operand_begin())});
  else
    call(b, loc, wait, {handle, out});
  Value waited = bufferization::ToTensorOp::create(b, loc, c.outType, buffer, b.getUnitAttr(),
                                                   b.getUnitAttr());
  return replaceOp(op, waited);
}

void RuntimeLowering::progressBeforeLoops() {
  SmallVector<linalg::LinalgOp> loops;
  module.walk([&](linalg::LinalgOp op) {
    if (!isa<func::FuncOp>(op->getParentOp()))
      return;
    for (Value v : op->getOperands())
      if (auto t = dyn_cast<RankedTensorType>(v.getType());
          t && t.hasStaticShape() && t.getNumElements() >= (1 << 16)) {
        loops.push_back(op);
        return;
      }
  });
  if (loops.empty())
    return;
  func::FuncOp progress = runtime.getOrDeclare(loops.front(), "shardrt_progress_gradients", {}, {});
  for (linalg::LinalgOp op : loops) {
    OpBuilder b(op);
    func::CallOp::create(b, op.getLoc(), progress, ValueRange{});
  }
}

// A function (a scan layer's backward pass) that returns a gradient's sum
// unread returns its reduction's handle too, and each call waits for it just
// before the first reader of that result: the reduction then runs on through
// the later layers' backward passes. Buffer-results-to-out-params makes the
// sum's buffer one that the caller allocates, which the wait names (the
// runtime checks that it is the buffer the start was given).
void RuntimeLowering::waitInCallers(func::FuncOp wait) {
  for (auto &[fn, sums] : returnedSums) {
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    unsigned before = ret.getNumOperands();
    for (const ReturnedSum &sum : sums)
      ret->insertOperands(ret.getNumOperands(), sum.handle);
    fn.setType(FunctionType::get(ctx, fn.getArgumentTypes(), ret.getOperandTypes()));
    SmallVector<func::CallOp> calls;
    module.walk([&](func::CallOp call) {
      if (call.getCallee() == fn.getSymName())
        calls.push_back(call);
    });
    for (func::CallOp old : calls) {
      OpBuilder b(old);
      auto call = func::CallOp::create(b, old.getLoc(), fn, old.getOperands());
      call->setAttrs(old->getAttrs());
      old->replaceAllUsesWith(call->getResults().take_front(before));
      old->erase();
      for (auto [i, sum] : llvm::enumerate(sums)) {
        Value result = call.getResult(sum.result);
        b.setInsertionPoint(shardc::firstReaderInBlock(result, call->getBlock()));
        Location loc = call.getLoc();
        func::CallOp::create(b, loc, wait,
                             ValueRange{call.getResult(before + i), inputPointer(b, loc, result)});
      }
    }
  }
}

LogicalResult RuntimeLowering::lower(shard::AllGatherOp op) {
  auto c = checkOperands(op, /*needStaticOrderSizes=*/true);
  if (failed(c))
    return failure();
  auto suffix = collectiveSuffix(op, *c, /*reduces=*/false);
  if (failed(suffix))
    return failure();
  int64_t dim = op.getGatherAxis().getSExtValue();
  ArrayRef<shard::GridAxis> axes = op.getGridAxes();
  if (failed(checkBlocks(op, c->outType, dim, axes, c->grid)))
    return failure();

  OpBuilder b(op);
  Location loc = op.getLoc();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  SmallVector<Type> tailTypes = {b.getI32Type(), ptr, b.getI32Type()};
  auto tailArgs = [&] {
    return SmallVector<Value>{i32(b, loc, c->inType.getRank()),
                              shapePointer(b, loc, c->inType.getShape()), i32(b, loc, dim)};
  };
  needScratch(shardrt::allGatherRegions(viewAround(c->inType, dim), elementBytes(c->inType),
                                        shard::collectiveProcessGroupSize(axes, c->grid)));
  if (gathersParameter(op, *suffix) && isAscending(axes))
    return lowerInFlight(op, "shardrt_all_gather_start_f32", *c, op.getInput(), tailTypes,
                         tailArgs);
  func::FuncOp fn = declareCollective(op, "shardrt_all_gather_" + *suffix, tailTypes);
  if (!fn)
    return failure();
  Value result = callCollective(b, loc, fn, *c, op.getInput(), tailArgs);
  if (!isAscending(axes))
    result = permuteBlocks(b, loc, result, dim, sortedAxes(axes), axes, c->grid);
  return replaceOp(op, result);
}

LogicalResult RuntimeLowering::lower(shard::ReduceScatterOp op) {
  auto c = checkOperands(op, /*needStaticOrderSizes=*/true);
  if (failed(c))
    return failure();
  auto suffix = collectiveSuffix(op, *c, /*reduces=*/true);
  if (failed(suffix))
    return failure();
  auto reduction = runtimeReduction(op, op.getReduction());
  if (failed(reduction))
    return failure();
  int64_t dim = op.getScatterAxis().getSExtValue();
  ArrayRef<shard::GridAxis> axes = op.getGridAxes();
  if (failed(checkBlocks(op, c->inType, dim, axes, c->grid)))
    return failure();

  OpBuilder b(op);
  Location loc = op.getLoc();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  SmallVector<Type> tailTypes = {b.getI32Type(), ptr, b.getI32Type(), b.getI32Type()};
  auto tailArgs = [&] {
    return SmallVector<Value>{i32(b, loc, c->inType.getRank()),
                              shapePointer(b, loc, c->inType.getShape()), i32(b, loc, dim),
                              i32(b, loc, *reduction)};
  };
  needScratch(shardrt::reduceScatterRegions(viewAround(c->inType, dim), elementBytes(c->inType),
                                            shard::collectiveProcessGroupSize(axes, c->grid),
                                            shardrt::kDefaultRingMinBytes));
  // Put block g (shard's group order) where the runtime sends it to the
  // rank of that index in mesh order.
  Value input = op.getInput();
  if (!isAscending(axes))
    input = permuteBlocks(b, loc, input, dim, axes, sortedAxes(axes), c->grid);
  if (reducesGradient(op, *suffix))
    return lowerInFlight(op, "shardrt_reduce_scatter_gradient_start_f32", *c, input, tailTypes,
                         tailArgs);
  func::FuncOp fn = declareCollective(op, "shardrt_reduce_scatter_" + *suffix, tailTypes);
  if (!fn)
    return failure();
  return replaceOp(op, callCollective(b, loc, fn, *c, input, tailArgs));
}

LogicalResult RuntimeLowering::lower(shard::AllToAllOp op) {
  auto c = checkOperands(op, /*needStaticOrderSizes=*/true);
  if (failed(c))
    return failure();
  auto suffix = collectiveSuffix(op, *c, /*reduces=*/false);
  if (failed(suffix))
    return failure();
  int64_t splitDim = op.getSplitAxis().getSExtValue();
  int64_t concatDim = op.getConcatAxis().getSExtValue();
  ArrayRef<shard::GridAxis> axes = op.getGridAxes();
  if (failed(checkBlocks(op, c->inType, splitDim, axes, c->grid)) ||
      failed(checkBlocks(op, c->outType, concatDim, axes, c->grid)))
    return failure();

  OpBuilder b(op);
  Location loc = op.getLoc();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  func::FuncOp fn = declareCollective(op, "shardrt_all_to_all_" + *suffix,
                                      {b.getI32Type(), ptr, b.getI32Type(), b.getI32Type()});
  if (!fn)
    return failure();
  const int64_t ranks = shard::collectiveProcessGroupSize(axes, c->grid);
  needScratch(
      shardrt::allToAllRegions(viewAround(c->inType, splitDim),
                               shardrt::receivedBlocks(viewAround(c->inType, concatDim),
                                                       int(splitDim), int(concatDim), ranks),
                               elementBytes(c->inType), ranks));
  bool reorder = !isAscending(axes);
  SmallVector<shard::GridAxis> sorted = sortedAxes(axes);
  // Blocks are sent by receiver index and received by sender index: reorder
  // both between shard's and the runtime's group order.
  Value input = op.getInput();
  if (reorder)
    input = permuteBlocks(b, loc, input, splitDim, axes, sorted, c->grid);
  Value result = callCollective(b, loc, fn, *c, input, [&] {
    return SmallVector<Value>{i32(b, loc, c->inType.getRank()),
                              shapePointer(b, loc, c->inType.getShape()), i32(b, loc, splitDim),
                              i32(b, loc, concatDim)};
  });
  if (reorder)
    result = permuteBlocks(b, loc, result, concatDim, sorted, axes, c->grid);
  return replaceOp(op, result);
}

//===----------------------------------------------------------------------===//
// Index computations
//===----------------------------------------------------------------------===//

LogicalResult RuntimeLowering::lower(shard::AllSliceOp op) {
  auto c = checkOperands(op, /*needStaticOrderSizes=*/true);
  if (failed(c))
    return failure();
  int64_t dim = op.getSliceAxis().getSExtValue();
  ArrayRef<shard::GridAxis> axes = op.getGridAxes();
  if (failed(checkBlocks(op, c->inType, dim, axes, c->grid)))
    return failure();

  OpBuilder b(op);
  Location loc = op.getLoc();
  Type indexType = b.getIndexType();
  Value groupIndex;
  if (isAscending(axes)) {
    // The runtime's group index is the same linearisation.
    func::FuncOp fn =
        runtime.getOrDeclare(op, "shardrt_group_index", {b.getI32Type()}, {b.getI64Type()});
    if (!fn)
      return failure();
    Value idx = call(b, loc, fn, {i32(b, loc, c->mask)});
    groupIndex = arith::IndexCastOp::create(b, loc, indexType, idx);
  } else {
    // Linearise the mesh coordinates in grid_axes order.
    func::FuncOp fn =
        runtime.getOrDeclare(op, "shardrt_mesh_coord", {b.getI32Type()}, {b.getI64Type()});
    if (!fn)
      return failure();
    Value acc;
    for (shard::GridAxis a : axes) {
      Value coord = call(b, loc, fn, {i32(b, loc, a)});
      if (!acc) {
        acc = coord;
        continue;
      }
      acc = arith::MulIOp::create(b, loc, acc, i64(b, loc, c->grid.getShape()[a]));
      acc = arith::AddIOp::create(b, loc, acc, coord);
    }
    groupIndex = arith::IndexCastOp::create(b, loc, indexType, acc);
  }
  Value blockSize = arith::ConstantIndexOp::create(b, loc, c->outType.getDimSize(dim));
  Value offset = arith::MulIOp::create(b, loc, groupIndex, blockSize);

  SmallVector<OpFoldResult> offsets(c->inType.getRank(), b.getIndexAttr(0));
  offsets[dim] = offset;
  SmallVector<OpFoldResult> sizes;
  for (int64_t d : c->outType.getShape())
    sizes.push_back(b.getIndexAttr(d));
  SmallVector<OpFoldResult> strides(c->inType.getRank(), b.getIndexAttr(1));
  Value slice =
      tensor::ExtractSliceOp::create(b, loc, c->outType, op.getInput(), offsets, sizes, strides);
  return replaceOp(op, slice);
}

LogicalResult
RuntimeLowering::lowerAxisQuery(Operation *op, FlatSymbolRefAttr gridSym,
                                ArrayRef<shard::GridAxis> queried, StringRef name,
                                function_ref<std::optional<int64_t>(int64_t size)> known) {
  uint32_t mask;
  auto grid = checkGridAxes(op, gridSym, queried,
                            /*needStaticOrderSizes=*/false, mask);
  if (failed(grid))
    return failure();
  SmallVector<shard::GridAxis> axes(queried);
  if (axes.empty())
    for (int64_t a = 0; a < grid->getRank(); ++a)
      axes.push_back(a);
  if (axes.size() != op->getNumResults())
    return op->emitOpError("has ")
           << op->getNumResults() << " results for " << axes.size() << " grid axes";

  OpBuilder b(op);
  Location loc = op->getLoc();
  SmallVector<Value> results;
  for (shard::GridAxis a : axes) {
    if (std::optional<int64_t> v = known(grid->getShape()[a])) {
      results.push_back(arith::ConstantIndexOp::create(b, loc, *v));
      continue;
    }
    func::FuncOp fn = runtime.getOrDeclare(op, name, {b.getI32Type()}, {b.getI64Type()});
    if (!fn)
      return failure();
    Value v = call(b, loc, fn, {i32(b, loc, a)});
    results.push_back(arith::IndexCastOp::create(b, loc, b.getIndexType(), v));
  }
  return replaceOp(op, results);
}

LogicalResult RuntimeLowering::lower(shard::ProcessMultiIndexOp op) {
  // A coordinate on an axis of size 1 is 0; no call needed.
  return lowerAxisQuery(op, op.getGridAttr(), op.getAxes(), "shardrt_mesh_coord",
                        [](int64_t size) -> std::optional<int64_t> {
                          if (size != 1)
                            return std::nullopt;
                          return 0;
                        });
}

LogicalResult RuntimeLowering::lower(shard::ProcessLinearIndexOp op) {
  uint32_t mask;
  if (failed(checkGridAxes(op, op.getGridAttr(), {},
                           /*needStaticOrderSizes=*/false, mask)))
    return failure();
  OpBuilder b(op);
  Location loc = op.getLoc();
  // The mesh is row-major over MPI_COMM_WORLD: the rank is the linear index.
  func::FuncOp fn = runtime.getOrDeclare(op, "shardrt_rank", {}, {b.getI32Type()});
  if (!fn)
    return failure();
  Value rank = call(b, loc, fn, {});
  Value result = arith::IndexCastOp::create(b, loc, b.getIndexType(), rank);
  return replaceOp(op, result);
}

LogicalResult RuntimeLowering::lower(shard::GridShapeOp op) {
  return lowerAxisQuery(op, op.getGridAttr(), op.getAxes(), "shardrt_mesh_axis_size",
                        [](int64_t size) -> std::optional<int64_t> {
                          if (ShapedType::isDynamic(size))
                            return std::nullopt;
                          return size;
                        });
}

LogicalResult RuntimeLowering::lower(shard::NeighborsLinearIndicesOp op) {
  uint32_t mask;
  auto grid = checkGridAxes(op, op.getGridAttr(), op.getSplitAxes(),
                            /*needStaticOrderSizes=*/false, mask);
  if (failed(grid))
    return failure();
  if (op.getSplitAxes().size() != 1)
    return op.emitOpError("with ")
           << op.getSplitAxes().size() << " split axes is not supported (exactly one)";
  ArrayRef<int64_t> shape = grid->getShape();
  if (ShapedType::isDynamicShape(shape))
    return op.emitOpError("needs a grid of static shape");
  if (op.getDevice().size() != shape.size())
    return op.emitOpError("device index has ")
           << op.getDevice().size() << " coordinates for a grid of " << shape.size() << " axes";

  OpBuilder b(op);
  Location loc = op.getLoc();
  int64_t axis = op.getSplitAxes()[0];
  SmallVector<Value> device(op.getDevice());
  auto cst = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v).getResult(); };
  // Row-major linear index of `device` with coordinate `axis` set to `c`.
  auto linear = [&](Value c) {
    Value acc;
    for (size_t i = 0; i < shape.size(); ++i) {
      Value coord = int64_t(i) == axis ? c : device[i];
      acc = acc ? arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, acc, cst(shape[i])),
                                        coord)
                : coord;
    }
    return acc;
  };
  Value c = device[axis];
  Value minusOne = cst(-1);
  Value down = linear(arith::SubIOp::create(b, loc, c, cst(1)));
  Value atStart = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, c, cst(0));
  down = arith::SelectOp::create(b, loc, atStart, minusOne, down);
  Value up = linear(arith::AddIOp::create(b, loc, c, cst(1)));
  Value atEnd = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, c, cst(shape[axis] - 1));
  up = arith::SelectOp::create(b, loc, atEnd, minusOne, up);
  return replaceOp(op, {down, up});
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// shardrt_send / shardrt_recv of `op`'s data at `pointer` (a send's input, a
/// recv's output buffer) with `peer` (its peer's index in the group of its grid
/// axes, as the op states it) and its tag.
template <typename OpT>
LogicalResult RuntimeLowering::callPointToPoint(OpT op, StringRef name, const CollectiveOperands &c,
                                                ArrayRef<int64_t> peer, Value pointer,
                                                OpBuilder &b) {
  auto tag = op->template getAttrOfType<IntegerAttr>(shardc::kTransferAttr);
  if (!tag)
    return op.emitOpError("needs a ") << shardc::kTransferAttr << " tag";
  ArrayRef<shard::GridAxis> axes = op.getGridAxes();
  if (peer.size() != axes.size() || !isAscending(axes))
    return op.emitOpError("needs a static peer index per grid axis, the axes in ascending order");
  int64_t linear = 0;
  for (auto [axis, i] : llvm::zip_equal(axes, peer))
    linear = linear * shard::GridOp(c.grid).getShape()[axis] + i;
  Location loc = op.getLoc();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  func::FuncOp fn = runtime.getOrDeclare(
      op, name.str(), {b.getI32Type(), ptr, b.getI64Type(), b.getI64Type(), b.getI32Type()}, {});
  if (!fn)
    return failure();
  // An i1 (a comparison's) is a byte in memory.
  int64_t bytes = c.inType.getNumElements() * ((c.inType.getElementTypeBitWidth() + 7) / 8);
  func::CallOp::create(b, loc, fn,
                       ValueRange{i32(b, loc, c.mask), pointer, i64(b, loc, bytes),
                                  i64(b, loc, linear), i32(b, loc, tag.getInt())});
  return success();
}

LogicalResult RuntimeLowering::lower(shard::SendOp op) {
  auto c = checkOperands(op, /*needStaticOrderSizes=*/true);
  if (failed(c))
    return failure();
  OpBuilder b(op);
  if (failed(callPointToPoint(op, "shardrt_send", *c, op.getDestination(),
                              inputPointer(b, op.getLoc(), op.getInput()), b)))
    return failure();
  return replaceOp(op, op.getInput());
}

LogicalResult RuntimeLowering::lower(shard::RecvOp op) {
  auto c = checkOperands(op, /*needStaticOrderSizes=*/true);
  if (failed(c))
    return failure();
  if (!op.getSource())
    return op.emitOpError("needs a static source");
  OpBuilder b(op);
  Value out;
  Value buffer = allocOutput(b, op.getLoc(), c->outType, out);
  if (failed(callPointToPoint(op, "shardrt_recv", *c, *op.getSource(), out, b)))
    return failure();
  return replaceOp(op, bufferization::ToTensorOp::create(b, op.getLoc(), c->outType, buffer,
                                                         b.getUnitAttr(), b.getUnitAttr())
                           .getResult());
}

namespace {

struct ShardToRuntimePass : public shardc::impl::ShardToRuntimePassBase<ShardToRuntimePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool failedAny = false;

    // 1. Everything of the shard dialect except grids must be lowerable.
    SmallVector<Operation *> work;
    module.walk([&](Operation *op) {
      if (!isa<shard::ShardDialect>(op->getDialect()) || isa<shard::GridOp>(op))
        return;
      if (isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp, shard::AllToAllOp,
              shard::AllSliceOp, shard::ProcessMultiIndexOp, shard::ProcessLinearIndexOp,
              shard::GridShapeOp, shard::NeighborsLinearIndicesOp, shard::SendOp, shard::RecvOp>(
              op)) {
        work.push_back(op);
        return;
      }
      op->emitOpError("cannot be lowered to libshardrt; shardc-shard-to-runtime "
                      "expects partitioned IR (after shard-partition) with "
                      "all_reduce, all_gather, reduce_scatter, all_to_all, "
                      "all_slice, send, recv and process/grid queries only");
      failedAny = true;
    });
    if (failedAny)
      return signalPassFailure();

    // 2.-4. Lower each op in place.
    RuntimeLowering lowering(module);
    for (Operation *op : work) {
      LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] lowering " << op->getName() << " at "
                              << op->getLoc() << "\n");
      LogicalResult result =
          llvm::TypeSwitch<Operation *, LogicalResult>(op)
              .Case<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp,
                    shard::AllToAllOp, shard::AllSliceOp, shard::ProcessMultiIndexOp,
                    shard::ProcessLinearIndexOp, shard::GridShapeOp,
                    shard::NeighborsLinearIndicesOp, shard::SendOp, shard::RecvOp>(
                  [&](auto concrete) { return lowering.lower(concrete); });
      if (failed(result))
        failedAny = true;
    }
    if (failedAny)
      return signalPassFailure();
    if (auto wait = module.lookupSymbol<func::FuncOp>("shardrt_wait")) {
      lowering.waitInCallers(wait);
      lowering.progressBeforeLoops();
    }

    // 5. Grids nothing refers to any more.
    for (auto grid : llvm::make_early_inc_range(module.getOps<shard::GridOp>()))
      if (SymbolTable::symbolKnownUseEmpty(grid, module))
        grid.erase();
  }
};

} // namespace
