//===- ParseSupport.cpp - byte checks, ANTLR driving, syntax errors -------===//

#include "ParseSupport.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace shardc;
using namespace shardc::parse;

// Recursion in the parser, the AST builder and sema follows bracket nesting;
// bounding it keeps hostile input from exhausting the stack.
static constexpr unsigned kMaxNesting = 128;
// Left-nested operator chains (`x + x + ...`) recurse too, one level per
// operator, as do calls and brackets (a few levels each). This bounds the
// depth of the parse tree, and so of every recursion over the AST, far inside
// the compiler's stack in every build, sanitized ones included (measured: a
// 95 000-deep chain overflows AddressSanitizer's frames in 512 MiB).
static constexpr size_t kMaxTreeDepth = 1024;
// A model file is a few thousand tokens, so this bound is generous.
static constexpr size_t kMaxTokens = 200000;
// After this many syntax errors in one file the rest is noise.
static constexpr unsigned kMaxSyntaxErrors = 20;

//===----------------------------------------------------------------------===//
// SourceText
//===----------------------------------------------------------------------===//

SourceText::SourceText(unsigned buffer, DiagnosticEngine &diags)
    : buffer(buffer), diags(diags),
      bytes(diags.getSourceMgr().getMemoryBuffer(buffer)->getBuffer()) {}

std::string SourceText::path() const {
  return diags.getSourceMgr().getMemoryBuffer(buffer)->getBufferIdentifier().str();
}

bool SourceText::checkEncoding(llvm::StringRef fileKind) {
  if (bytes.trim().empty()) {
    diags.fileError(path(), "empty " + fileKind + ": expected " +
                                (fileKind == "model file" ? "a model or block definitions"
                                                          : "a mesh declaration"));
    return false;
  }
  const auto *bad = reinterpret_cast<const llvm::UTF8 *>(bytes.begin());
  const auto *end = reinterpret_cast<const llvm::UTF8 *>(bytes.end());
  if (!llvm::isLegalUTF8String(&bad, end)) {
    SMLoc at = SMLoc::getFromPointer(reinterpret_cast<const char *>(bad));
    diags.error(SMRange(at, at),
                "invalid UTF-8: byte 0x" + llvm::utohexstr(*bad, /*LowerCase=*/true) +
                    " does not start a valid character; " + fileKind + "s must be UTF-8 text");
    return false;
  }
  if (bytes.find('\0') != llvm::StringRef::npos) {
    const char *nul = bytes.data() + bytes.find('\0');
    diags.error(SMRange(SMLoc::getFromPointer(nul), SMLoc::getFromPointer(nul)),
                "unexpected NUL byte; " + fileKind + "s must be text");
    return false;
  }
  // Map code point index -> byte offset, only when there is non-ASCII text.
  if (llvm::any_of(bytes, [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
    for (size_t i = 0; i < bytes.size(); ++i)
      if ((static_cast<unsigned char>(bytes[i]) & 0xC0) != 0x80)
        byteOffsetOfCodePoint.push_back(i);
    byteOffsetOfCodePoint.push_back(bytes.size());
  }
  return true;
}

SMLoc SourceText::loc(size_t codePoint) const {
  size_t offset = codePoint;
  if (!byteOffsetOfCodePoint.empty())
    offset =
        codePoint < byteOffsetOfCodePoint.size() ? byteOffsetOfCodePoint[codePoint] : bytes.size();
  return SMLoc::getFromPointer(bytes.data() + std::min(offset, bytes.size()));
}

SMRange SourceText::range(const antlr4::Token *start, const antlr4::Token *stop) const {
  if (!start)
    return SMRange();
  if (!stop || stop->getType() == antlr4::Token::EOF ||
      stop->getStopIndex() < start->getStartIndex())
    stop = start;
  if (start->getType() == antlr4::Token::EOF) {
    SMLoc end = loc(start->getStartIndex());
    return SMRange(end, end);
  }
  return SMRange(loc(start->getStartIndex()), loc(stop->getStopIndex() + 1));
}

//===----------------------------------------------------------------------===//
// Syntax errors
//===----------------------------------------------------------------------===//

namespace {

std::string describeTokenType(const antlr4::dfa::Vocabulary &vocab, size_t type) {
  if (type == antlr4::Token::EOF)
    return "end of file";
  std::string name = vocab.getDisplayName(type);
  if (name == "IDENT")
    return "identifier";
  if (name == "INT")
    return "integer";
  if (name == "FLOAT")
    return "number";
  if (name == "STRING")
    return "string";
  return name; // literal tokens display quoted: 'block'
}

std::string describeToken(antlr4::Parser *parser, const antlr4::Token *token) {
  if (!token || token->getType() == antlr4::Token::EOF)
    return "end of file";
  std::string text = token->getText();
  // Literal tokens that look like words are the grammar's keywords.
  bool keyword = !parser->getVocabulary().getLiteralName(token->getType()).empty() &&
                 std::isalpha(static_cast<unsigned char>(text[0]));
  // The caret line shows where; a long token (a string, a name) is cut here.
  if (text.size() > 40) {
    size_t cut = 32;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
      --cut; // not inside a UTF-8 sequence
    text = text.substr(0, cut) + "...";
  }
  return "'" + text + "'" + (keyword ? " (a keyword)" : "");
}

std::string describeExpected(antlr4::Parser *parser, const antlr4::misc::IntervalSet &set) {
  const auto &vocab = parser->getVocabulary();
  std::vector<std::string> names;
  bool expression = false;
  for (const auto &interval : set.getIntervals())
    for (ssize_t t = interval.a; t <= interval.b; ++t) {
      std::string name = describeTokenType(vocab, t);
      expression |= name == "number" || name == "integer";
      names.push_back(name);
    }
  // The start set of an expression is long and says little.
  if (expression && names.size() > 5)
    return "an expression";
  if (names.empty())
    return "something else";
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i)
      out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

class LexerErrors : public antlr4::BaseErrorListener {
public:
  explicit LexerErrors(ParseSession &session) : session(session) {}
  void syntaxError(antlr4::Recognizer *recognizer, antlr4::Token *, size_t, size_t,
                   const std::string &, std::exception_ptr) override {
    auto *lexer = static_cast<antlr4::Lexer *>(recognizer);
    size_t start = lexer->tokenStartCharIndex;
    size_t stop = lexer->getInputStream()->index();
    const auto &source = session.getSource();
    SMRange range(source.loc(start), source.loc(std::max(stop, start + 1)));
    llvm::StringRef rest =
        llvm::StringRef(range.Start.getPointer(), source.text().end() - range.Start.getPointer());
    if (rest.starts_with("\""))
      session.reportSyntaxError(SMRange(range.Start, range.Start),
                                "unterminated string: a string ends with '\"' on the same line");
    else
      session.reportSyntaxError(
          range, "unexpected character '" +
                     rest.take_front(range.End.getPointer() - range.Start.getPointer()).str() +
                     "'");
  }

private:
  ParseSession &session;
};

/// Reports syntax errors as "expected X, found Y" at the offending token.
class SyntaxErrors : public antlr4::DefaultErrorStrategy {
public:
  explicit SyntaxErrors(ParseSession &session) : session(session) {}

protected:
  void reportNoViableAlternative(antlr4::Parser *parser,
                                 const antlr4::NoViableAltException &e) override {
    report(e.getOffendingToken(), "syntax error: unexpected " +
                                      describeToken(parser, e.getOffendingToken()) + ", expected " +
                                      describeExpected(parser, e.getExpectedTokens()));
  }
  void reportInputMismatch(antlr4::Parser *parser,
                           const antlr4::InputMismatchException &e) override {
    report(e.getOffendingToken(), "syntax error: expected " +
                                      describeExpected(parser, e.getExpectedTokens()) + ", found " +
                                      describeToken(parser, e.getOffendingToken()));
  }
  void reportFailedPredicate(antlr4::Parser *parser,
                             const antlr4::FailedPredicateException &e) override {
    report(e.getOffendingToken(),
           "syntax error at " + describeToken(parser, e.getOffendingToken()));
  }
  void reportUnwantedToken(antlr4::Parser *parser) override {
    if (inErrorRecoveryMode(parser))
      return;
    beginErrorCondition(parser);
    antlr4::Token *token = parser->getCurrentToken();
    report(token, "syntax error: unexpected " + describeToken(parser, token) + ", expected " +
                      describeExpected(parser, getExpectedTokens(parser)));
  }
  void reportMissingToken(antlr4::Parser *parser) override {
    if (inErrorRecoveryMode(parser))
      return;
    beginErrorCondition(parser);
    antlr4::Token *token = parser->getCurrentToken();
    report(token, "syntax error: missing " + describeExpected(parser, getExpectedTokens(parser)) +
                      " before " + describeToken(parser, token));
  }

private:
  void report(antlr4::Token *token, const std::string &message) {
    session.reportSyntaxError(session.getSource().range(token, token), message);
  }
  ParseSession &session;
};

} // namespace

void ParseSession::reportSyntaxError(SMRange range, const std::string &message) {
  ++numErrors;
  if (numErrors < kMaxSyntaxErrors)
    diags.error(range, message);
  else if (numErrors == kMaxSyntaxErrors)
    diags.error(range, "too many syntax errors in " + source.path() + "; stopping here");
}

bool ParseSession::lexAndCheck(antlr4::Lexer &lexer, antlr4::CommonTokenStream &tokens) {
  auto listener = std::make_shared<LexerErrors>(*this);
  listeners.push_back(listener);
  lexer.removeErrorListeners();
  lexer.addErrorListener(listener.get());
  tokens.fill();
  if (numErrors)
    return false;
  if (tokens.size() > kMaxTokens) {
    antlr4::Token *first = tokens.get(kMaxTokens);
    diags.error(source.range(first, first),
                "file too large: " + std::to_string(tokens.size()) + " tokens, the limit is " +
                    std::to_string(kMaxTokens) + "; this is the first token past it");
    ++numErrors;
    return false;
  }
  unsigned depth = 0;
  for (antlr4::Token *token : tokens.getTokens()) {
    const std::string &text = token->getText();
    if (llvm::StringRef(text).starts_with("/*")) {
      SMRange at = source.range(token, token);
      diags.error(SMRange(at.Start, at.Start), "unterminated comment: '/*' has no closing '*/'");
      ++numErrors;
      return false;
    }
    if (text == "(" || text == "[" || text == "{") {
      if (++depth > kMaxNesting) {
        diags.error(source.range(token, token),
                    "brackets nested deeper than " + std::to_string(kMaxNesting) + " levels");
        ++numErrors;
        return false;
      }
    } else if ((text == ")" || text == "]" || text == "}") && depth > 0) {
      --depth;
    }
  }
  return true;
}

void ParseSession::checkDepth(antlr4::ParserRuleContext *root) {
  // Iterative, since the tree may be deeper than a recursion could go.
  std::vector<std::pair<antlr4::tree::ParseTree *, size_t>> pending{{root, 1}};
  while (!pending.empty()) {
    auto [tree, depth] = pending.back();
    pending.pop_back();
    if (depth > kMaxTreeDepth) {
      antlr4::Token *token = root->getStart();
      if (auto *rule = dynamic_cast<antlr4::ParserRuleContext *>(tree))
        token = rule->getStart();
      else if (auto *terminal = dynamic_cast<antlr4::tree::TerminalNode *>(tree))
        token = terminal->getSymbol();
      SMRange at = source.range(token, token);
      diags.error(at, "expression nested too deeply: more than " + std::to_string(kMaxTreeDepth) +
                          " levels of operators, calls and brackets; split it into `let` steps");
      ++numErrors;
      return;
    }
    for (antlr4::tree::ParseTree *child : tree->children)
      pending.emplace_back(child, depth + 1);
  }
}

void ParseSession::installErrorHandling(antlr4::Parser &parser) {
  parser.removeErrorListeners(); // errors are reported by the strategy
  parser.setErrorHandler(std::make_shared<SyntaxErrors>(*this));
}

std::string shardc::parse::unquote(const std::string &literal) {
  std::string out;
  for (size_t i = 1; i + 1 < literal.size(); ++i) {
    char c = literal[i];
    if (c == '\\' && i + 2 < literal.size()) {
      char e = literal[++i];
      out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
    } else {
      out += c;
    }
  }
  return out;
}
