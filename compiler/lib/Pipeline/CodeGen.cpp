//===- CodeGen.cpp - from the partitioned module to an executable ---------===//
//
// 1. Wrap @forward in @shardc_entry, whose arguments are the buffers the
//    runtime allocates (parameters, inputs, then results), and inline it.
// 2. Lower collectives to libshardrt calls (shard-to-runtime), bufferize,
//    free temporaries,
//    lower linalg to loops and everything to the LLVM dialect with bare
//    pointers for memrefs (all shapes are static).
// 3. Add @shardc_run(void **buffers), which unpacks the buffer table for
//    @shardc_entry, the manifest string, and @main calling shardrt_main.
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
#include "llvm/Support/WithColor.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

static const char *kEntry = "shardc_entry";
static const char *kRun = "shardc_run";

/// Why each pass sits where it does:
///   inline, symbol-dce     @forward disappears into @shardc_entry
///   canonicalize, cse      before shard-to-runtime: afterwards canonicalize
///                          folds to_buffer(to_tensor %alloc) and hides the
///                          runtime's reads from bufferization
///   shard-to-runtime       collectives become calls while still on tensors
///   one-shot-bufferize     function boundaries with identity layouts, so
///                          that memref arguments can be bare pointers
///   buffer-deallocation-pipeline, convert-bufferization-to-memref
///                          frees every temporary (the clones it makes
///                          become memref copies)
///   convert-linalg-to-loops .. reconcile   the standard path to LLVM
static const char *kLoweringPipeline =
    "inline, symbol-dce, canonicalize, cse, shard-to-runtime,"
    "one-shot-bufferize{bufferize-function-boundaries allow-return-allocs-from-loops "
    "function-boundary-type-conversion=identity-layout-map},"
    "func.func(buffer-hoisting), buffer-deallocation-pipeline, convert-bufferization-to-memref,"
    "convert-linalg-to-loops, lower-affine, convert-scf-to-cf, expand-strided-metadata,"
    "finalize-memref-to-llvm, convert-math-to-libm, convert-math-to-llvm, convert-arith-to-llvm,"
    "convert-index-to-llvm, convert-func-to-llvm{use-bare-ptr-memref-call-conv=1},"
    "convert-cf-to-llvm, reconcile-unrealized-casts";

/// @shardc_entry(memref args..., memref results...): @forward on the
/// arguments, its results written into the result buffers.
static LogicalResult addEntry(ModuleOp module) {
  auto forward = module.lookupSymbol<func::FuncOp>(shardc::kForwardFunction);
  if (!forward)
    return module.emitError("no @forward function");
  module.getContext()->loadDialect<bufferization::BufferizationDialect, memref::MemRefDialect>();
  FunctionType type = forward.getFunctionType();
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
  Location loc = forward.getLoc();
  auto entry = func::FuncOp::create(b, loc, kEntry, b.getFunctionType(buffers, {}));
  Block *block = entry.addEntryBlock();
  b.setInsertionPointToStart(block);
  SmallVector<Value> tensors;
  for (auto [i, t] : llvm::enumerate(type.getInputs()))
    tensors.push_back(bufferization::ToTensorOp::create(b, loc, t, block->getArgument(i),
                                                        /*restrict=*/true));
  auto call = func::CallOp::create(b, loc, forward, tensors);
  for (auto [i, result] : llvm::enumerate(call.getResults())) {
    auto store = bufferization::MaterializeInDestinationOp::create(
        b, loc, result, block->getArgument(type.getNumInputs() + i));
    store.setRestrict(true);
    store.setWritable(true);
  }
  func::ReturnOp::create(b, loc);
  forward.setPrivate();
  return success();
}

/// @shardc_run(ptr table) calls @shardc_entry on the table's pointers;
/// @main(argc, argv) returns shardrt_main(argc, argv, manifest, @shardc_run).
static LogicalResult addMain(ModuleOp module, llvm::StringRef manifest) {
  MLIRContext *ctx = module.getContext();
  auto entry = module.lookupSymbol<LLVM::LLVMFuncOp>(kEntry);
  if (!entry)
    return module.emitError("internal error: the entry point was not lowered");
  Location loc = entry.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i32 = IntegerType::get(ctx, 32);
  auto voidType = LLVM::LLVMVoidType::get(ctx);
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());

  auto run = LLVM::LLVMFuncOp::create(b, loc, kRun, LLVM::LLVMFunctionType::get(voidType, {ptr}));
  b.setInsertionPointToStart(run.addEntryBlock(b));
  SmallVector<Value> pointers;
  for (unsigned i = 0; i < entry.getNumArguments(); ++i) {
    Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, run.getArgument(0),
                                     ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
    pointers.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
  }
  LLVM::CallOp::create(b, loc, entry, pointers);
  LLVM::ReturnOp::create(b, loc, ValueRange{});

  b.setInsertionPointToEnd(module.getBody());
  auto shardrtMain = LLVM::LLVMFuncOp::create(
      b, loc, "shardrt_main", LLVM::LLVMFunctionType::get(i32, {i32, ptr, ptr, ptr}));
  auto main = LLVM::LLVMFuncOp::create(b, loc, "main", LLVM::LLVMFunctionType::get(i32, {i32, ptr}));
  b.setInsertionPointToStart(main.addEntryBlock(b));
  // A C string: createGlobalString adds no terminator.
  Value text = LLVM::createGlobalString(loc, b, "shardc_manifest", manifest.str() + '\0',
                                        LLVM::Linkage::Internal);
  Value runAddress = LLVM::AddressOfOp::create(b, loc, ptr, kRun);
  auto status = LLVM::CallOp::create(
      b, loc, shardrtMain,
      ValueRange{main.getArgument(0), main.getArgument(1), text, runAddress});
  LLVM::ReturnOp::create(b, loc, status.getResult());
  return success();
}

LogicalResult shardc::lowerToLLVM(ModuleOp module, llvm::StringRef manifest) {
  if (failed(addEntry(module)) || failed(runPassPipeline(module, kLoweringPipeline)))
    return failure();
  return addMain(module, manifest);
}

static LogicalResult fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "shardc") << message << "\n";
  return failure();
}

LogicalResult shardc::emitExecutable(ModuleOp module, llvm::StringRef output,
                                     llvm::StringRef runtimeLibDir) {
  llvm::StringRef folder = llvm::sys::path::parent_path(output);
  if (!folder.empty() && !llvm::sys::fs::is_directory(folder))
    return fail("cannot write '" + output + "': no folder '" + folder + "'");
  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return fail("internal error: translation to LLVM IR failed");

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
      return fail("internal error: cannot emit an object file for " + triple.str());
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
