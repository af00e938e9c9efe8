#!/usr/bin/env python3
"""Random well-typed shard programs (a model file, maybe an imported module, a rules
file), deterministic by seed, and invalid programs derived from them by one known
defect each.

    shardgen.py SEED OUTDIR [--all-layouts]

writes OUTDIR/p.shard, OUTDIR/p.rules (and OUTDIR/genlib.shard when the program
imports it). mutate.py derives invalid programs from these; checkprog.py checks both.

What a program draws from: inputs (a 2-D batch of features, NHWC images, i32 labels);
lets through every builtin (matmul and '@', relu exp log tanh sigmoid sqrt rsqrt gelu,
+ - * / and negation with broadcasting by name and numbers, contract over shared axes,
rename, causal_mask before a softmax, conv2d with square and rectangular kernels and
strides 1-3 under SAME/VALID,
avg_pool with any window/stride/padding, flatten, reshape, log_softmax, softmax,
softmax_cross_entropy on one_hot labels, sum/mean over axes, argmax, comparisons,
the named-axis builtins (softmax/log_softmax/max/min over axes, cumsum, top_k,
top_k_indices, where, transpose),
dropout, values through 0-d tensors: vector @ vector, one_hot of an argmax, scalar
parameters, reductions of scalars); blocks defined in the file or in an imported module, with int/float/string/
axis config parameters (defaults, given, inferred axes, size arithmetic), parameters of
rank 1-3 with every initialiser, sub-blocks, stdlib layers (Dense, MLP, Conv, AvgPool);
scan of blocks with sub-blocks and dropout inside; sharding constraints (with and
without sizes); metrics (f32 and i32); every optimizer (with a learning-rate schedule
and global-norm clipping or not) or none; model config
parameters used in sizes. Rules: a mesh of 1-3 axes, rules (one mesh axis, two, or none)
for axes whose sizes divide, each mesh axis for one logical axis, overrides by parameter
path or glob, activation checkpointing (remat) of a scan by name or glob, microbatches,
a pipeline over the one scan's layers.
Flags: `--set` of the model's config parameters (p.flags, one per line).

Values stay finite: log only of sigmoid(.) + 1, division only by sigmoid(.) + 1, exp
only of tanh(.). Layouts the partitioner does not handle yet (a split class axis of
softmax_cross_entropy / log_softmax / softmax, split spatial axes) are not drawn, nor is
a split `layer` axis (an error by the language's rules); --all-layouts draws them.
"""
import argparse
import json
import os
import random
import sys

SPATIAL = {"h", "w"}


def in_order(small, big):
    """Whether the dims `small` are dims of `big` in the same order."""
    rest = iter(big)
    return all(d in rest for d in small)


class Value:
    def __init__(self, name, dtype, dims):
        self.name, self.dtype, self.dims = name, dtype, list(dims)  # dims: [(axis, size)]

    def axes(self):
        return [a for a, _ in self.dims]


class Program:
    def __init__(self, seed, all_layouts=False):
        self.r = random.Random(seed)
        # The flags draw from their own stream: the programs stay those of each seed.
        self.flag_r = random.Random(f"flags {seed}")
        # So do the named-axis builtins (op_named_axes), and their names are their own.
        self.named_r = random.Random(f"named {seed}")
        self.named_counter = 0
        self.all_layouts = all_layouts
        self.sizes = {}          # logical axis -> size, one size per name everywhere
        # The layer axis scan adds cannot be split (a located error), nor kernels.
        self.unsplittable = set(SPATIAL) | {"kh", "kw", "layer"}
        self.blocks = []         # text of blocks defined in the model file
        self.lib_blocks = []     # text of blocks defined in genlib.shard
        self.lets = []           # model lines after the inputs
        self.values = []         # tensors usable by later lets
        self.params = []         # parameter paths (for overrides) with their ranks
        self.scans = []          # scan instances (for remat)
        self.accumulates = False # a loss microbatches can sum
        self.mixes_batch = False # an op mixing the batch's rows (a causal mask over it)
        self.sets = []           # --set NAME=VALUE flags for the model's config
        self.counter = 0
        self.block_names = set()
        self.inputs = []
        self.labels = None
        self.uses_nn = False

    # ---- names and sizes
    def fresh(self, prefix):
        self.counter += 1
        name = f"{prefix}{self.counter}"
        # f32 and i32 are keywords (the long run's only false failures).
        return self.fresh(prefix) if name in ("f32", "i32") else name

    def axis(self, prefix, size=None, splittable=True):
        name = self.fresh(prefix)
        self.sizes[name] = size if size is not None else self.r.choice([4, 8])
        if not splittable:
            self.unsplittable.add(name)
        return name

    def pick(self, pred):
        candidates = [v for v in self.values if pred(v)]
        return self.r.choice(candidates) if candidates else None

    def let(self, expr, dims, dtype="f32", constrain=True):
        name = self.fresh("v")
        line = f"  let {name} = {expr}"
        if constrain and self.r.random() < 0.15:
            shown = [f"{a} = {s}" if self.r.random() < 0.3 else a for a, s in dims]
            line += " : [" + ", ".join(shown) + "]"
        self.lets.append(line)
        v = Value(name, dtype, dims)
        self.values.append(v)
        return v

    def safe(self, v):
        """An expression of v in (0, 1), for log and division."""
        return f"sigmoid({v.name})"

    # ---- blocks
    def new_block(self, text, in_lib=None):
        if in_lib is None:
            in_lib = self.r.random() < 0.3
        (self.lib_blocks if in_lib else self.blocks).append(text)

    def init(self, rank):
        if rank >= 2:
            return self.r.choice(["xavier_normal", "xavier_uniform", "lecun_normal", "he_normal",
                                  "normal(stddev = 0.1)", "uniform(scale = 0.2)"])
        return self.r.choice(["zeros", "ones", "constant(value = 0.1)", "normal(stddev = 0.1)",
                              "uniform(scale = 0.1)"])

    def linear_block(self):
        """A custom dense layer: config int and axis parameters, a bias sometimes."""
        name = self.fresh("Lin")
        bias = self.r.random() < 0.6
        lines = [f"block {name}(n: int, out: axis, in: axis, scale: float = 1.0) {{",
                 f"  param W: f32[in, out = n] init {self.init(2)}"]
        if bias:
            lines.append(f"  param b: f32[out] init {self.init(1)}")
        lines.append("  forward(x: f32[batch, in]) -> f32[batch, out] {")
        product = "(x @ W)" if self.r.random() < 0.7 else "matmul(x, W)"
        lines.append(f"    return {product} * scale" + (" + b" if bias else ""))
        lines += ["  }", "}"]
        self.new_block("\n".join(lines))
        return name, bias

    def gain_block(self, lead):
        """A per-feature gain with an inferred axis parameter after `lead` axes."""
        name = self.fresh("Gain")
        self.new_block("\n".join([
            f"block {name}(in: axis) {{",
            f"  param g: f32[in] init {self.r.choice(['ones', 'constant(value = 0.9)'])}",
            f"  forward(x: f32[{lead}, in]) -> f32[{lead}, in] {{",
            "    return x * g",
            "  }", "}"]))
        return name

    # ---- ops; each returns a new value or None when it does not apply
    def op_unary(self):
        v = self.pick(lambda v: v.dtype == "f32")
        kind = self.r.choice(["relu", "tanh", "sigmoid", "exp", "log", "neg", "sqrt", "rsqrt",
                              "gelu"])
        expr = {"relu": f"relu({v.name})", "tanh": f"tanh({v.name})",
                "sigmoid": f"sigmoid({v.name})", "exp": f"exp(tanh({v.name}))",
                "log": f"log({self.safe(v)} + 1.0)", "neg": f"-{v.name}",
                "sqrt": f"sqrt({self.safe(v)} + 1.0)", "rsqrt": f"rsqrt({self.safe(v)} + 1.0)",
                "gelu": f"gelu({v.name})"}[kind]
        return self.let(expr, v.dims)

    def op_binary(self):
        v = self.pick(lambda v: v.dtype == "f32")
        # A partner of the same axes, or of some of them in order (broadcast by name), or
        # a number.
        partners = [u for u in self.values if u.dtype == "f32" and u is not v and
                    len(u.dims) <= len(v.dims) and in_order(u.dims, v.dims)]
        op = self.r.choice(["+", "-", "*", "/"])
        if partners and self.r.random() < 0.7:
            u = self.r.choice(partners)
            if op == "/":
                expr = f"{v.name} / ({self.safe(u)} + 1.0)"
            elif self.r.random() < 0.5 or len(u.dims) != len(v.dims):
                expr = f"{v.name} {op} {u.name}"
            else:
                expr = f"{u.name} {op} {v.name}"
        else:
            number = self.r.choice(["0.5", "2.0", "1.5", "3"]) if op != "/" else "2.0"
            expr = f"{v.name} {op} {number}" if self.r.random() < 0.5 or op == "/" else \
                f"{number} {op} {v.name}"
        return self.let(expr, v.dims)

    def op_contract(self):
        """contract over some shared axes (the others shared are batch axes); a value's
        first axis (the batch, which blocks expect first) is never summed."""
        v = self.pick(lambda v: v.dtype == "f32" and len(v.dims) >= 2)
        if not v:
            return None
        sizes = dict(v.dims)
        # An axis both have is summed or kept as a batch axis: one size in both (a
        # pooled value keeps its input's h and w names at other sizes).
        partners = [u for u in self.values if u.dtype == "f32" and set(u.dims) & set(v.dims[1:])
                    and all(sizes.get(a, s) == s for a, s in u.dims)]
        if not partners:
            return None
        u = self.r.choice(partners)
        shared = [d for d in v.dims[1:] if d in u.dims]
        over = self.r.sample(shared, self.r.randrange(1, len(shared) + 1))
        dims = [d for d in v.dims if d not in over] + [d for d in u.dims if d[0] not in v.axes()]
        if not 1 <= len(dims) <= 4:
            return None
        return self.let(f"contract({v.name}, {u.name}, over = [{', '.join(a for a, _ in over)}])",
                        dims)

    def op_rename(self):
        v = self.pick(lambda v: v.dtype == "f32" and len(v.dims) >= 2)
        if not v:
            return None
        old, size = self.r.choice(v.dims[1:])  # the batch stays first
        new = self.axis("r", size, splittable=old not in self.unsplittable)
        dims = [(new, size) if a == old else (a, s) for a, s in v.dims]
        return self.let(f"rename({v.name}, from = {old}, to = {new})", dims)

    def op_causal(self):
        """A causal mask over two axes, then the softmax over the key (the last) axis."""
        v = self.pick(lambda v: v.dtype == "f32" and len(v.dims) >= 2)
        if not v:
            return None
        key = v.dims[-1][0]
        query = self.r.choice(v.dims[:-1])[0]
        self.unsplittable.add(key)
        # A row's mask depends on its place in the batch: not for microbatches.
        self.mixes_batch |= "batch" in (query, key)
        return self.let(f"softmax(causal_mask({v.name}, query = {query}, key = {key}))", v.dims)

    def op_dense(self):
        v = self.pick(lambda v: v.dtype == "f32" and len(v.dims) == 2)
        if not v:
            return None
        out = self.axis("f")
        n = self.sizes[out]
        inst = self.fresh("d")
        style = self.r.randrange(4)
        if style == 0:  # the stdlib's Dense, instance bound by let
            self.uses_nn = True
            self.lets.append(f"  let {inst} = Dense({n}, out = {out})")
            self.params += [(f"{inst}.W", 2), (f"{inst}.b", 1)]
            return self.let(f"{inst}({v.name})", [v.dims[0], (out, n)])
        if style == 1:  # stdlib MLP: nested sub-blocks, an axis parameter with a default
            self.uses_nn = True
            mid = self.axis("f")
            self.lets.append(f"  let {inst} = MLP({self.sizes[mid]}, {n}, mid = {mid}, out = {out})")
            self.params += [(f"{inst}.up.W", 2), (f"{inst}.up.b", 1), (f"{inst}.down.W", 2),
                            (f"{inst}.down.b", 1)]
            return self.let(f"{inst}({v.name})", [v.dims[0], (out, n)])
        name, bias = self.linear_block()
        size = f"{n // 2} * 2" if n % 2 == 0 and self.r.random() < 0.5 else str(n)
        scale = f", scale = {self.r.choice(['0.5', '2.0'])}" if self.r.random() < 0.4 else ""
        if style == 2:  # instance bound by let
            self.lets.append(f"  let {inst} = {name}({size}, out = {out}{scale})")
            self.params += [(f"{inst}.W", 2)] + ([(f"{inst}.b", 1)] if bias else [])
            return self.let(f"{inst}({v.name})", [v.dims[0], (out, n)])
        # An inline instance: named <Block>_<n> in its scope.
        return self.let(f"{name}({size}, out = {out}{scale})({v.name})", [v.dims[0], (out, n)])

    def op_reduce(self):
        v = self.pick(lambda v: v.dtype == "f32" and len(v.dims) >= 2)
        if not v:
            return None
        rest = v.dims[1:]
        over = self.r.sample(rest, self.r.randrange(1, len(rest) + 1))
        kept = [d for d in v.dims if d not in over]
        fn = self.r.choice(["sum", "mean"])
        return self.let(f"{fn}({v.name}, over = [{', '.join(a for a, _ in over)}])", kept)

    def op_softmax(self):
        v = self.pick(lambda v: v.dtype == "f32" and len(v.dims) == 2)
        if not v:
            return None
        self.unsplittable.add(v.dims[-1][0])
        return self.let(f"{self.r.choice(['softmax', 'log_softmax'])}({v.name})", v.dims)

    def op_dropout(self):
        v = self.pick(lambda v: v.dtype == "f32")
        rate = self.r.choice(["0.1", "0.25", "0.5", "0.0"])
        return self.let(f"dropout({v.name}, {rate})", v.dims)

    def op_reshape(self):
        v = self.pick(lambda v: v.dtype == "f32" and len(v.dims) == 2 and v.dims[1][1] % 2 == 0)
        if not v:
            return None
        n = v.dims[1][1]
        a = self.axis("s", 2)
        b = self.axis("f", n // 2)
        if self.r.random() < 0.5:
            return self.let(f"reshape({v.name}, [{v.dims[0][0]} = {v.dims[0][1]}, {a} = 2, "
                            f"{b} = {n // 2}])", [v.dims[0], (a, 2), (b, n // 2)])
        return self.let(f"reshape({v.name}, [{v.dims[0][0]}, {a} = 2, {b} = {n // 2}])",
                        [v.dims[0], (a, 2), (b, n // 2)])

    def op_flatten(self):
        v = self.pick(lambda v: v.dtype == "f32" and len(v.dims) >= 3)
        if not v:
            return None
        n = 1
        for _, s in v.dims[1:]:
            n *= s
        f = self.axis("f", n)
        if n % 4:
            self.unsplittable.add(f)
        into = f"[{f} = {n}]" if self.r.random() < 0.5 else f"[{f}]"
        return self.let(f"flatten({v.name}, {into})", [v.dims[0], (f, n)])

    def op_conv(self):
        v = self.pick(lambda v: v.dtype == "f32" and len(v.dims) == 4)
        if not v:
            return None
        (b, bs), (h, hs), (w, ws), (c, cs) = v.dims
        k = self.r.choice([1, 2, 3])
        # A rectangular kernel sometimes (the custom block's; nn's Conv is square).
        kw = self.r.choice([1, 2, 3]) if self.r.random() < 0.3 else k
        stride = self.r.choice([1, 1, 2, 3])
        padding = self.r.choice(["SAME", "VALID"])
        if padding == "VALID" and (k > hs or kw > ws):
            padding = "SAME"
        oh = -(-hs // stride) if padding == "SAME" else (hs - k) // stride + 1
        ow = -(-ws // stride) if padding == "SAME" else (ws - kw) // stride + 1
        out = self.axis("c")
        n = self.sizes[out]
        # conv2d keeps the input's spatial axis names.
        if kw == k and self.r.random() < 0.4:
            self.uses_nn = True
            inst = self.fresh("conv")
            self.lets.append(f"  let {inst} = Conv({n}, out = {out}, kernel = {k}, stride = {stride}, "
                             f"padding = \"{padding}\")")
            self.params += [(f"{inst}.w", 4), (f"{inst}.b", 1)]
            return self.let(f"{inst}({v.name})", [(b, bs), (h, oh), (w, ow), (out, n)])
        name = self.fresh("Conv")
        self.new_block("\n".join([
            f"block {name}(features: int, out: axis, k: int, pad: string = \"{padding}\") {{",
            f"  param kernel: f32[kh = k, kw = {'k' if kw == k else kw}, {c}, out = features] "
            f"init {self.init(4)}",
            f"  forward(x: f32[{b}, {h}, {w}, {c}]) -> f32[{b}, {h}, {w}, out] {{",
            f"    return conv2d(x, kernel, stride = {stride}, padding = pad)",
            "  }", "}"]))
        inst = self.fresh("conv")
        self.lets.append(f"  let {inst} = {name}({n}, out = {out}, k = {k})")
        self.params.append((f"{inst}.kernel", 4))
        return self.let(f"{inst}({v.name})", [(b, bs), (h, oh), (w, ow), (out, n)])

    def op_pool(self):
        v = self.pick(lambda v: v.dtype == "f32" and len(v.dims) == 4 and
                      min(v.dims[1][1], v.dims[2][1]) >= 2)
        if not v:
            return None
        (b, bs), (h, hs), (w, ws), (c, cs) = v.dims
        window = self.r.randrange(1, min(hs, ws, 3) + 1)
        stride = self.r.choice([0, 1, 2, 3])  # 0: the window
        padding = self.r.choice(["SAME", "VALID"])
        s = stride or window
        oh = -(-hs // s) if padding == "SAME" else (hs - window) // s + 1
        ow = -(-ws // s) if padding == "SAME" else (ws - window) // s + 1
        args = [f"window = {window}"] + ([f"stride = {stride}"] if stride else []) + \
            ([f"padding = \"{padding}\""] if padding == "SAME" or self.r.random() < 0.5 else [])
        return self.let(f"avg_pool({v.name}, {', '.join(args)})", [(b, bs), (h, oh), (w, ow), (c, cs)])

    def op_scan(self):
        v = self.pick(lambda v: v.dtype == "f32" and len(v.dims) in (2, 3))
        if not v:
            return None
        f, fs = v.dims[-1]
        name = self.fresh("Layer")
        hid = self.axis("hid")
        depth = self.sizes[hid]
        lead = ", ".join(a for a, _ in v.dims[:-1])
        sub = self.r.random() < 0.4
        dropout = self.r.random() < 0.4
        lines = [f"block {name}(depth: int = {depth}) {{",
                 f"  param W1: f32[{f}, {hid} = depth] init {self.init(2)}",
                 f"  param W2: f32[{hid}, {f}] init {self.init(2)}"]
        if self.r.random() < 0.5:
            lines.append(f"  param g: f32[{f}] init {self.init(1)}")
            gain = " * g"
        else:
            gain = ""
        if sub:
            lines.append(f"  let inner = {self.gain_block(lead)}()")
        lines.append(f"  forward(x: f32[{lead}, {f}]) -> f32[{lead}, {f}] {{")
        body = f"relu(x @ W1)"
        if dropout:
            lines.append(f"    let y = dropout({body}, 0.1)")
            body = "y"
        out = f"{body} @ W2{gain}"
        if sub:
            out = f"inner({out})"
        lines.append(f"    return tanh({out}) + x")
        lines += ["  }", "}"]
        self.new_block("\n".join(lines))
        layers = self.r.choice([1, 2, 3, 4])
        inst = self.fresh("stack")
        if self.r.random() < 0.5:
            self.lets.append(f"  let {inst} = scan({name}(), {layers})")
            call = f"{inst}({v.name})"
        else:
            self.lets.append(f"  let {inst} = scan({name}(depth = {depth}), {layers})")
            call = f"{inst}({v.name})"
        self.params += [(f"{inst}.W1", 3), (f"{inst}.W2", 3)]
        self.scans.append(inst)
        self.sizes.setdefault("layer", layers)
        if self.sizes["layer"] != layers or layers % 2:
            self.unsplittable.add("layer")
        return self.let(call, v.dims)

    def op_scalars(self):
        """Values through 0-d tensors: a vector @ vector, a scalar parameter (unused, or
        one the loss is linear in: constant gradients), reductions of a 0-d value, and
        one_hot of an argmax of a vector."""
        v = self.pick(lambda v: v.dtype == "f32" and len(v.dims) == 2)
        if not v:
            return None
        name, inst = self.fresh("Vec"), self.fresh("s")
        k = self.axis("k", 4, splittable=False)
        self.new_block("\n".join([
            f"block {name}(in: axis) {{",
            f"  param v: f32[in] init {self.init(1)}",
            f"  param w: f32[in] init {self.init(1)}",
            f"  param c: f32[] init {self.init(0)}",
            f"  param unused: f32[] init {self.init(0)}",
            "  forward(x: f32[batch, in]) -> f32[batch] {",
            "    let s = v @ w",
            f"    let picked = one_hot(argmax(w), [{k} = 4])",
            "    return mean(x, over = [in]) * tanh(s) + c + sum(picked) / 4.0 + mean(s) - sum(s)",
            "  }", "}"]))
        self.lets.append(f"  let {inst} = {name}()")
        self.params += [(f"{inst}.v", 1), (f"{inst}.w", 1)]
        return self.let(f"{inst}({v.name})", v.dims[:1])

    def op_compare(self):
        """A comparison reduced to a metric-like scalar, used in the loss as a constant."""
        v = self.pick(lambda v: v.dtype == "f32" and len(v.dims) == 2)
        if not v:
            return None
        return self.let(f"mean({v.name} > 0.0, over = [{v.dims[1][0]}])", [v.dims[0]])

    def op_named_axes(self, last):
        """The named-axis builtins on `last` [batch, f] viewed as [batch, g, h]: softmax /
        log_softmax over axes, max / min, cumsum (exclusive, reversed), top_k and
        top_k_indices (through one_hot and contract, as a router's gate), where (a number
        for a branch), transpose; summed back into a value of last's shape. It draws
        from its own stream and names, and g and h are not in the rules (replicated), so
        the rest of the program and its rules are those of the seed without it."""
        r = self.named_r
        if last.dtype != "f32" or len(last.dims) != 2 or last.dims[1][1] % 2 or r.random() < 0.4:
            return None
        f, n = last.dims[1]

        def name(prefix):
            self.named_counter += 1
            return f"{prefix}{self.named_counter}"

        def let(expr):
            v = name("nv")
            self.lets.append(f"  let {v} = {expr}")
            return v

        g, h, pick = name("ng"), name("nh"), name("nk")
        # Apart by at least 0.1 along h, so that no two elements tie (a relu's zeros would)
        # and a finite difference does not cross from one top element to another.
        t = let(f"reshape({last.name}, [batch, {g} = 2, {h} = {n // 2}])")
        t = let(f"{t} + cumsum({t} * 0.0 + 0.1, over = {h})")
        terms = []
        choices = ["softmax", "log_softmax", "extremum", "cumsum", "top_k", "gate", "where",
                   "transpose"]
        for op in r.sample(choices, r.randrange(2, 5)):
            if op in ("softmax", "log_softmax"):
                over = r.choice([[g], [h], [g, h]])
                terms.append(let(f"{op}({t}, over = [{', '.join(over)}])"))
            elif op == "extremum":
                over = r.choice([h, f"{g}, {h}"])
                terms.append(let(f"{r.choice(['max', 'min'])}({t}, over = [{over}])"))
            elif op == "cumsum":
                flags = r.choice(["", ", exclusive = true", ", reverse = true",
                                  ", exclusive = true, reverse = true"])
                terms.append(let(f"cumsum(tanh({t}), over = {r.choice([g, h])}{flags})"))
            elif op == "top_k":
                k = r.randrange(1, n // 2 + 1)
                best = let(f"top_k({t}, {k}, over = {h}, into = {pick})")
                terms.append(let(f"sum({best}, over = [{pick}])"))
            elif op == "gate":
                chosen = let(f"one_hot(top_k_indices({t}, 1, over = {h}, into = {pick}), "
                             f"[{h} = {n // 2}])")
                gates = let(f"contract({chosen}, softmax({t}, over = [{h}]), over = [{h}])")
                terms.append(let(f"sum({gates}, over = [{pick}])"))
            elif op == "where":
                terms.append(let(f"where({t} > 0.0, {t}, {r.choice(['0.5', '-1.0'])})"))
            else:
                flipped = let(f"transpose({t}, to = [batch, {h}, {g}])")
                terms.append(let(f"sum({flipped}, over = [{g}])"))
        total = let(" + ".join([t] + terms))
        out = Value(let(f"reshape({total}, [batch, {f} = {n}])"), "f32", last.dims)
        self.values.append(out)
        return out

    # ---- the whole program
    def build(self):
        r = self.r
        batch = 8
        self.sizes["batch"] = batch
        feat = self.axis("f")
        # Sizes from the model's config parameters, with arithmetic, sometimes.
        config = r.random() < 0.3
        width = f"width * 2" if config else str(self.sizes[feat])
        x = Value("x", "f32", [("batch", batch), (feat, self.sizes[feat])])
        self.inputs.append(f"  input x: f32[batch = {batch}, {feat} = {width}]")
        self.values.append(x)
        if r.random() < 0.45:
            hs, ws = r.choice([4, 5, 6]), r.choice([4, 6, 7])
            self.sizes["h"], self.sizes["w"] = hs, ws
            c = self.axis("c", r.choice([1, 2, 4]))
            self.inputs.append(f"  input img: f32[batch, h = {hs}, w = {ws}, {c} = {self.sizes[c]}]")
            self.values.append(Value("img", "f32", [("batch", batch), ("h", hs), ("w", ws),
                                                   (c, self.sizes[c])]))
        classification = r.random() < 0.5
        if classification:
            self.inputs.append("  input labels: i32[batch]")
        ops = [self.op_unary, self.op_binary, self.op_dense, self.op_dense, self.op_reduce,
               self.op_softmax, self.op_dropout, self.op_reshape, self.op_flatten, self.op_conv,
               self.op_conv, self.op_pool, self.op_scan, self.op_compare, self.op_scalars,
               self.op_contract, self.op_rename, self.op_causal]
        for _ in range(r.randrange(2, 9)):
            for _attempt in range(5):
                if r.choice(ops)() is not None:
                    break
        self.op_named_axes(self.values[-1])
        # Everything ends in one 2-D value: flatten images, dense the rest.
        last = self.values[-1]
        if len(last.dims) > 2:
            last = self.op_flatten_value(last)
        elif len(last.dims) == 1:
            f = self.axis("f", 1)
            self.unsplittable.add(f)
            last = self.let(f"reshape({last.name}, [batch = 8, {f} = 1])", [last.dims[0], (f, 1)])
        metrics = []
        if classification:
            classes = self.axis("classes", r.choice([3, 4, 10]), splittable=self.all_layouts)
            self.uses_nn = True
            self.lets.append(f"  let head = Dense({self.sizes[classes]}, out = {classes})")
            self.params += [("head.W", 2), ("head.b", 1)]
            self.lets.append(f"  let logits = head({last.name})")
            self.unsplittable.add(classes) if not self.all_layouts else None
            loss = (f"mean(softmax_cross_entropy(logits, one_hot(labels, "
                    f"[{classes} = {self.sizes[classes]}])))")
            metrics.append("  metric accuracy = mean(argmax(logits) == labels)")
            if r.random() < 0.5:
                metrics.append("  metric hits = sum(argmax(logits) == labels)")
            if r.random() < 0.3:
                metrics.append("  metric top = sum(argmax(logits))")
        else:
            loss = f"mean({last.name} * {last.name})" if r.random() < 0.5 else \
                f"sum(tanh({last.name})) / 8.0"
            if r.random() < 0.5:
                metrics.append(f"  metric level = mean({last.name})")
        opt = r.choice(["", "sgd", "momentum", "adam", "adamw"])
        # A schedule and global-norm clipping, which every optimizer takes.
        extra = r.choice(["", "", ", warmup = 1, decay_steps = 4", ", clip = 0.5",
                          ", warmup = 2, end_lr = 1e-4, decay_steps = 3, clip = 1.0"])
        opt_line = {"": "", "sgd": f"  optimizer sgd(lr = {r.choice(['0.01', '0.1'])}{extra})",
                    "momentum": f"  optimizer momentum(lr = 0.01{r.choice(['', ', beta = 0.8'])}{extra})",
                    "adam": f"  optimizer adam(lr = 1e-3{r.choice(['', ', b1 = 0.8', ', eps = 1e-6'])}{extra})",
                    "adamw": f"  optimizer adamw(lr = 1e-3{r.choice(['', ', weight_decay = 0.1'])}{extra})"}[opt]
        # Gradient accumulation needs a loss that is a mean or a sum over the batch.
        self.accumulates = bool(opt_line) and not loss.endswith("/ 8.0") and not self.mixes_batch
        if config and self.flag_r.random() < 0.5:
            # --set: the unused float to another value, the width to the size the
            # program's shapes were drawn for.
            self.sets = [f"unused={self.flag_r.choice(['0.25', '2', '1e-3'])}"]
            if self.flag_r.random() < 0.5:
                self.sets.append(f"width={self.sizes[feat] // 2}")
        config = f"(width: int = {self.sizes[feat] // 2}, unused: float = 0.5)" if config else ""
        imports = []
        if self.uses_nn:
            imports.append("import nn")
        if self.lib_blocks:
            imports.append("import genlib")
        model = "\n".join(imports + [""] + ["\n".join(self.blocks)] + [
            f"model Gen{config} {{"] + self.inputs + self.lets + [f"  loss {loss}"] + metrics +
            ([opt_line] if opt_line else []) + ["}"]) + "\n"
        lib = "\n\n".join(["import nn"] + self.lib_blocks) + "\n" if self.lib_blocks else None
        return model, lib, self.rules()

    def op_flatten_value(self, v):
        self.values.append(v)
        for _ in range(3):
            out = self.op_flatten()
            if out is not None and out.dims[0] == v.dims[0] and len(out.dims) == 2:
                return out
        return self.let(f"flatten({v.name}, [{self.axis('f', 0)}])", v.dims[:1])

    def rules(self):
        r = self.r
        names = ["data", "model", "pipe"][:r.randrange(1, 4)]
        sizes = {n: r.choice([1, 2, 2]) for n in names}
        lines = [f"mesh ({', '.join(f'{n} = {s}' for n, s in sizes.items())})", "rules {"]
        # Each mesh axis splits at most one logical axis, so that no tensor would
        # be split twice along one mesh axis.
        free = list(names)
        for axis, size in sorted(self.sizes.items()):
            if axis in self.unsplittable and not self.all_layouts:
                continue
            if not free or r.random() < 0.5:
                continue
            target = r.sample(free, r.randrange(1, min(2, len(free)) + 1))
            product = 1
            for t in target:
                product *= sizes[t]
            if size % product:
                continue
            spec = target[0] if len(target) == 1 else "(" + ", ".join(target) + ")"
            lines.append(f"  {axis} -> {spec}")
            free = [n for n in free if n not in target]
        if r.random() < 0.2:
            lines.append("  unusedaxis -> none")
        lines.append("}")
        # An override replicating one parameter, by its path or a glob of it.
        if self.params and r.random() < 0.3:
            path, rank = r.choice(self.params)
            parts = path.split(".")
            pattern = r.choice([path, "*." + parts[-1] if len(parts) == 2 else path,
                                "**." + parts[-1]])
            if pattern != path:
                # A glob may match parameters of other ranks ("*.w" both conv.w and
                # s.w): only when all agree.
                same = [k for p, k in self.params if p.endswith("." + parts[-1]) and
                        (pattern.startswith("**.") or len(p.split(".")) == 2)]
                rank = same[0] if len(set(same)) == 1 else None
            if rank is not None:
                lines.append(f'override "{pattern}" : [{", ".join(["none"] * rank)}]')
        # Activation checkpointing of a scan, by its name or a glob of all of them.
        if self.scans and r.random() < 0.5:
            pattern = r.choice(self.scans + ["stack*"])
            lines.append(f'remat "{pattern}" : {r.choice(["nothing", "dots", "everything"])}')
        # Gradient accumulation: each rank's rows of the batch of 8 (split over at most
        # 2 x 2 ranks) in 2 slices, which the reference runs whole.
        if self.accumulates and r.random() < 0.3:
            lines.append("microbatches 2")
        # A pipeline: the one scan's layers in stages along a free mesh axis of 2, the
        # microbatches through them in either schedule.
        stage_axes = [n for n in free if sizes[n] == 2]
        if (len(self.scans) == 1 and self.sizes.get("layer", 1) % 2 == 0 and self.accumulates
                and stage_axes and r.random() < 0.3):
            lines.insert(lines.index("}"), f"  layer -> {stage_axes[0]}")
            if "microbatches 2" not in lines:
                lines.append("microbatches 2")
            lines.append(f'schedule "{r.choice(["gpipe", "1f1b"])}"')
        return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("seed", type=int)
    parser.add_argument("outdir")
    parser.add_argument("--all-layouts", action="store_true")
    args = parser.parse_args()
    program = Program(args.seed, args.all_layouts)
    model, lib, rules = program.build()
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, "p.shard"), "w") as f:
        f.write(model)
    with open(os.path.join(args.outdir, "p.rules"), "w") as f:
        f.write(rules)
    if lib:
        with open(os.path.join(args.outdir, "genlib.shard"), "w") as f:
            f.write(lib)
    if program.sets:
        with open(os.path.join(args.outdir, "p.flags"), "w") as f:
            f.write("".join(f"--set {s}\n" for s in program.sets))


if __name__ == "__main__":
    main()
