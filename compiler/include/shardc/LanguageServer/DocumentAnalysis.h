//===- DocumentAnalysis.h - the front end on an editor's files --*- C++ -*-===//
//
// What shardc-lsp answers from: a model file (with the files it imports) and,
// when one goes with it, a rules file, run through the same front end as
// shardc (parse, sema, rules) on the editor's unsaved text. Positions are
// 0-based lines and byte columns, as the language server speaks them.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_LANGUAGESERVER_DOCUMENTANALYSIS_H
#define SHARDC_LANGUAGESERVER_DOCUMENTANALYSIS_H

#include "shardc/AST/AST.h"
#include "shardc/AST/RulesAST.h"
#include "shardc/Frontend/ModuleLoader.h"
#include "shardc/Sema/TypedProgram.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shardc {

struct FilePosition {
  unsigned line = 0, column = 0;
};

struct FileRange {
  std::string path; // absolute
  FilePosition start, end;
};

struct FileDiagnostic {
  FileRange range;
  llvm::SourceMgr::DiagKind kind;
  std::string message;
  std::vector<std::pair<FileRange, std::string>> notes;
};

struct HoverText {
  std::string markdown;
  FileRange range;
};

struct Completion {
  std::string label, detail;
  enum Kind { Function, Class, Variable, Field, Keyword, Axis } kind;
};

struct Symbol {
  std::string name, detail;
  enum Kind { Module, Class, Field, Method, Variable, Constant } kind;
  FileRange range, selection;
  std::vector<Symbol> children;
};

/// `path` made absolute against the working folder, without `.` and `..`: how
/// the analysis and the server name every file.
std::string absolutePath(llvm::StringRef path);
/// A rules file, by its extension (as the editor's languages tell them apart).
bool isRulesFile(llvm::StringRef path);

class DocumentAnalysis {
public:
  /// Runs the front end on `modelPath` (absolute; empty with only a rules file
  /// to parse) and `rulesPath` (empty: none), reading `openFiles` (by absolute
  /// path) instead of the disk. The model's named shapes and the rules' plan
  /// are kept for the queries.
  DocumentAnalysis(const std::string &modelPath, const std::string &rulesPath,
                   const std::map<std::string, std::string> &openFiles,
                   const std::vector<std::string> &importDirs);
  ~DocumentAnalysis();

  /// Whether the analysis read `path` (the model file, an import, the rules).
  bool reads(const std::string &path) const;
  /// Every error, warning and note (attached to the error before it), of any file.
  const std::vector<FileDiagnostic> &diagnostics() const { return diags; }
  /// Markdown about the name at a position, and the name's range.
  std::optional<HoverText> hover(const std::string &path, FilePosition at) const;
  /// Where the name at a position is declared (a block in another file, an
  /// imported file).
  std::optional<FileRange> definition(const std::string &path, FilePosition at) const;
  /// What may be written at a position.
  std::vector<Completion> complete(const std::string &path, FilePosition at) const;
  /// The outline of a file.
  std::vector<Symbol> symbols(const std::string &path) const;

private:
  struct State;
  std::unique_ptr<State> state;
  std::vector<FileDiagnostic> diags;
};

} // namespace shardc

#endif
