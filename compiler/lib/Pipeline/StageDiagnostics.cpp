//===- StageDiagnostics.cpp - MLIR's diagnostics through the engine -------===//
//
// While the MLIR stages run, MLIR's diagnostics go to the DiagnosticEngine:
// counted like the front end's, at the source line MLIRGen's location names,
// with its caret. A stage works on IR that shardc made from a program sema
// accepted, so an error there is shardc's bug, not the user's: it reads
// "internal error in stage 'S'" and asks for a report. The one exception is
// the sharding models' "cannot partition: ..." (a layout the partitioner does
// not handle yet), which is about the user's rules and says so.
//
//===----------------------------------------------------------------------===//

#include "shardc/Pipeline/Pipeline.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"

using namespace shardc;

namespace {

/// What each stage does, for the message that names it.
llvm::StringRef describeStage(llvm::StringRef stage) {
  return llvm::StringSwitch<llvm::StringRef>(stage)
      .Case("mlir", "MLIR generation")
      .Case("sharded", "sharding propagation")
      .Case("spmd", "SPMD partitioning")
      .Case("llvm", "lowering to LLVM")
      .Case("exe", "code generation")
      .Default("");
}

/// `'linalg.generic' op msg` -> `msg`.
std::string withoutOpPrefix(llvm::StringRef message) {
  llvm::SmallVector<llvm::StringRef, 2> match;
  if (llvm::Regex("^'[^']+' op (.*)$").match(message, &match))
    return match[1].str();
  return message.str();
}

} // namespace

StageDiagnostics::StageDiagnostics(mlir::MLIRContext &context, DiagnosticEngine &diags)
    : diags(diags), handlerId(context.getDiagEngine().registerHandler(
                        [this](mlir::Diagnostic &diag) { return handle(diag); })),
      context(context) {
  // The op's dump is IR the user never wrote; the location names the source.
  context.printOpOnDiagnostic(false);
}

StageDiagnostics::~StageDiagnostics() { context.getDiagEngine().eraseHandler(handlerId); }

mlir::LogicalResult StageDiagnostics::run(llvm::StringRef name,
                                          llvm::function_ref<mlir::LogicalResult()> body) {
  stage = name.str();
  internalReported = false;
  unsigned errorsBefore = diags.errorCount();
  mlir::LogicalResult result = body();
  if (mlir::failed(result) && diags.errorCount() == errorsBefore)
    reportInternal(SMRange(), "it failed without a message");
  stage.clear();
  return result;
}

SMRange StageDiagnostics::sourceRange(mlir::Location loc) const {
  auto file = loc->findInstanceOf<mlir::FileLineColLoc>();
  if (!file)
    return SMRange();
  llvm::SourceMgr &sourceMgr = diags.getSourceMgr();
  for (unsigned buffer = 1; buffer <= sourceMgr.getNumBuffers(); ++buffer) {
    if (sourceMgr.getMemoryBuffer(buffer)->getBufferIdentifier() != file.getFilename().getValue())
      continue;
    SMLoc at = sourceMgr.FindLocForLineAndColumn(buffer, file.getLine(), file.getColumn());
    return SMRange(at, at);
  }
  return SMRange();
}

void StageDiagnostics::reportInternal(SMRange at, const std::string &message) {
  diags.error(at,
              "internal error in stage '" + stage + "' (" + describeStage(stage) + "): " + message);
  if (internalReported)
    return;
  internalReported = true;
  diags.note(SMRange(), "this is a bug in shardc, not in the program: please report it with "
                        "the model and rules files and this command line");
}

mlir::LogicalResult StageDiagnostics::handle(mlir::Diagnostic &diag) {
  SMRange at = sourceRange(diag.getLocation());
  // Some of MLIR's own messages end in a newline, which would print an empty line.
  std::string message = llvm::StringRef(diag.str()).rtrim().str();
  // The step functions share the forward code, so a problem there is found
  // once per function: say it once.
  if (!reported.insert({at.Start.getPointer(), message}).second)
    return mlir::success();
  switch (diag.getSeverity()) {
  case mlir::DiagnosticSeverity::Error: {
    std::string unprefixed = withoutOpPrefix(message);
    llvm::StringRef text = unprefixed;
    if (text.consume_front("cannot partition: "))
      diags.error(at, "this layout cannot be partitioned yet: " + text);
    else if (stage.empty()) // without a source line, the command's (checkPassManagerOptions)
      diags.error(at, message);
    else
      reportInternal(at, message);
    break;
  }
  case mlir::DiagnosticSeverity::Warning:
    diags.warning(at, message);
    break;
  case mlir::DiagnosticSeverity::Note:
  case mlir::DiagnosticSeverity::Remark:
    diags.note(at, message);
    break;
  }
  for (const mlir::Diagnostic &note : diag.getNotes())
    diags.note(sourceRange(note.getLocation()), note.str());
  return mlir::success();
}
