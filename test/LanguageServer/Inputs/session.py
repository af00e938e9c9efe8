"""Turns a language server session written as commands into the JSON-RPC
messages `shardc-lsp -lit-test` reads (separated by `// -----`), between an
initialize and a shutdown/exit. Commands, one per line of the test file (other
lines are ignored); positions are LINE:COLUMN, 1-based as editors show them:

  open PATH                 didOpen of a file under --root, with its text
  open URI                  didOpen of the text on the lines that follow, up to `end`
  change URI L:C-L:C TEXT   didChange replacing a range with TEXT (a JSON string)
  replace URI               didChange replacing the whole text with the lines up to `end`
  close URI                 didClose
  hover URI L:C, definition URI L:C, completion URI L:C, symbols URI
  raw JSON                  a message as written (malformed ones included)
  options JSON              initialize's initializationOptions (%ROOT% is --root)

A PATH (no scheme) is a file under --root and its URI is file://ROOT/PATH.
"""
import argparse
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("script")
    ap.add_argument("--root", default="/")
    args = ap.parse_args()
    args.root = os.path.abspath(args.root)
    lines = open(args.script).read().splitlines()
    messages = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
                 "params": {"processId": 1, "rootUri": "test:///", "capabilities": {}}}]
    next_id = [1]

    def uri(name):
        if "://" in name:
            return name
        return "file://" + os.path.normpath(os.path.join(args.root, name))

    def position(text):
        line, col = text.split(":")
        return {"line": int(line) - 1, "character": int(col) - 1}

    def request(method, params):
        messages.append({"jsonrpc": "2.0", "id": next_id[0], "method": method, "params": params})
        next_id[0] += 1

    def notify(method, params):
        messages.append({"jsonrpc": "2.0", "method": method, "params": params})

    versions = {}
    i = 0
    while i < len(lines):
        words = lines[i].split(" ", 2)
        command = words[0]
        i += 1
        if command not in ("open", "change", "replace", "close", "hover", "definition",
                           "completion", "symbols", "raw", "options"):
            continue

        def body():
            nonlocal i
            text = []
            while lines[i] != "end":
                text.append(lines[i])
                i += 1
            i += 1
            return "\n".join(text) + "\n"

        if command == "raw":
            messages.append(" ".join(words[1:]))
            continue
        if command == "options":
            options = " ".join(words[1:]).replace("%ROOT%", args.root)
            messages[0]["params"]["initializationOptions"] = json.loads(options)
            continue
        doc = uri(words[1])
        versions[doc] = versions.get(doc, 0) + 1
        if command == "open":
            text = open(os.path.join(args.root, words[1])).read() if "://" not in words[1] else body()
            language = "shard-rules" if doc.endswith(".rules") else "shard"
            notify("textDocument/didOpen", {"textDocument": {
                "uri": doc, "languageId": language, "version": versions[doc], "text": text}})
        elif command == "change":
            span, text = words[2].split(" ", 1)
            start, end = span.split("-")
            notify("textDocument/didChange", {
                "textDocument": {"uri": doc, "version": versions[doc]},
                "contentChanges": [{"range": {"start": position(start), "end": position(end)},
                                    "text": json.loads(text)}]})
        elif command == "replace":
            notify("textDocument/didChange", {
                "textDocument": {"uri": doc, "version": versions[doc]},
                "contentChanges": [{"text": body()}]})
        elif command == "close":
            notify("textDocument/didClose", {"textDocument": {"uri": doc}})
        elif command == "symbols":
            request("textDocument/documentSymbol", {"textDocument": {"uri": doc}})
        else:
            request("textDocument/" + command,
                    {"textDocument": {"uri": doc}, "position": position(words[2])})
    messages.append({"jsonrpc": "2.0", "id": next_id[0], "method": "shutdown"})
    messages.append({"jsonrpc": "2.0", "method": "exit"})
    sys.stdout.write("\n// -----\n".join(m if isinstance(m, str) else json.dumps(m)
                                          for m in messages) + "\n")


if __name__ == "__main__":
    main()
