//===- LSPServer.h - the language server of model and rules files -*- C++ -*-===//
//
// shardc-lsp's server, as mlir-lsp-server's: the tool parses its options and
// hands the transport to runLSPServer, which answers the editor's messages
// from a DocumentAnalysis of each open model and rules file.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_LANGUAGESERVER_LSPSERVER_H
#define SHARDC_LANGUAGESERVER_LSPSERVER_H

#include <string>
#include <vector>

namespace llvm::lsp {
class JSONTransport;
} // namespace llvm::lsp

namespace shardc {

/// Serves `transport` until the editor exits: 0 after a `shutdown` request,
/// else 1. `importDirs`: the -I folders, searched for imports.
int runLSPServer(llvm::lsp::JSONTransport &transport, std::vector<std::string> importDirs);

} // namespace shardc

#endif
