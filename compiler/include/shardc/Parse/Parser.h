//===- Parser.h - model and rules files to AST ------------------*- C++ -*-===//
//
// Front door of the front end: checks the bytes (UTF-8, not empty, bounded
// nesting), runs the ANTLR lexer and parser, reports syntax errors with what
// was expected, and builds the AST. The ANTLR parse tree never leaves here.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_PARSE_PARSER_H
#define SHARDC_PARSE_PARSER_H

#include "shardc/AST/AST.h"
#include "shardc/AST/RulesAST.h"

#include <memory>

namespace shardc {

/// Parses the model file held in source buffer `buffer`. Returns null after
/// reporting errors.
std::unique_ptr<ModuleAST> parseModelFile(unsigned buffer, DiagnosticEngine &diags);

/// Parses the rules file held in source buffer `buffer`. Returns null after
/// reporting errors.
std::unique_ptr<RulesFileAST> parseRulesFile(unsigned buffer, DiagnosticEngine &diags);

} // namespace shardc

#endif
