//===- ASTPrinter.h - `shardc --emit=ast` -----------------------*- C++ -*-===//

#ifndef SHARDC_AST_ASTPRINTER_H
#define SHARDC_AST_ASTPRINTER_H

#include "shardc/AST/AST.h"
#include "shardc/AST/RulesAST.h"

#include "llvm/Support/raw_ostream.h"

namespace shardc {

/// Prints declarations as an indented tree with `@line:col` locations and
/// expressions fully parenthesised, so precedence is visible.
void printAST(const ModuleAST &module, llvm::SourceMgr &sourceMgr, llvm::raw_ostream &os);
void printAST(const RulesFileAST &rules, llvm::SourceMgr &sourceMgr, llvm::raw_ostream &os);

} // namespace shardc

#endif
