//===- EmitExecutable.cpp - from the LLVM dialect to an executable --------===//
//
// Translate to LLVM IR, optimise for the target CPU, write object files and link
// them with libshardrt. After loop extraction the module is split into one part
// per core (llvm::SplitModule), each optimised and compiled on a thread of its
// own in a context of its own (its bitcode parsed there), as LTO's parallel code
// generation does: every function is NoInline by then, so the parts lose nothing.
//
//===----------------------------------------------------------------------===//

#include "shardc/Pipeline/Pipeline.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/Threading.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/IPO/LoopExtractor.h"
#include "llvm/Transforms/Utils/CodeExtractor.h"
#include "llvm/Transforms/Utils/SplitModule.h"

#include <mutex>
#include <thread>

using namespace mlir;

/// Runs `passes` (built by `builder`) on `module` with LLVM's standard analyses;
/// `libraries`, when given, is what the passes know of the C and vector math libraries.
static void runPasses(llvm::PassBuilder &builder, llvm::ModulePassManager &passes,
                      llvm::Module &module, llvm::TargetLibraryInfoImpl *libraries = nullptr) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  if (libraries)
    fam.registerPass([&] { return llvm::TargetLibraryAnalysis(*libraries); });
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  passes.run(module, mam);
}

/// The floats in one of the target's vectors: AVX-512's 16, AVX2's 8, else SSE's 4
/// (libmvec's 8-lane functions are AVX2 code).
static unsigned vectorLanes(llvm::TargetMachine *machine) {
  const llvm::MCSubtargetInfo *subtarget = machine->getMCSubtargetInfo();
  return subtarget->checkFeatures("+avx512f") ? 16 : subtarget->checkFeatures("+avx2") ? 8 : 4;
}

/// The loop nests inside a loop of loop nests (the microbatches' loop, which
/// loop-extract moves out whole: a function that is one loop it leaves alone),
/// each in a function of its own, as loop-extract does with a step's top level.
static void extractInnerNests(llvm::Function &fn) {
  llvm::DominatorTree dominators(fn);
  llvm::LoopInfo loops(dominators);
  llvm::SmallVector<llvm::Loop *> nests;
  for (llvm::Loop *outer : loops)
    if (outer->getSubLoops().size() > 1)
      llvm::append_range(nests, outer->getSubLoops());
  for (llvm::Loop *nest : nests) {
    llvm::CodeExtractorAnalysisCache cache(fn);
    llvm::CodeExtractor extractor(nest->getBlocks(), &dominators);
    if (extractor.isEligible() && extractor.extractCodeRegion(cache))
      loops.erase(nest);
  }
}

/// Every top-level loop nest of the step functions in a function of its own
/// (LLVM's loop-extract), kept out of line: a step is one function of
/// thousands of loop nests (every op's, inlined into its entry), and LLVM's
/// per-function analyses grow faster than linearly with it. Compiling is
/// faster and the step no slower (bench/compile, bench/train).
static void extractLoops(llvm::Module &module, llvm::TargetMachine *machine) {
  llvm::SmallPtrSet<llvm::Function *, 16> before;
  for (llvm::Function &fn : module)
    before.insert(&fn);
  llvm::PassBuilder builder(machine);
  llvm::ModulePassManager passes;
  passes.addPass(llvm::LoopExtractorPass());
  runPasses(builder, passes, module);
  llvm::SmallVector<llvm::Function *> functions;
  for (llvm::Function &fn : module)
    if (!fn.isDeclaration())
      functions.push_back(&fn);
  for (llvm::Function *fn : functions)
    extractInnerNests(*fn);
  for (llvm::Function &fn : module)
    if (!before.contains(&fn))
      fn.addFnAttr(llvm::Attribute::NoInline);
  // What is left without a loop runs straight through once per call: a step's
  // entry, a list of kernel and runtime calls (every layer's) that optimising
  // buys nothing but takes most of LLVM's time on.
  for (llvm::Function &fn : module) {
    if (fn.isDeclaration() || !before.contains(&fn))
      continue;
    llvm::DominatorTree dominators(fn);
    if (llvm::LoopInfo(dominators).empty()) {
      fn.addFnAttr(llvm::Attribute::NoInline);
      fn.addFnAttr(llvm::Attribute::OptimizeNone);
    }
  }
}

/// Every innermost loop that sums or multiplies with `reassoc` (a reduction that
/// shardc-reassociate-reductions let reorder) vectorized with a width and interleave
/// count that depend on its trip count alone, and never unrolled, not left to the
/// cost models' view of the loop's body (which differs with what is fused into it):
/// the order of summation is then the same wherever the reduction is
/// fused (a layer's forward and its recomputation under remat give the same bits).
/// A loop shorter than one vector runs in order; one of unknown length gets the
/// widest choice (its scalar remainder, if any, still in order).
static void fixReductionOrder(llvm::Module &module, llvm::TargetMachine *machine) {
  const unsigned lanes = vectorLanes(machine);
  const unsigned maxInterleave = 4;
  llvm::LLVMContext &context = module.getContext();
  auto hint = [&](llvm::StringRef name, unsigned value) -> llvm::Metadata * {
    llvm::Type *i32 = llvm::Type::getInt32Ty(context);
    return llvm::MDNode::get(context,
                             {llvm::MDString::get(context, name),
                              llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(i32, value))});
  };
  auto reassociates = [](llvm::Loop *loop) {
    return llvm::any_of(loop->blocks(), [](llvm::BasicBlock *block) {
      return llvm::any_of(*block, [](llvm::Instruction &inst) {
        return (inst.getOpcode() == llvm::Instruction::FAdd ||
                inst.getOpcode() == llvm::Instruction::FMul) &&
               inst.hasAllowReassoc();
      });
    });
  };
  llvm::TargetLibraryInfoImpl libraryInfo(machine->getTargetTriple());
  llvm::TargetLibraryInfo libraries(libraryInfo);
  for (llvm::Function &fn : module) {
    if (fn.isDeclaration())
      continue;
    llvm::DominatorTree dominators(fn);
    llvm::LoopInfo loops(dominators);
    llvm::SmallVector<llvm::Loop *> reductions;
    for (llvm::Loop *loop : loops.getLoopsInPreorder())
      if (loop->isInnermost() && reassociates(loop))
        reductions.push_back(loop);
    if (reductions.empty())
      continue;
    llvm::AssumptionCache assumptions(fn);
    llvm::ScalarEvolution evolution(fn, libraries, assumptions, dominators, loops);
    for (llvm::Loop *loop : reductions) {
      const unsigned trips = evolution.getSmallConstantTripCount(loop); // 0: unknown
      const bool inOrder = trips && trips < lanes;
      const unsigned interleave = inOrder ? 1
                                  : trips ? std::min(maxInterleave, llvm::bit_floor(trips / lanes))
                                          : maxInterleave;
      llvm::TempMDTuple self = llvm::MDTuple::getTemporary(context, {});
      llvm::SmallVector<llvm::Metadata *> hints = {self.get()};
      if (!inOrder)
        hints.push_back(hint("llvm.loop.vectorize.enable", 1));
      hints.push_back(hint("llvm.loop.vectorize.width", inOrder ? 1 : lanes));
      hints.push_back(hint("llvm.loop.interleave.count", interleave));
      // Fully unrolled first (as a short loop with a small body is, before the loop
      // vectorizer runs), the SLP vectorizer would sum it as a tree of its own choice.
      hints.push_back(
          llvm::MDNode::get(context, llvm::MDString::get(context, "llvm.loop.unroll.disable")));
      llvm::MDNode *id = llvm::MDNode::getDistinct(context, hints);
      id->replaceOperandWith(0, id);
      loop->setLoopID(id);
    }
  }
}

/// LLVM's -O2 for `machine`, with glibc's vector math library (libmvec) known to the
/// loop vectorizer: a loop of `llvm.exp` (softmax, gelu's tanh, the loss) then calls
/// _ZGVeN16v_expf (or _ZGVdN8v_expf) on 16 (8) elements at a time instead of libm's
/// expf on one. Measured on W4's step: scalar expf was 12 % of it.
static void optimize(llvm::Module &module, llvm::TargetMachine *machine) {
  llvm::PipelineTuningOptions tuning; // what MLIR's makeOptimizingTransformer sets
  tuning.LoopUnrolling = tuning.LoopInterleaving = true;
  tuning.LoopVectorization = tuning.SLPVectorization = true;
  llvm::PassBuilder builder(machine, tuning);
  llvm::TargetLibraryInfoImpl libraries(machine->getTargetTriple(), llvm::VectorLibrary::LIBMVEC);
  // LLVM's libmvec table stops at AVX2's 8 lanes; glibc also has AVX-512's 16.
  if (vectorLanes(machine) == 16) {
    static const llvm::VecDesc avx512[] = {
        {"llvm.exp.f32", "_ZGVeN16v_expf", llvm::ElementCount::getFixed(16), false,
         "_ZGV_LLVM_N16v", std::nullopt},
        {"llvm.log.f32", "_ZGVeN16v_logf", llvm::ElementCount::getFixed(16), false,
         "_ZGV_LLVM_N16v", std::nullopt}};
    libraries.addVectorizableFunctions(avx512);
  }
  llvm::ModulePassManager passes =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  runPasses(builder, passes, module, &libraries);
}

LogicalResult shardc::emitExecutable(ModuleOp module, llvm::StringRef output,
                                     llvm::StringRef runtimeLibDir, const CodeTarget &codeTarget,
                                     DiagnosticEngine &diags) {
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
  auto createMachine = [&] {
    return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
        triple, codeTarget.cpu, codeTarget.llvmFeatures, llvm::TargetOptions(), llvm::Reloc::PIC_));
  };
  std::unique_ptr<llvm::TargetMachine> machine = createMachine();
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());
  fixReductionOrder(*llvmModule, machine.get());
  extractLoops(*llvmModule, machine.get());

  // One part per core, as bitcode (a module is bound to its context, and a
  // context to one thread).
  const unsigned cores = llvm::hardware_concurrency().compute_thread_count();
  std::vector<llvm::SmallString<0>> parts;
  auto keep = [&](llvm::Module &part) {
    llvm::raw_svector_ostream os(parts.emplace_back());
    llvm::WriteBitcodeToFile(part, os);
  };
  if (cores > 1)
    llvm::SplitModule(*llvmModule, cores, [&](std::unique_ptr<llvm::Module> part) { keep(*part); });
  else
    keep(*llvmModule);

  std::vector<llvm::SmallString<128>> objects(parts.size());
  std::vector<std::unique_ptr<llvm::FileRemover>> removers;
  for (llvm::SmallString<128> &object : objects) {
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile("shardc", "o", object))
      return fail("cannot create a temporary object file: " + ec.message());
    removers.push_back(std::make_unique<llvm::FileRemover>(object));
  }
  std::mutex errorsLock;
  std::string errors;
  auto compilePart = [&](size_t i) {
    auto report = [&](const llvm::Twine &message) {
      std::lock_guard<std::mutex> lock(errorsLock);
      errors += message.str() + "\n";
    };
    llvm::LLVMContext context;
    // A loop that fixReductionOrder asked to vectorize and LLVM could not is a warning
    // on LLVM's side, nothing the user can act on: only errors are kept, and reported
    // once the part is compiled.
    std::string llvmErrors;
    context.setDiagnosticHandlerCallBack(
        [](const llvm::DiagnosticInfo *diagnostic, void *errors) {
          if (diagnostic->getSeverity() != llvm::DS_Error)
            return;
          llvm::raw_string_ostream os(*static_cast<std::string *>(errors));
          llvm::DiagnosticPrinterRawOStream printer(os);
          diagnostic->print(printer);
          os << "\n";
        },
        &llvmErrors);
    auto part = llvm::parseBitcodeFile(llvm::MemoryBufferRef(parts[i], "part"), context);
    if (!part)
      return report("reading a part of the module back failed: " +
                    llvm::toString(part.takeError()));
    std::unique_ptr<llvm::TargetMachine> partMachine = createMachine();
    // -O2: -O3 spends far longer on a step of thousands of loops (SCEV walks
    // the dominator chain of one function) for the same step time
    // (bench/compile, bench/gpt).
    optimize(**part, partMachine.get());
    std::error_code ec;
    llvm::raw_fd_ostream os(objects[i], ec, llvm::sys::fs::OF_None);
    if (ec)
      return report("cannot write '" + objects[i] + "': " + ec.message());
    llvm::legacy::PassManager pm;
    if (partMachine->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
      return report("cannot emit an object file for " + triple.str());
    pm.run(**part);
    if (!llvmErrors.empty())
      report("LLVM: " + llvm::StringRef(llvmErrors).rtrim());
  };
  std::vector<std::thread> threads;
  for (size_t i = 1; i < parts.size(); ++i)
    threads.emplace_back(compilePart, i);
  compilePart(0);
  for (std::thread &thread : threads)
    thread.join();
  if (!errors.empty())
    return fail(llvm::StringRef(errors).rtrim());

  auto cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    return fail("no C compiler driver 'cc' on PATH to link with (install gcc or clang)");
  // libshardrt has everything the generated code calls, memrefCopy included: the
  // program needs neither libMLIR nor libLLVM.
  std::string libFlag = ("-L" + runtimeLibDir).str(), rpath = ("-Wl,-rpath," + runtimeLibDir).str();
  llvm::SmallVector<llvm::StringRef> args = {*cc};
  args.append(objects.begin(), objects.end());
  args.append({"-o", output, libFlag, rpath, "-lshardrt", "-lmvec", "-lm"});
#ifdef SHARDC_SANITIZE_LINK
  args.push_back(SHARDC_SANITIZE_LINK);
#endif
  std::string message;
  if (int status = llvm::sys::ExecuteAndWait(*cc, args, std::nullopt, {}, 0, 0, &message))
    return fail("linking '" + output + "' failed (" + *cc + " exited with " + llvm::Twine(status) +
                ")" + (message.empty() ? "" : ": " + message));
  return success();
}
