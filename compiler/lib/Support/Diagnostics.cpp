//===- Diagnostics.cpp ----------------------------------------------------===//

#include "shardc/Support/Diagnostics.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace shardc;

unsigned DiagnosticEngine::addFile(llvm::StringRef path, SMLoc includedFrom) {
  if (openFiles) {
    llvm::SmallString<256> real;
    if (llvm::sys::fs::real_path(path, real))
      real = path;
    if (auto open = openFiles->find(real.str().str()); open != openFiles->end())
      return sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(open->second, real),
                                          includedFrom);
  }
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/true);
  if (!buffer) {
    std::string message = "cannot read '" + path.str() + "': " + buffer.getError().message();
    if (includedFrom.isValid())
      error(SMRange(includedFrom, includedFrom), message);
    else
      fileError(path, message);
    return 0;
  }
  // Files under the working folder (the stdlib, usually) read better relative.
  llvm::SmallString<256> cwd;
  llvm::StringRef shown = path;
  if (!llvm::sys::fs::current_path(cwd)) {
    cwd += llvm::sys::path::get_separator();
    shown.consume_front(cwd);
  }
  std::unique_ptr<llvm::MemoryBuffer> named =
      shown == path ? std::move(*buffer)
                    : llvm::MemoryBuffer::getMemBufferCopy((*buffer)->getBuffer(), shown);
  return sourceMgr.AddNewSourceBuffer(std::move(named), includedFrom);
}

void DiagnosticEngine::emit(SMRange range, llvm::SourceMgr::DiagKind kind,
                            const llvm::Twine &message) {
  if (kind != llvm::SourceMgr::DK_Note)
    inHiddenWarning = kind == llvm::SourceMgr::DK_Warning && !warningsShown;
  if (inHiddenWarning)
    return;
  if (kind == llvm::SourceMgr::DK_Error)
    ++numErrors;
  if (handler) {
    handler(Diagnostic{range, kind, message.str(), ""});
    return;
  }
  // Without a place in a file, the tool speaks: `shardc: error: ...`.
  if (!range.Start.isValid()) {
    llvm::raw_ostream &os =
        kind == llvm::SourceMgr::DK_Error     ? llvm::WithColor::error(out, "shardc")
        : kind == llvm::SourceMgr::DK_Warning ? llvm::WithColor::warning(out, "shardc")
                                              : llvm::WithColor::note(out, "shardc");
    os << message << "\n";
    return;
  }
  // SourceMgr clips the range to the caret's line and underlines it `^~~~`.
  llvm::SmallVector<SMRange, 1> ranges;
  if (range.End.isValid())
    ranges.push_back(range);
  sourceMgr.PrintMessage(out, range.Start, kind, message, ranges);
}

void DiagnosticEngine::error(SMRange range, const llvm::Twine &message) {
  emit(range, llvm::SourceMgr::DK_Error, message);
}
void DiagnosticEngine::warning(SMRange range, const llvm::Twine &message) {
  emit(range, llvm::SourceMgr::DK_Warning, message);
}
void DiagnosticEngine::note(SMRange range, const llvm::Twine &message) {
  emit(range, llvm::SourceMgr::DK_Note, message);
}

void DiagnosticEngine::fileError(llvm::StringRef path, const llvm::Twine &message) {
  ++numErrors;
  if (handler) {
    handler(Diagnostic{SMRange(), llvm::SourceMgr::DK_Error, message.str(), path.str()});
    return;
  }
  llvm::SMDiagnostic(path, llvm::SourceMgr::DK_Error, message.str())
      .print(/*ProgName=*/nullptr, out);
}

void DiagnosticEngine::toolError(const llvm::Twine &message) {
  emit(SMRange(), llvm::SourceMgr::DK_Error, message);
}

std::string DiagnosticEngine::describe(SMLoc loc) const {
  unsigned buffer = sourceMgr.FindBufferContainingLoc(loc);
  if (!buffer)
    return "<unknown>";
  llvm::StringRef name = sourceMgr.getMemoryBuffer(buffer)->getBufferIdentifier();
  return (name + ":" + llvm::Twine(sourceMgr.FindLineNumber(loc, buffer))).str();
}
