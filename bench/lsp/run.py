#!/usr/bin/python3
"""Language server latency: how long after an edit of examples/gpt/gpt.shard (with
examples/gpt/tp.rules open beside it) shardc-lsp publishes its diagnostics, and how
long a hover takes, over Content-Length framed JSON-RPC as an editor speaks it.

    bench/lsp/run.py [--edits 40]

Each edit changes the blocks' dropout rate (0.1 <-> 0.2), which the server analyses
again with the rules (parse, sema, the rules' plan) before it publishes. Prints ONE
JSON object on stdout (milliseconds: median, 90th percentile, max); progress goes to
stderr. Sets itself up: builds build/bin/shardc-lsp with scripts/build.sh (which
installs the Debian packages) when it is missing.
"""

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(REPO, "examples", "gpt", "gpt.shard")
RULES = os.path.join(REPO, "examples", "gpt", "tp.rules")
TARGET_MS = 200

_spec = importlib.util.spec_from_file_location("train_bench", os.path.join(REPO, "bench", "train", "run.py"))
tb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tb)


class Client:
    def __init__(self, server):
        self.proc = subprocess.Popen([server], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 1

    def send(self, message):
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def receive(self):
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("shardc-lsp closed its output")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return json.loads(self.proc.stdout.read(length))

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            m = self.receive()
            if m.get("id") == rid:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result")

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def diagnostics_of(self, uri, version):
        while True:
            m = self.receive()
            p = m.get("params", {})
            if m.get("method") == "textDocument/publishDiagnostics" and p.get("uri") == uri \
                    and p.get("version") == version:
                return p["diagnostics"]


def summary(samples):
    xs = sorted(samples)
    return {"median": round(statistics.median(xs), 2),
            "p90": round(xs[int(0.9 * (len(xs) - 1))], 2), "max": round(xs[-1], 2)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edits", type=int, default=40)
    ap.add_argument("--server", default=os.path.join(REPO, "build", "bin", "shardc-lsp"))
    args = ap.parse_args()
    tb.build_shardc(args.server)

    c = Client(args.server)
    c.request("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": {}})
    c.notify("initialized", {})
    model_uri, rules_uri = "file://" + MODEL, "file://" + RULES
    text = open(MODEL).read()
    c.notify("textDocument/didOpen", {"textDocument": {
        "uri": model_uri, "languageId": "shard", "version": 1, "text": text}})
    c.diagnostics_of(model_uri, 1)
    c.notify("textDocument/didOpen", {"textDocument": {
        "uri": rules_uri, "languageId": "shard-rules", "version": 1, "text": open(RULES).read()}})
    if c.diagnostics_of(rules_uri, 1):
        raise RuntimeError("tp.rules has errors against gpt.shard")

    lines = text.split("\n")
    line = next(i for i, l in enumerate(lines) if "rate = 0.1" in l)
    col = lines[line].index("rate = 0.1") + len("rate = ")
    rate = "0.1"
    edits, hovers = [], []
    logits = next(i for i, l in enumerate(lines) if "let logits" in l)
    for version in range(2, args.edits + 2):
        new = "0.2" if rate == "0.1" else "0.1"
        t0 = time.perf_counter()
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": model_uri, "version": version},
            "contentChanges": [{"range": {"start": {"line": line, "character": col},
                                          "end": {"line": line, "character": col + 3}},
                                "text": new}]})
        if c.diagnostics_of(model_uri, version):
            raise RuntimeError(f"edit {version} left errors")
        edits.append((time.perf_counter() - t0) * 1000)
        rate = new
        t0 = time.perf_counter()
        hover = c.request("textDocument/hover", {"textDocument": {"uri": model_uri},
                                                 "position": {"line": logits, "character": 7}})
        hovers.append((time.perf_counter() - t0) * 1000)
        if not hover or "vocab" not in hover["contents"]["value"]:
            raise RuntimeError(f"hover on logits answered {hover}")
    c.request("shutdown", None)
    c.notify("exit", None)
    c.proc.wait(timeout=10)
    print(json.dumps({"bench": "lsp", "model": "examples/gpt/gpt.shard",
                      "rules": "examples/gpt/tp.rules", "edits": args.edits,
                      "diagnostics_after_edit_ms": summary(edits), "hover_ms": summary(hovers),
                      "target_ms": TARGET_MS,
                      "within_target": statistics.median(edits) <= TARGET_MS}))


if __name__ == "__main__":
    main()
