//===- LowerToLLVM.cpp - from the partitioned module to the LLVM dialect --===//
//
// 1. Wrap each step function (@train_step, @eval_step, @grad_step) in
//    @shardc_<role>_entry, whose arguments are the buffers the runtime
//    allocates (arguments, then results; the train step's new parameters and
//    state go into their arguments' buffers).
// 2. shardc-lower-to-llvm (PassPipelines.cpp): inline each step into its
//    entry, lower collectives to libshardrt calls, bufferize, free
//    temporaries, replace matmuls and convolutions with libshardrt's kernels,
//    lower the rest of linalg to loops and everything to the LLVM dialect
//    with bare pointers for memrefs (all shapes are static).
// 3. Add @shardc_<role>(void **buffers), which unpacks the buffer table for
//    its entry and adds the runtime's step arena (shardc-plan-buffers takes
//    the entry's temporaries from it), the manifest string, and @main
//    calling shardrt_main.
//
//===----------------------------------------------------------------------===//

#include "shardc/Conversion/Passes.h"
#include "shardc/MLIRGen/MLIRGen.h"
#include "shardc/Optimize/Passes.h"
#include "shardc/Pipeline/Pipeline.h"
#include "shardrt/convolution_buffers.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/PassManager.h"

#include <set>

using namespace mlir;

/// The step functions the runtime calls, in shardrt_main's argument order,
/// each wrapped as @shardc_<role>_entry(memrefs...) and @shardc_<role>(void **).
static const std::pair<const char *, const char *> kEntryPoints[] = {
    {shardc::kTrainFunction, "train"},
    {shardc::kEvalFunction, "eval"},
    {shardc::kGradFunction, "grad"},
    {shardc::kPrefillFunction, "prefill"},
    {shardc::kDecodeFunction, "decode"}};

static std::string entryName(llvm::StringRef role) { return ("shardc_" + role + "_entry").str(); }
static std::string runName(llvm::StringRef role) { return ("shardc_" + role).str(); }

/// How many of the train step's first results are its new parameters and
/// state: each is written over its argument (the runtime passes those buffers
/// once). None for the other steps.
static unsigned updatedInPlace(func::FuncOp step, llvm::StringRef role) {
  if (role != "train")
    return 0;
  FunctionType type = step.getFunctionType();
  unsigned count = 0;
  for (; count < type.getNumInputs() && count < type.getNumResults(); ++count) {
    auto argRole = step.getArgAttrOfType<StringAttr>(count, shardc::kRoleAttr);
    if (!argRole || (argRole != shardc::kParameterRole && argRole != shardc::kOptimizerStateRole) ||
        type.getInput(count) != type.getResult(count))
      break;
  }
  return count;
}

/// @shardc_<role>_entry(memref args..., memref results...): the step
/// function on the arguments, its results written into the result buffers;
/// the train step's new parameters and state into their arguments' buffers.
static void addEntry(ModuleOp module, func::FuncOp step, llvm::StringRef role) {
  FunctionType type = step.getFunctionType();
  auto asMemRef = [](Type t) {
    auto tensor = cast<RankedTensorType>(t);
    return MemRefType::get(tensor.getShape(), tensor.getElementType());
  };
  const unsigned inPlace = updatedInPlace(step, role);
  SmallVector<Type> buffers;
  for (Type t : type.getInputs())
    buffers.push_back(asMemRef(t));
  for (Type t : type.getResults().drop_front(inPlace))
    buffers.push_back(asMemRef(t));

  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  Location loc = step.getLoc();
  auto entry = func::FuncOp::create(b, loc, entryName(role), b.getFunctionType(buffers, {}));
  entry->setAttr(shardc::kArenaArgumentAttr, b.getUnitAttr());
  Block *block = entry.addEntryBlock();
  b.setInsertionPointToStart(block);
  SmallVector<Value> tensors;
  for (auto [i, t] : llvm::enumerate(type.getInputs()))
    tensors.push_back(bufferization::ToTensorOp::create(b, loc, t, block->getArgument(i),
                                                        /*restrict=*/true,
                                                        /*writable=*/i < inPlace));
  auto call = func::CallOp::create(b, loc, step, tensors);
  for (auto [i, result] : llvm::enumerate(call.getResults())) {
    // Back into its argument's buffer, which the to_tensor above reads: not
    // `restrict`, so that bufferization copies into it rather than assume it
    // is the only view of that buffer (shardc-update-in-place then makes the
    // new value over the old one, and the copy folds).
    bool over = i < inPlace;
    auto store = bufferization::MaterializeInDestinationOp::create(
        b, loc, result, block->getArgument(over ? i : type.getNumInputs() + i - inPlace));
    store.setRestrict(!over);
    store.setWritable(true);
  }
  func::ReturnOp::create(b, loc);
  step.setPrivate();
}

/// @shardc_<role>(ptr table) calls its entry on the table's pointers and,
/// where shardc-plan-buffers gave the entry an arena argument, the runtime's
/// step arena (shardrt_step_arena) of the planned size.
static void addRun(ModuleOp module, LLVM::LLVMFuncOp entry, llvm::StringRef role) {
  MLIRContext *ctx = module.getContext();
  Location loc = entry.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  auto run = LLVM::LLVMFuncOp::create(
      b, loc, runName(role), LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr}));
  bool arena = entry->hasAttr(shardc::kArenaArgumentAttr);
  auto stepArena = module.lookupSymbol<LLVM::LLVMFuncOp>("shardrt_step_arena");
  if (arena && !stepArena)
    stepArena = LLVM::LLVMFuncOp::create(b, loc, "shardrt_step_arena",
                                         LLVM::LLVMFunctionType::get(ptr, {i64}));
  b.setInsertionPointToStart(run.addEntryBlock(b));
  SmallVector<Value> pointers;
  for (unsigned i = 0; i + arena < entry.getNumArguments(); ++i) {
    Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, run.getArgument(0),
                                     ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
    pointers.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
  }
  if (arena) {
    auto bytes = entry->getAttrOfType<IntegerAttr>(shardc::kArenaBytesAttr);
    Value size = LLVM::ConstantOp::create(b, loc, i64, bytes.getInt());
    pointers.push_back(LLVM::CallOp::create(b, loc, stepArena, ValueRange{size}).getResult());
  }
  LLVM::CallOp::create(b, loc, entry, pointers);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

/// @main(argc, argv) returns shardrt_main(argc, argv, manifest, train, eval,
/// grad, prefill, decode), a null pointer for a step the program lacks.
LogicalResult shardc::addMain(ModuleOp module, llvm::StringRef manifest) {
  MLIRContext *ctx = module.getContext();
  Location loc = module.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i32 = IntegerType::get(ctx, 32);
  for (auto [function, role] : kEntryPoints)
    if (auto entry = module.lookupSymbol<LLVM::LLVMFuncOp>(entryName(role)))
      addRun(module, entry, role);
    else if (module.lookupSymbol(function))
      return module.emitError("internal error: the entry point of @")
             << function << " was not lowered";

  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  auto shardrtMain = LLVM::LLVMFuncOp::create(
      b, loc, "shardrt_main",
      LLVM::LLVMFunctionType::get(i32, {i32, ptr, ptr, ptr, ptr, ptr, ptr, ptr}));
  auto main =
      LLVM::LLVMFuncOp::create(b, loc, "main", LLVM::LLVMFunctionType::get(i32, {i32, ptr}));
  b.setInsertionPointToStart(main.addEntryBlock(b));
  // A C string: createGlobalString adds no terminator.
  Value text = LLVM::createGlobalString(loc, b, "shardc_manifest", manifest.str() + '\0',
                                        LLVM::Linkage::Internal);
  SmallVector<Value> args{main.getArgument(0), main.getArgument(1), text};
  for (auto [function, role] : kEntryPoints)
    args.push_back(module.lookupSymbol(runName(role))
                       ? LLVM::AddressOfOp::create(b, loc, ptr, runName(role)).getResult()
                       : LLVM::ZeroOp::create(b, loc, ptr).getResult());
  auto status = LLVM::CallOp::create(b, loc, shardrtMain, args);
  LLVM::ReturnOp::create(b, loc, status.getResult());
  return success();
}

LogicalResult shardc::lowerToLLVM(ModuleOp module) {
  module.getContext()->loadDialect<bufferization::BufferizationDialect, memref::MemRefDialect>();
  for (auto [function, role] : kEntryPoints)
    if (auto step = module.lookupSymbol<func::FuncOp>(function))
      addEntry(module, step, role);
  return runPipeline(module, [](OpPassManager &pm) {
    buildLowerToLLVMPipeline(pm, LowerToLLVMPipelineOptions());
  });
}

void shardc::addPlannedMemory(ModuleOp lowered, MemoryPerRank &memory) {
  for (auto [function, role] : kEntryPoints)
    if (Operation *entry = lowered.lookupSymbol(entryName(role)))
      if (auto bytes = entry->getAttrOfType<IntegerAttr>(shardc::kArenaBytesAttr))
        memory.arenas.emplace_back(role, bytes.getInt());
  if (auto bytes = lowered->getAttrOfType<IntegerAttr>(shardc::kScratchBytesAttr))
    memory.scratchBytes = bytes.getInt();
}

void shardc::addKernelMemory(ModuleOp lowered, MemoryPerRank &memory) {
  // The runtime keeps one set per distinct call: its arguments but the pointers.
  std::set<SmallVector<int64_t>> shapes;
  lowered.walk([&](LLVM::CallOp call) {
    std::optional<StringRef> callee = call.getCallee();
    if (callee &&
        (callee->starts_with("shardrt_matmul_") || callee->starts_with("shardrt_batched_matmul_") ||
         callee->starts_with("shardrt_conv2d_")))
      memory.callsKernels = true;
    const bool forward = callee == "shardrt_conv2d_f32";
    if (!forward && callee != "shardrt_conv2d_input_grad_f32")
      return;
    SmallVector<int64_t> args;
    for (Value arg : call.getArgOperands()) {
      APInt value;
      if (isa<IntegerType>(arg.getType()) && matchPattern(arg, m_ConstantInt(&value)))
        args.push_back(value.getSExtValue());
    }
    // Forward: accumulate, n, h, w, c, pad_h, pad_w, kh, kw, f, oh, ow, strides,
    // dilations. Input gradient: accumulate, n, h, w, c, kh, kw, f, dy_h, dy_w, pads,
    // a forward convolution of dy (f channels) into dx (c channels).
    if (args.size() != (forward ? 16u : 12u))
      return;
    const int64_t n = args[1], h = args[2], w = args[3], c = args[4];
    if (forward ? c < shardrt::kDnnlConvChannels : args[7] < shardrt::kDnnlConvChannels)
      return;
    if (!shapes.insert(args).second)
      return;
    memory.convolutionBuffers += forward
                                     ? shardrt::dnnlConvolutionBytes(n, h, w, c, args[7], args[8],
                                                                     args[9], args[10], args[11])
                                     : shardrt::dnnlConvolutionBytes(n, args[8], args[9], args[7],
                                                                     args[5], args[6], c, h, w);
    ++memory.convolutions;
  });
}
