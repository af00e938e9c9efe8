#!/usr/bin/env python3
"""The include graph between compiler folders follows the pipeline.

Reads every `#include "shardc/<Folder>/..."` in compiler/lib and
compiler/include and checks two rules:

1. A folder includes only itself and the folders before it in ORDER, so the
   graph has no cycle and reads from the front end to the tools.
2. A post-partition folder (POST_PARTITION) includes none of the front end's
   folders (FRONT_END): the passes after partitioning read the IR alone, with
   what shardc/IR names on it, never Sema's types.

Usage: include_graph.py COMPILER_DIR [--print]. Exits 1 naming each offending
include (file:line) and any cycle; --print lists the folder graph.
"""

import os
import re
import sys

# Bottom to top: each folder may include the folders above it in this list.
ORDER = [
    "Support",         # diagnostics, sizes, the mesh: no MLIR
    "IR",              # what the stages record on the IR and read back
    "AST",
    "Parse",
    "Sema",
    "Frontend",        # files found and parsed, the typed program built
    "Train",           # gradients, optimizer, step functions: the typed graph
    "MLIRGen",
    "Shard",           # sharding models and collective rewrites
    "Schedule",        # train_step from microbatches, stages, the layer loop
    "Optimize",
    "Conversion",
    "Report",
    "Manifest",
    "Pipeline",
    "Tune",
    "LanguageServer",
    "Export",          # shardc export: a training checkpoint's GPT for PyTorch
]

FRONT_END = {"AST", "Parse", "Sema", "Frontend", "Train", "MLIRGen"}
POST_PARTITION = {"Shard", "Schedule", "Optimize", "Conversion", "Report"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"shardc/([A-Za-z]+)/')


def folder_of(compiler, path):
    """The folder a file of lib/<F>/ or include/shardc/<F>/ belongs to."""
    parts = os.path.relpath(path, compiler).split(os.sep)
    if parts[0] == "lib" and len(parts) > 2:
        return parts[1]
    if parts[:2] == ["include", "shardc"] and len(parts) > 3:
        return parts[2]
    return None


def edges(compiler):
    """(from folder, to folder) -> [file:line, ...] for every cross-folder include."""
    found = {}
    for top in ("lib", os.path.join("include", "shardc")):
        for root, _, files in os.walk(os.path.join(compiler, top)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp", ".def", ".inc")):
                    continue
                path = os.path.join(root, name)
                source = folder_of(compiler, path)
                if source is None:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) != source:
                            where = f"{os.path.relpath(path, compiler)}:{number}"
                            found.setdefault((source, m.group(1)), []).append(where)
    return found


def cycles(graph):
    """The strongly connected components of more than one folder (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    compiler = argv[1]
    found = edges(compiler)
    folders = {f for f in os.listdir(os.path.join(compiler, "lib"))} | {
        f for f in os.listdir(os.path.join(compiler, "include", "shardc"))}
    rank = {f: i for i, f in enumerate(ORDER)}
    errors = []

    for f in sorted(folders - set(ORDER)):
        errors.append(f"folder {f} is not in ORDER of {__file__}: place it in the pipeline")

    for (source, target), where in sorted(found.items()):
        if source not in rank or target not in rank:
            if target not in folders and target not in rank:
                errors.append(f"{where[0]}: includes shardc/{target}/, which is no folder")
            continue
        if rank[target] > rank[source]:
            errors.append(f"{source} -> {target} goes against the pipeline ({target} comes "
                          f"after {source} in ORDER): {', '.join(where)}")
        if source in POST_PARTITION and target in FRONT_END:
            errors.append(f"{source} -> {target}: a post-partition folder includes the front "
                          f"end's headers (read the IR alone; shared names go to shardc/IR): "
                          f"{', '.join(where)}")

    graph = {}
    for source, target in found:
        graph.setdefault(source, set()).add(target)
    for component in cycles(graph):
        errors.append("cycle between folders: " + " <-> ".join(component))

    if "--print" in argv:
        for source in sorted(graph, key=lambda f: rank.get(f, len(ORDER))):
            targets = sorted(graph[source], key=lambda f: rank.get(f, len(ORDER)))
            print(f"{source} -> {' '.join(targets)}")

    if errors:
        for e in errors:
            print("include graph: error: " + e, file=sys.stderr)
        return 1
    print(f"include graph: {len(found)} folder edges follow the pipeline")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
