//===- LSPServer.cpp - the language server of model and rules files -------===//
//
// JSON-RPC over stdio on LLVM's LSP support (llvm/Support/LSP), as
// mlir-lsp-server. Each open model file is analysed with the rules file open
// beside it (the one in its folder last opened or edited), else the one
// initialize's options give it, and each open rules file with the model file
// of its folder (the open one, else the one on disk that declares a model):
// diagnostics on open and on every change;
// hover, go to definition, completion and document symbols from the last
// analysis (DocumentAnalysis). Columns are bytes: exact for ASCII text.
//
//===----------------------------------------------------------------------===//

#include "shardc/LanguageServer/LSPServer.h"
#include "shardc/LanguageServer/DocumentAnalysis.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/LSP/Logging.h"
#include "llvm/Support/LSP/Protocol.h"
#include "llvm/Support/LSP/Transport.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <set>

using namespace llvm::lsp;
using shardc::DocumentAnalysis;
using shardc::FilePosition;
using shardc::FileRange;

namespace {

Position toLsp(FilePosition p) { return Position(int(p.line), int(p.column)); }
Range toLsp(const FileRange &r) { return Range(toLsp(r.start), toLsp(r.end)); }
FilePosition fromLsp(const Position &p) {
  return {unsigned(std::max(p.line, 0)), unsigned(std::max(p.character, 0))};
}

/// `initialize` with the server's own options: `initializationOptions.rules`
/// maps a model file to the rules file to check it with (paths absolute or
/// relative to the server's folder), for a model whose rules are not open.
struct ShardInitializeParams {
  InitializeParams lsp;
  std::map<std::string, std::string> rules;
};

bool fromJSON(const llvm::json::Value &value, ShardInitializeParams &result,
              llvm::json::Path path) {
  if (!llvm::lsp::fromJSON(value, result.lsp, path))
    return false;
  const llvm::json::Object *object = value.getAsObject();
  const llvm::json::Object *options = object ? object->getObject("initializationOptions") : nullptr;
  const llvm::json::Object *rules = options ? options->getObject("rules") : nullptr;
  if (!rules)
    return true;
  for (const auto &[model, file] : *rules) {
    std::optional<llvm::StringRef> text = file.getAsString();
    if (!text) {
      path.field("initializationOptions").field("rules").field(model).report("expected a path");
      return false;
    }
    result.rules[shardc::absolutePath(model)] = shardc::absolutePath(*text);
  }
  return true;
}
bool isModel(llvm::StringRef path) { return path.ends_with(".shard"); }

/// Whether a model file's text declares a model (a line that starts `model `),
/// not only blocks.
bool declaresModel(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  return llvm::any_of(lines,
                      [](llvm::StringRef line) { return line.ltrim().starts_with("model "); });
}

class Server {
public:
  Server(MessageHandler &handler, std::vector<std::string> importDirs)
      : importDirs(std::move(importDirs)),
        publish(handler.outgoingNotification<PublishDiagnosticsParams>(
            "textDocument/publishDiagnostics")) {
    handler.method("initialize", this, &Server::onInitialize);
    handler.notification("initialized", this, &Server::onInitialized);
    handler.method("shutdown", this, &Server::onShutdown);
    handler.notification("textDocument/didOpen", this, &Server::onOpen);
    handler.notification("textDocument/didChange", this, &Server::onChange);
    handler.notification("textDocument/didClose", this, &Server::onClose);
    handler.method("textDocument/hover", this, &Server::onHover);
    handler.method("textDocument/definition", this, &Server::onDefinition);
    handler.method("textDocument/completion", this, &Server::onCompletion);
    handler.method("textDocument/documentSymbol", this, &Server::onDocumentSymbol);
  }

  bool shutdownReceived = false;

private:
  struct Document {
    URIForFile uri; // as the editor named it
    int64_t version = 0;
    bool library = false; // a model file that declares no model: blocks for others
    std::shared_ptr<DocumentAnalysis> analysis;
  };

  void onInitialize(const ShardInitializeParams &params, Callback<llvm::json::Value> reply) {
    configuredRules = params.rules;
    llvm::json::Object capabilities{
        {"textDocumentSync", llvm::json::Object{{"openClose", true},
                                                {"change", int(TextDocumentSyncKind::Incremental)},
                                                {"save", true}}},
        {"hoverProvider", true},
        {"definitionProvider", true},
        {"completionProvider",
         llvm::json::Object{{"triggerCharacters", llvm::json::Array{"[", ",", "("}}}},
        {"documentSymbolProvider", true},
    };
    reply(llvm::json::Object{{"capabilities", std::move(capabilities)},
                             {"serverInfo", llvm::json::Object{{"name", "shardc-lsp"}}}});
  }
  void onInitialized(const NoParams &) {}
  void onShutdown(const NoParams &, Callback<std::nullptr_t> reply) {
    shutdownReceived = true;
    reply(nullptr);
  }

  void onOpen(const DidOpenTextDocumentParams &params) {
    std::string path = params.textDocument.uri.file().str();
    texts[path] = params.textDocument.text;
    documents[path] = Document{params.textDocument.uri, params.textDocument.version,
                               isLibraryText(path, params.textDocument.text), nullptr};
    touched(path);
  }

  void onChange(const DidChangeTextDocumentParams &params) {
    std::string path = params.textDocument.uri.file().str();
    auto it = documents.find(path);
    if (it == documents.end())
      return;
    // An edit outside the text (the editor and the server out of step) is
    // dropped whole; the text stays as it was.
    std::string text = texts[path];
    if (llvm::failed(TextDocumentContentChangeEvent::applyTo(params.contentChanges, text))) {
      Logger::error("an edit of {0} outside its text: ignored", path);
      return;
    }
    it->second.library = isLibraryText(path, text);
    it->second.version = params.textDocument.version;
    texts[path] = std::move(text);
    touched(path);
  }

  void onClose(const DidCloseTextDocumentParams &params) {
    std::string path = params.textDocument.uri.file().str();
    publishFor(path, {});
    documents.erase(path);
    texts.erase(path);
    if (llvm::is_contained(rulesOrder, path))
      rulesOrder.erase(llvm::find(rulesOrder, path));
  }

  static bool isLibraryText(llvm::StringRef path, llvm::StringRef text) {
    return isModel(path) && !declaresModel(text);
  }

  /// An open model file that declares no model: blocks for others to import.
  bool isLibrary(const std::string &path) const {
    auto doc = documents.find(path);
    return doc != documents.end() && doc->second.library;
  }

  /// The model file and the rules file analysed together with `path`: for a
  /// model, the rules open beside it, else those configured for it.
  std::pair<std::string, std::string> pairFor(const std::string &path) const {
    llvm::StringRef folder = llvm::sys::path::parent_path(path);
    if (shardc::isRulesFile(path)) {
      for (const auto &[other, doc] : documents)
        if (isModel(other) && !doc.library && llvm::sys::path::parent_path(other) == folder)
          return {other, path};
      return {modelOnDisk(folder), path};
    }
    for (const std::string &rules : llvm::reverse(rulesOrder))
      if (llvm::sys::path::parent_path(rules) == folder)
        return {path, rules};
    auto configured = configuredRules.find(path);
    return {path, configured == configuredRules.end() ? "" : configured->second};
  }

  /// The model file of a folder on disk: the only .shard file there that
  /// declares a model.
  static std::string modelOnDisk(llvm::StringRef folder) {
    std::string found;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(folder, ec), end; it != end && !ec;
         it.increment(ec)) {
      if (!isModel(it->path()))
        continue;
      auto buffer = llvm::MemoryBuffer::getFile(it->path());
      if (!buffer || !declaresModel((*buffer)->getBuffer()))
        continue;
      if (!found.empty())
        return "";
      found = it->path();
    }
    return found;
  }

  /// Analyses what `path` belongs to again and publishes the diagnostics of
  /// every file it concerns (an empty list for a file that had some before).
  void touched(const std::string &path) {
    // A file of blocks only is analysed as the open models that import it,
    // where its blocks have shapes; alone when none does.
    if (isLibrary(path)) {
      std::vector<std::string> users;
      for (const auto &[other, doc] : documents)
        if (other != path && !doc.library && !shardc::isRulesFile(other) && doc.analysis &&
            doc.analysis->reads(path))
          users.push_back(other);
      for (const std::string &user : users)
        touched(user);
      if (!users.empty())
        return;
    }
    if (shardc::isRulesFile(path)) {
      if (llvm::is_contained(rulesOrder, path))
        rulesOrder.erase(llvm::find(rulesOrder, path));
      rulesOrder.push_back(path);
    }
    auto [model, rules] = pairFor(path);
    auto analysis = std::make_shared<DocumentAnalysis>(model, rules, texts, importDirs);
    for (auto &[file, doc] : documents)
      if (file == model || file == rules || (doc.library && analysis->reads(file)))
        doc.analysis = analysis;

    std::map<std::string, std::vector<Diagnostic>> byFile;
    for (const std::string &file : {model, rules})
      if (!file.empty())
        byFile[file];
    for (const shardc::FileDiagnostic &d : analysis->diagnostics()) {
      Diagnostic diag;
      diag.range = toLsp(d.range);
      diag.severity = d.kind == llvm::SourceMgr::DK_Error     ? DiagnosticSeverity::Error
                      : d.kind == llvm::SourceMgr::DK_Warning ? DiagnosticSeverity::Warning
                                                              : DiagnosticSeverity::Information;
      diag.source = "shardc";
      diag.message = d.message;
      if (!d.notes.empty()) {
        diag.relatedInformation.emplace();
        for (const auto &[where, message] : d.notes)
          if (auto uri = uriOf(where.path))
            diag.relatedInformation->emplace_back(Location(*uri, toLsp(where)), message);
      }
      byFile[d.range.path].push_back(std::move(diag));
    }
    std::set<std::string> &before = published[model + "\n" + rules];
    for (const std::string &file : before)
      byFile[file];
    before.clear();
    for (auto &[file, diags] : byFile) {
      if (!diags.empty())
        before.insert(file);
      publishFor(file, std::move(diags));
    }
  }

  /// An open document's URI as the editor gave it, another file's file:// URI.
  std::optional<URIForFile> uriOf(const std::string &path) const {
    if (auto doc = documents.find(path); doc != documents.end())
      return doc->second.uri;
    auto uri = URIForFile::fromFile(path);
    if (!uri) {
      llvm::consumeError(uri.takeError());
      return std::nullopt;
    }
    return *uri;
  }

  void publishFor(const std::string &path, std::vector<Diagnostic> diags) {
    std::optional<URIForFile> uri = uriOf(path);
    if (!uri)
      return;
    auto doc = documents.find(path);
    PublishDiagnosticsParams params(*uri, doc == documents.end() ? 0 : doc->second.version);
    params.diagnostics = std::move(diags);
    publish(params);
  }

  const DocumentAnalysis *analysisOf(const URIForFile &uri) const {
    auto it = documents.find(uri.file().str());
    return it == documents.end() ? nullptr : it->second.analysis.get();
  }

  void onHover(const TextDocumentPositionParams &params, Callback<std::optional<Hover>> reply) {
    const DocumentAnalysis *analysis = analysisOf(params.textDocument.uri);
    std::optional<shardc::HoverText> text =
        analysis ? analysis->hover(params.textDocument.uri.file().str(), fromLsp(params.position))
                 : std::nullopt;
    if (!text)
      return reply(std::nullopt);
    Hover hover(toLsp(text->range));
    hover.contents.value = std::move(text->markdown);
    reply(std::move(hover));
  }

  void onDefinition(const TextDocumentPositionParams &params,
                    Callback<std::vector<Location>> reply) {
    std::vector<Location> locations;
    if (const DocumentAnalysis *analysis = analysisOf(params.textDocument.uri))
      if (auto at =
              analysis->definition(params.textDocument.uri.file().str(), fromLsp(params.position)))
        if (auto uri = uriOf(at->path))
          locations.emplace_back(*uri, toLsp(*at));
    reply(std::move(locations));
  }

  void onCompletion(const CompletionParams &params, Callback<CompletionList> reply) {
    CompletionList list;
    if (const DocumentAnalysis *analysis = analysisOf(params.textDocument.uri))
      for (const shardc::Completion &c :
           analysis->complete(params.textDocument.uri.file().str(), fromLsp(params.position))) {
        static const CompletionItemKind kinds[] = {
            CompletionItemKind::Function, CompletionItemKind::Class,
            CompletionItemKind::Variable, CompletionItemKind::Field,
            CompletionItemKind::Keyword,  CompletionItemKind::EnumMember};
        CompletionItem item(c.label, kinds[c.kind]);
        item.detail = c.detail;
        list.items.push_back(std::move(item));
      }
    reply(std::move(list));
  }

  static DocumentSymbol symbolOf(const shardc::Symbol &s) {
    static const SymbolKind kinds[] = {SymbolKind::Module,   SymbolKind::Class,
                                       SymbolKind::Field,    SymbolKind::Method,
                                       SymbolKind::Variable, SymbolKind::Constant};
    DocumentSymbol symbol(s.name, kinds[s.kind], toLsp(s.range), toLsp(s.selection));
    symbol.detail = s.detail;
    for (const shardc::Symbol &child : s.children)
      symbol.children.push_back(symbolOf(child));
    return symbol;
  }

  void onDocumentSymbol(const DocumentSymbolParams &params,
                        Callback<std::vector<DocumentSymbol>> reply) {
    std::vector<DocumentSymbol> symbols;
    if (const DocumentAnalysis *analysis = analysisOf(params.textDocument.uri))
      for (const shardc::Symbol &s : analysis->symbols(params.textDocument.uri.file().str()))
        symbols.push_back(symbolOf(s));
    reply(std::move(symbols));
  }

  std::vector<std::string> importDirs; // -I
  OutgoingNotification<PublishDiagnosticsParams> publish;
  std::map<std::string, Document> documents;
  std::map<std::string, std::string> texts; // the open documents' text, read by the analysis
  std::vector<std::string> rulesOrder;      // open rules files, the last opened or edited last
  std::map<std::string, std::string> configuredRules;     // model -> rules (initializationOptions)
  std::map<std::string, std::set<std::string>> published; // analysis -> files with diagnostics
};

} // namespace

int shardc::runLSPServer(JSONTransport &transport, std::vector<std::string> importDirs) {
  MessageHandler handler(transport);
  Server server(handler, std::move(importDirs));
  if (llvm::Error error = transport.run(handler)) {
    Logger::error("transport error: {0}", llvm::toString(std::move(error)));
    return 1;
  }
  return server.shutdownReceived ? 0 : 1;
}
