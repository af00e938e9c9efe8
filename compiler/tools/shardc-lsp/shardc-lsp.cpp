//===- shardc-lsp.cpp - the language server of model and rules files ------===//
//
// shardc-lsp [--lit-test] [--log=LEVEL] [-I DIR]: JSON-RPC over stdio, served
// by the language server of lib/LanguageServer (LSPServer.h).
//
//===----------------------------------------------------------------------===//

#include "shardc/LanguageServer/LSPServer.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/LSP/Logging.h"
#include "llvm/Support/LSP/Protocol.h"
#include "llvm/Support/LSP/Transport.h"

using namespace llvm::lsp;

static llvm::cl::opt<bool> litTest(
    "lit-test",
    llvm::cl::desc("Messages separated by '// -----' lines instead of Content-Length headers, "
                   "and pretty-printed replies (for lit tests)"));
static llvm::cl::list<std::string> importDirs("I",
                                              llvm::cl::desc("Add a folder to search for imports"),
                                              llvm::cl::value_desc("dir"), llvm::cl::Prefix);
static llvm::cl::opt<Logger::Level> logLevel(
    "log", llvm::cl::desc("What the server logs on stderr"), llvm::cl::init(Logger::Level::Error),
    llvm::cl::values(clEnumValN(Logger::Level::Error, "error", "errors only"),
                     clEnumValN(Logger::Level::Info, "info", "each message"),
                     clEnumValN(Logger::Level::Debug, "verbose", "each message's content")));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv, "shardc-lsp: the language server of shard files\n");
  Logger::setLogLevel(logLevel);
  // Test documents are named test:///model.shard.
  URIForFile::registerSupportedScheme("test");
  JSONTransport transport(stdin, llvm::outs(),
                          litTest ? JSONStreamStyle::Delimited : JSONStreamStyle::Standard,
                          /*PrettyOutput=*/litTest);
  return shardc::runLSPServer(transport,
                              std::vector<std::string>(importDirs.begin(), importDirs.end()));
}
