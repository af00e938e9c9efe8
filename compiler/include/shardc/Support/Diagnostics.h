//===- Diagnostics.h - source files and error reporting ---------*- C++ -*-===//
//
// Every source file the compiler reads lives in one llvm::SourceMgr, so a
// location is an llvm::SMLoc and a diagnostic prints as
// `file:line:col: error: message`, the source line and a caret.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_SUPPORT_DIAGNOSTICS_H
#define SHARDC_SUPPORT_DIAGNOSTICS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <map>
#include <string>

namespace shardc {

using llvm::SMLoc;
using llvm::SMRange;

/// One diagnostic, for a handler that shows them elsewhere than a terminal.
struct Diagnostic {
  SMRange range; // invalid for a whole file's or the tool's error
  llvm::SourceMgr::DiagKind kind;
  std::string message;
  std::string file; // a whole file's error: its path
};

class DiagnosticEngine {
public:
  /// Diagnostics print to `out` (a fuzzer passes llvm::nulls()).
  explicit DiagnosticEngine(llvm::SourceMgr &sourceMgr, llvm::raw_ostream &out = llvm::errs())
      : sourceMgr(sourceMgr), out(out) {}

  /// Reads `path` into the source manager. Returns the buffer id, or 0 with
  /// an error (reported at `includedFrom` if given) when it cannot be read.
  unsigned addFile(llvm::StringRef path, SMLoc includedFrom = SMLoc());

  void error(SMRange range, const llvm::Twine &message);
  void warning(SMRange range, const llvm::Twine &message);
  void note(SMRange range, const llvm::Twine &message);
  /// An error about a whole file, with no source line to show.
  void fileError(llvm::StringRef path, const llvm::Twine &message);
  /// An error about the command or the environment: `shardc: error: ...`.
  void toolError(const llvm::Twine &message);

  /// Off while a second analysis of the same program runs (the microbatch's):
  /// its warnings and their notes were shown by the first.
  void showWarnings(bool show) { warningsShown = show; }

  /// Diagnostics go to `handler` instead of the stream (the language server
  /// publishes them).
  void setHandler(std::function<void(const Diagnostic &)> handler) {
    this->handler = std::move(handler);
  }
  /// Text that addFile reads instead of the file at a real path: an editor's
  /// unsaved buffers. The map must outlive the engine's reads.
  void setOpenFiles(const std::map<std::string, std::string> *files) { openFiles = files; }

  unsigned errorCount() const { return numErrors; }
  bool hasErrors() const { return numErrors != 0; }
  llvm::SourceMgr &getSourceMgr() { return sourceMgr; }
  /// `file:line` of a location, for text that names where something is.
  std::string describe(SMLoc loc) const;

private:
  void emit(SMRange range, llvm::SourceMgr::DiagKind kind, const llvm::Twine &message);

  llvm::SourceMgr &sourceMgr;
  llvm::raw_ostream &out;
  unsigned numErrors = 0;
  bool warningsShown = true;
  bool inHiddenWarning = false; // its notes are hidden too
  std::function<void(const Diagnostic &)> handler;
  const std::map<std::string, std::string> *openFiles = nullptr;
};

} // namespace shardc

#endif
