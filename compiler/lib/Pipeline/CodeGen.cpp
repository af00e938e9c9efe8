//===- CodeGen.cpp - from the partitioned module to an executable ---------===//
//
// 1. Wrap each step function (@train_step, @eval_step, @grad_step) in
//    @shardc_<role>_entry, whose arguments are the buffers the runtime
//    allocates (arguments, then results), and inline it.
// 2. Lower collectives to libshardrt calls (shard-to-runtime), bufferize,
//    free temporaries, replace matmuls and convolutions with libshardrt's
//    kernels (lower-to-kernels), lower the rest of linalg to loops and
//    everything to the LLVM dialect with bare pointers for memrefs (all
//    shapes are static).
// 3. Add @shardc_<role>(void **buffers), which unpacks the buffer table for
//    its entry, the manifest string, and @main calling shardrt_main.
// 4. Translate to LLVM IR, optimise for the host CPU, write an object file
//    and link it with libshardrt.
//
//===----------------------------------------------------------------------===//

#include "shardc/MLIRGen/MLIRGen.h"
#include "shardc/Pipeline/Pipeline.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

/// The step functions the runtime calls, in shardrt_main's argument order,
/// each wrapped as @shardc_<role>_entry(memrefs...) and @shardc_<role>(void **).
static const std::pair<const char *, const char *> kEntryPoints[] = {
    {shardc::kTrainFunction, "train"},
    {shardc::kEvalFunction, "eval"},
    {shardc::kGradFunction, "grad"}};

static std::string entryName(llvm::StringRef role) { return ("shardc_" + role + "_entry").str(); }
static std::string runName(llvm::StringRef role) { return ("shardc_" + role).str(); }

/// Why each pass sits where it does:
///   inline, symbol-dce     each step function disappears into its entry
///   canonicalize, cse      before shard-to-runtime: afterwards canonicalize
///                          folds to_buffer(to_tensor %alloc) and hides the
///                          runtime's reads from bufferization
///   shard-to-runtime       collectives become calls while still on tensors
///   one-shot-bufferize     function boundaries with identity layouts, so
///                          that memref arguments can be bare pointers
///   buffer-deallocation-pipeline, convert-bufferization-to-memref
///                          frees every temporary (the clones it makes
///                          become memref copies)
///   lower-to-kernels       matmuls, convolutions and their gradients on
///                          dense buffers become sgemm-based runtime calls;
///                          on memrefs, so after bufferization, and before
///                          the loops that would take the rest
///   convert-linalg-to-loops .. reconcile   the standard path to LLVM; the
///                          second lower-affine takes the affine.apply that
///                          expand-strided-metadata makes for a subview at a
///                          dynamic offset (an all_slice's block);
///                          finalize-memref-to-llvm allocates through
///                          _mlir_memref_to_llvm_alloc, which libshardrt
///                          defines to stop with a message when memory runs
///                          out (malloc's null pointer would be a segfault)
static const char *kLoweringPipeline =
    "inline, symbol-dce, canonicalize, cse, shard-to-runtime,"
    "one-shot-bufferize{bufferize-function-boundaries allow-return-allocs-from-loops "
    "function-boundary-type-conversion=identity-layout-map},"
    "func.func(buffer-hoisting), buffer-deallocation-pipeline, convert-bufferization-to-memref,"
    "lower-to-kernels, convert-linalg-to-loops, lower-affine, convert-scf-to-cf, expand-strided-metadata,"
    "lower-affine, finalize-memref-to-llvm{use-generic-functions=1}, convert-math-to-libm, convert-math-to-llvm, convert-arith-to-llvm,"
    "convert-index-to-llvm, convert-func-to-llvm{use-bare-ptr-memref-call-conv=1},"
    "convert-cf-to-llvm, reconcile-unrealized-casts";

/// @shardc_<role>_entry(memref args..., memref results...): the step
/// function on the arguments, its results written into the result buffers.
static void addEntry(ModuleOp module, func::FuncOp step, llvm::StringRef role) {
  FunctionType type = step.getFunctionType();
  auto asMemRef = [](Type t) {
    auto tensor = cast<RankedTensorType>(t);
    return MemRefType::get(tensor.getShape(), tensor.getElementType());
  };
  SmallVector<Type> buffers;
  for (Type t : type.getInputs())
    buffers.push_back(asMemRef(t));
  for (Type t : type.getResults())
    buffers.push_back(asMemRef(t));

  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  Location loc = step.getLoc();
  auto entry = func::FuncOp::create(b, loc, entryName(role), b.getFunctionType(buffers, {}));
  Block *block = entry.addEntryBlock();
  b.setInsertionPointToStart(block);
  SmallVector<Value> tensors;
  for (auto [i, t] : llvm::enumerate(type.getInputs()))
    tensors.push_back(bufferization::ToTensorOp::create(b, loc, t, block->getArgument(i),
                                                        /*restrict=*/true));
  auto call = func::CallOp::create(b, loc, step, tensors);
  for (auto [i, result] : llvm::enumerate(call.getResults())) {
    auto store = bufferization::MaterializeInDestinationOp::create(
        b, loc, result, block->getArgument(type.getNumInputs() + i));
    store.setRestrict(true);
    store.setWritable(true);
  }
  func::ReturnOp::create(b, loc);
  step.setPrivate();
}

/// @shardc_<role>(ptr table) calls its entry on the table's pointers.
static void addRun(ModuleOp module, LLVM::LLVMFuncOp entry, llvm::StringRef role) {
  MLIRContext *ctx = module.getContext();
  Location loc = entry.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  auto run = LLVM::LLVMFuncOp::create(
      b, loc, runName(role),
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr}));
  b.setInsertionPointToStart(run.addEntryBlock(b));
  SmallVector<Value> pointers;
  for (unsigned i = 0; i < entry.getNumArguments(); ++i) {
    Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, run.getArgument(0),
                                     ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
    pointers.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
  }
  LLVM::CallOp::create(b, loc, entry, pointers);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
}

/// @main(argc, argv) returns shardrt_main(argc, argv, manifest, train, eval,
/// grad), a null pointer for a step the program lacks.
static LogicalResult addMain(ModuleOp module, llvm::StringRef manifest) {
  MLIRContext *ctx = module.getContext();
  Location loc = module.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i32 = IntegerType::get(ctx, 32);
  for (auto [function, role] : kEntryPoints)
    if (auto entry = module.lookupSymbol<LLVM::LLVMFuncOp>(entryName(role)))
      addRun(module, entry, role);
    else if (module.lookupSymbol(function))
      return module.emitError("internal error: the entry point of @") << function
                                                                       << " was not lowered";

  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  auto shardrtMain = LLVM::LLVMFuncOp::create(
      b, loc, "shardrt_main", LLVM::LLVMFunctionType::get(i32, {i32, ptr, ptr, ptr, ptr, ptr}));
  auto main = LLVM::LLVMFuncOp::create(b, loc, "main", LLVM::LLVMFunctionType::get(i32, {i32, ptr}));
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

LogicalResult shardc::lowerToLLVM(ModuleOp module, llvm::StringRef manifest) {
  module.getContext()->loadDialect<bufferization::BufferizationDialect, memref::MemRefDialect>();
  for (auto [function, role] : kEntryPoints)
    if (auto step = module.lookupSymbol<func::FuncOp>(function))
      addEntry(module, step, role);
  if (failed(runPassPipeline(module, kLoweringPipeline)))
    return failure();
  return addMain(module, manifest);
}

LogicalResult shardc::emitExecutable(ModuleOp module, llvm::StringRef output,
                                     llvm::StringRef runtimeLibDir, DiagnosticEngine &diags) {
  // The command's or the machine's problems; shardc's own go through MLIR.
  auto fail = [&](const llvm::Twine &message) {
    diags.toolError(message);
    return failure();
  };
  llvm::StringRef folder = llvm::sys::path::parent_path(output);
  if (!folder.empty() && !llvm::sys::fs::is_directory(folder))
    return fail("cannot write '" + output + "': no folder '" + folder + "'");
  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return module.emitError("translation to LLVM IR failed");

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return fail("no code generator for " + triple.str() + ": " + error);
  std::string features;
  for (const auto &feature : llvm::sys::getHostCPUFeatures())
    features += (features.empty() ? "" : ",") + std::string(feature.getValue() ? "+" : "-") +
                feature.getKey().str();
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features, llvm::TargetOptions(), llvm::Reloc::PIC_));
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());
  if (llvm::Error e = makeOptimizingTransformer(3, 0, machine.get())(llvmModule.get()))
    return fail("LLVM optimisation failed: " + llvm::toString(std::move(e)));

  llvm::SmallString<128> object;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("shardc", "o", object))
    return fail("cannot create a temporary object file: " + ec.message());
  llvm::FileRemover removeObject(object);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(object, ec, llvm::sys::fs::OF_None);
    if (ec)
      return fail("cannot write '" + object + "': " + ec.message());
    llvm::legacy::PassManager pm;
    if (machine->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
      return module.emitError("cannot emit an object file for " + triple.str());
    pm.run(*llvmModule);
  }

  auto cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    return fail("no C compiler driver 'cc' on PATH to link with (install gcc or clang)");
  // libmlir_c_runner_utils has memrefCopy, which strided copies lower to.
  std::string libFlag = ("-L" + runtimeLibDir).str(), rpath = ("-Wl,-rpath," + runtimeLibDir).str();
  std::string mlirLibFlag = "-L" MLIR_RUNNER_UTILS_DIR,
              mlirRpath = "-Wl,-rpath," MLIR_RUNNER_UTILS_DIR;
  llvm::SmallVector<llvm::StringRef> args = {*cc,        object,     "-o",       output,
                                             libFlag,    rpath,      mlirLibFlag, mlirRpath,
                                             "-lshardrt", "-lmlir_c_runner_utils", "-lm"};
  std::string message;
  if (int status = llvm::sys::ExecuteAndWait(*cc, args, std::nullopt, {}, 0, 0, &message))
    return fail("linking '" + output + "' failed (" + *cc + " exited with " +
                llvm::Twine(status) + ")" + (message.empty() ? "" : ": " + message));
  return success();
}
