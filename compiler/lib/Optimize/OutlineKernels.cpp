//===- OutlineKernels.cpp - each linalg op in a kernel function, deduplicated ===//
//
// See shardc-outline-kernels in include/shardc/Optimize/Passes.td.
//
// 1. Collect the linalg ops on buffers of every function, and the loops of
//    runtime calls (shardc-lower-to-kernels' loops over a batched matmul).
// 2. For each, build a private function: its arguments are the op's operands
//    (a slice at a dynamic offset: its source and offsets) and the
//    non-constant values its body (or a loop's bounds) reads from outside;
//    the constants it reads and the slices are cloned in.
// 3. Print the function under a fixed name: ops that print alike share the
//    first such function; the op becomes a call.
//
//===----------------------------------------------------------------------===//

#include "SharedFunctions.h"
#include "shardc/Optimize/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "shardc-outline-kernels"

namespace shardc {
#define GEN_PASS_DEF_OUTLINEKERNELSPASS
#include "shardc/Optimize/Passes.h.inc"
} // namespace shardc

using namespace mlir;

namespace {

/// Whether a call can pass `type` as a bare pointer (LowerToLLVM's calling
/// convention): not a memref with a dynamic size, stride or offset.
static bool isBarePointer(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref)
    return true;
  int64_t offset;
  SmallVector<int64_t> strides;
  return memref.hasStaticShape() && succeeded(memref.getStridesAndOffset(strides, offset)) &&
         ShapedType::isStatic(offset) && llvm::all_of(strides, ShapedType::isStatic);
}

/// The subview that makes `operand` when the operand cannot be passed (a
/// rank's block of an all_slice, at a dynamic offset) but its source can: the
/// kernel takes the source and the offsets and slices it itself.
static memref::SubViewOp sliceInKernel(Value operand) {
  auto view = operand.getDefiningOp<memref::SubViewOp>();
  return view && isBarePointer(view.getSource().getType()) ? view : nullptr;
}

static bool canOutline(linalg::LinalgOp op) {
  return op.hasPureBufferSemantics() && llvm::all_of(op->getOperands(), [](Value v) {
           return isBarePointer(v.getType()) || sliceInKernel(v);
         });
}

/// A loop of runtime calls (shardc-lower-to-kernels' loop over a batched
/// matmul's heads): index arithmetic, pointers taken of buffers and calls of
/// external functions, nested loops of the same, no results, and only values
/// that can be passed as bare pointers read from outside.
static bool isCallLoop(scf::ForOp loop, SymbolTable &symbols) {
  if (loop.getNumResults() != 0)
    return false;
  WalkResult walk = loop.getBody()->walk([&](Operation *op) {
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      return callee && callee.isExternal() ? WalkResult::advance() : WalkResult::interrupt();
    }
    bool allowed = isa<scf::ForOp, scf::YieldOp, memref::ExtractAlignedPointerAsIndexOp>(op) ||
                   isa<arith::ArithDialect, LLVM::LLVMDialect>(op->getDialect());
    return allowed ? WalkResult::advance() : WalkResult::interrupt();
  });
  if (walk.wasInterrupted())
    return false;
  SetVector<Value> captured;
  getUsedValuesDefinedAbove(loop->getRegions(), captured);
  return llvm::all_of(captured, [](Value v) { return isBarePointer(v.getType()); });
}

struct OutlineKernelsPass : public shardc::impl::OutlineKernelsPassBase<OutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<Operation *> ops;
    module.walk<WalkOrder::PreOrder>([&](Operation *op) {
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      auto loop = dyn_cast<scf::ForOp>(op);
      if (!(linalgOp && canOutline(linalgOp)) && !(loop && isCallLoop(loop, symbols)))
        return WalkResult::advance();
      ops.push_back(op);
      return WalkResult::skip();
    });
    llvm::StringMap<func::FuncOp> kernels;
    for (Operation *op : ops) {
      SmallVector<Value> args;
      SmallVector<Operation *> constants, slices;
      SetVector<Value> captured;
      if (isa<scf::ForOp>(op)) {
        // A loop's bounds are read from outside like the values its body reads.
        captured.insert(op->operand_begin(), op->operand_end());
      } else {
        for (Value v : op->getOperands()) {
          if (isBarePointer(v.getType())) {
            args.push_back(v);
            continue;
          }
          memref::SubViewOp slice = sliceInKernel(v);
          llvm::append_range(args, slice->getOperands());
          slices.push_back(slice);
        }
      }
      getUsedValuesDefinedAbove(op->getRegions(), captured);
      for (Value v : captured) {
        if (matchPattern(v, m_Constant()))
          constants.push_back(v.getDefiningOp());
        else
          args.push_back(v);
      }
      func::FuncOp kernel = shardc::shareFunction(module, outline(op, args, constants, slices),
                                                  kernels, "shardc_kernel");
      OpBuilder b(op);
      func::CallOp::create(b, op->getLoc(), kernel, args);
      op->erase();
    }
    LLVM_DEBUG(llvm::dbgs() << ops.size() << " linalg ops and loops, " << kernels.size()
                            << " kernels\n");
  }

  /// A detached function that runs `op` on `args`, with `constants` and
  /// `slices` cloned in.
  func::FuncOp outline(Operation *op, ArrayRef<Value> args, ArrayRef<Operation *> constants,
                       ArrayRef<Operation *> slices) {
    MLIRContext *ctx = op->getContext();
    SmallVector<Type> types;
    for (Value v : args)
      types.push_back(v.getType());
    Location loc = op->getLoc();
    OpBuilder detached(ctx);
    auto kernel =
        func::FuncOp::create(detached, loc, "shardc_kernel", FunctionType::get(ctx, types, {}));
    Block *body = kernel.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(body);
    IRMapping map;
    map.map(args, body->getArguments());
    for (Operation *cloned : llvm::concat<Operation *const>(constants, slices))
      b.clone(*cloned, map);
    Operation *copy = b.clone(*op, map);
    copy->setDiscardableAttrs(DictionaryAttr::get(ctx));
    func::ReturnOp::create(b, loc);
    return kernel;
  }
};

} // namespace
