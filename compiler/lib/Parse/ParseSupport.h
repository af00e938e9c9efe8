//===- ParseSupport.h - what the model and rules parsers share --*- C++ -*-===//

#ifndef SHARDC_LIB_PARSE_PARSESUPPORT_H
#define SHARDC_LIB_PARSE_PARSESUPPORT_H

#include "shardc/Support/Diagnostics.h"

#include "antlr4-runtime.h"

#include <memory>
#include <vector>

namespace shardc::parse {

/// One source buffer seen through ANTLR: ANTLR counts code points, the
/// source manager bytes; this maps between them.
class SourceText {
public:
  SourceText(unsigned buffer, DiagnosticEngine &diags);

  /// Reports an empty file or bytes that are not UTF-8; false if any.
  bool checkEncoding(llvm::StringRef fileKind);

  SMLoc loc(size_t codePoint) const;
  SMRange range(const antlr4::Token *start, const antlr4::Token *stop) const;
  SMRange range(antlr4::ParserRuleContext *ctx) const {
    return range(ctx->getStart(), ctx->getStop());
  }
  SMRange range(antlr4::tree::TerminalNode *node) const {
    return range(node->getSymbol(), node->getSymbol());
  }

  llvm::StringRef text() const { return bytes; }
  std::string path() const;
  unsigned bufferId() const { return buffer; }

private:
  unsigned buffer;
  DiagnosticEngine &diags;
  llvm::StringRef bytes;
  std::vector<uint32_t> byteOffsetOfCodePoint; // empty when all ASCII
};

/// Lexes and parses `text` with the generated Lexer/Parser classes, reporting
/// lexical and syntax errors. `parseRoot` runs the start rule. Returns the
/// root context, or null when there were errors. The session keeps the
/// ANTLR objects alive while the caller builds its AST.
class ParseSession {
public:
  ParseSession(SourceText &source, DiagnosticEngine &diags) : source(source), diags(diags) {}

  template <typename Lexer, typename Parser, typename RootFn>
  auto parse(RootFn parseRoot) -> decltype(parseRoot(std::declval<Parser &>())) {
    input = std::make_unique<antlr4::ANTLRInputStream>(source.text().str());
    lexer = std::make_unique<Lexer>(input.get());
    tokens = std::make_unique<antlr4::CommonTokenStream>(lexer.get());
    auto typedParser = std::make_unique<Parser>(tokens.get());
    Parser &p = *typedParser;
    parser = std::move(typedParser);
    decltype(parseRoot(p)) root = nullptr;
    if (lexAndCheck(*lexer, *tokens)) {
      installErrorHandling(p);
      root = parseRoot(p);
      if (root && numErrors == 0)
        checkDepth(root);
    }
    return numErrors == 0 ? root : nullptr;
  }

  void reportSyntaxError(SMRange range, const std::string &message);
  const SourceText &getSource() const { return source; }

private:
  bool lexAndCheck(antlr4::Lexer &lexer, antlr4::CommonTokenStream &tokens);
  void installErrorHandling(antlr4::Parser &parser);
  /// Reports a parse tree deeper than the AST builder and sema may recurse.
  void checkDepth(antlr4::ParserRuleContext *root);

  SourceText &source;
  DiagnosticEngine &diags;
  unsigned numErrors = 0;
  // The parse tree points into these, so they live as long as the session.
  std::unique_ptr<antlr4::ANTLRInputStream> input;
  std::unique_ptr<antlr4::Lexer> lexer;
  std::unique_ptr<antlr4::CommonTokenStream> tokens;
  std::unique_ptr<antlr4::Parser> parser;
  std::vector<std::shared_ptr<void>> listeners;
};

/// Source text of a token with string quotes removed and escapes resolved.
std::string unquote(const std::string &literal);

} // namespace shardc::parse

#endif
