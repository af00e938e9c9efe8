#!/usr/bin/python3
"""Training speed of shardc's executables against PyTorch, side by side.

Measures, in one run with interleaved repetitions (the machine is noisy; medians):

  W2  one epoch of the Fashion-MNIST CNN (234 steps of global batch 256, Adam 1e-3 on the
      mean softmax cross-entropy) in PyTorch -- DDP over gloo with 2 processes x 1 thread,
      and 1 process x 2 threads -- and shardc's executable for examples/cnn/cnn.shard
      under bench/train/data2.rules on 2 ranks;
  W1  a train step of the MLP (4 x DotReluDot(1024), loss sum, Adam 1e-3) at batch 8 and
      256, the same PyTorch configurations against examples/mlp/mlp.shard (batch 8) and
      bench/train/mlp_b256.shard (batch 256) under data2.rules and model2.rules (tensor
      parallel), the faster of the two compared;
  each of shardc's runs in f32 and again with --matmul-precision bf16 (every matrix product
  in bfloat16, f32 accumulation), reported side by side ("shardc", "shardc_bf16");
  compile time of every example to an executable under its first rules file.

PyTorch runs in the best configuration of shared/anchors/README.md: /usr/bin/python3 with
OPENBLAS_CORETYPE unset, tcmalloc preloaded and the OpenMP build of OpenBLAS. Prints ONE
JSON object on stdout; progress goes to stderr. Sets itself up as the README's commands
do: run as root, it installs the Debian packages PyTorch's side needs (python3-torch,
libtcmalloc-minimal4, libopenblas0-openmp; apt's output on stderr) and builds shardc with
scripts/build.sh when it is missing. Only the parent runs here with the standard library; PyTorch is imported by the worker processes this script starts of itself
(`--worker ...`, not for direct use).

    bench/train/run.py                 # everything, 3 repetitions
    bench/train/run.py --skip-shardc   # PyTorch only
    bench/train/run.py --quick         # a smoke test: few steps, 1 repetition
"""

import argparse
import array
import gzip
import json
import os
import random
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

SYSTEM_PYTHON = "/usr/bin/python3"
TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
OPENBLAS_OMP_DIR = "/usr/lib/x86_64-linux-gnu/openblas-openmp"
DATASET_DIR = "/usr/share/datasets/fashion-mnist"

W2_BATCH = 256
W2_TRAIN_IMAGES = 60000
W2_STEPS_PER_EPOCH = W2_TRAIN_IMAGES // W2_BATCH  # 234, the last partial batch is dropped
W1_LAYERS = 4
W1_DEPTH = 1024
# shared/anchors/README.md: W2's training FLOPs per epoch and OpenBLAS sgemm's 2-core
# peak on this machine kind (AVX-512 kernels, OPENBLAS_CORETYPE unset).
W2_FLOP_PER_EPOCH = 1.64e12
SGEMM_PEAK_FLOPS_2CORES = 393e9

# The rules files shardc runs each workload under (bench/train/*.rules); the fastest is
# compared with PyTorch.
LAYOUTS = {"w2": ["data2"], "w1": ["data2", "model2"]}
# shardc's executables run in f32 and with every matrix product in bfloat16
# (--matmul-precision bf16); each precision is reported on its own, beside the other.
PRECISIONS = ("f32", "bf16")


def shardc_side(precision):
    return "shardc" if precision == "f32" else "shardc_" + precision
# Every example, compiled under its first rules file for the compile times.
EXAMPLES = [("mlp", "mlp.shard", "dp.rules"), ("cnn", "cnn.shard", "dp.rules"),
            ("mnist-mlp", "mlp.shard", "dp.rules"), ("catsdogs", "cnn.shard", "dp.rules"),
            ("gpt", "gpt.shard", "dp.rules")]

RESULT_TAG = "BENCH_RESULT "


def log(*a):
    print("[bench/train]", *a, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# Worker side: runs under /usr/bin/python3 with torch, in the best configuration.
# --------------------------------------------------------------------------------------

def read_idx_gz(path):
    """An IDX file (gzip): returns (dims, raw bytes of the data)."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return dims, data[4 + 4 * ndim:]


def load_fashion_mnist_train(torch):
    dims, pix = read_idx_gz(os.path.join(DATASET_DIR, "train-images-idx3-ubyte.gz"))
    ldims, lab = read_idx_gz(os.path.join(DATASET_DIR, "train-labels-idx1-ubyte.gz"))
    n, h, w = dims
    assert ldims == (n,), (dims, ldims)
    images = torch.frombuffer(bytearray(pix), dtype=torch.uint8).reshape(n, 1, h, w)
    images = images.to(torch.float32).div_(255.0).contiguous()  # NCHW, /255
    labels = torch.frombuffer(bytearray(lab), dtype=torch.uint8).to(torch.int64)
    return images, labels


def worker_dist_setup(args):
    """Initialise gloo when this worker is one rank of a DDP group; returns (rank, world)."""
    import torch.distributed as dist
    world = args.world
    if world == 1:
        return 0, 1
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}",
                            rank=args.rank, world_size=world)
    return args.rank, world


def worker_w2(args, torch):
    import torch.nn as nn
    import torch.nn.functional as F
    rank, world = worker_dist_setup(args)
    assert W2_BATCH % world == 0
    local = W2_BATCH // world

    torch.manual_seed(args.seed)

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, padding=1)     # SAME for 3x3, stride 1
            self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
            self.dense1 = nn.Linear(7 * 7 * 64, 256)
            self.dense2 = nn.Linear(256, 10)
            # shardc's init: lecun_normal weights, zero biases (plain normal here).
            for m in (self.conv1, self.conv2, self.dense1, self.dense2):
                fan_in = m.weight[0].numel()
                nn.init.normal_(m.weight, std=fan_in ** -0.5)
                nn.init.zeros_(m.bias)

        def forward(self, x):
            x = F.avg_pool2d(F.relu(self.conv1(x)), 2)
            x = F.avg_pool2d(F.relu(self.conv2(x)), 2)
            x = torch.flatten(x, 1)
            return self.dense2(F.relu(self.dense1(x)))

    model = CNN()
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    images, labels = load_fashion_mnist_train(torch)
    gen = torch.Generator().manual_seed(args.seed)     # same permutation on every rank
    perm = torch.randperm(images.shape[0], generator=gen)
    steps = args.steps

    def step(s):
        idx = perm[s * W2_BATCH + rank * local: s * W2_BATCH + (rank + 1) * local]
        x, y = images[idx], labels[idx]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)            # mean over the (local) batch
        loss.backward()                                 # DDP averages over the ranks
        opt.step()
        return loss

    if world > 1:
        torch.distributed.barrier()
    t0 = time.perf_counter()
    loss = step(0)
    t1 = time.perf_counter()
    losses = [loss.item()]
    for s in range(1, steps):
        loss = step(s)
        if s >= steps - 10:
            losses.append(loss.item())
    if world > 1:
        torch.distributed.barrier()
    t2 = time.perf_counter()
    return {"seconds": t2 - t0, "first_step_seconds": t1 - t0, "steps": steps,
            "first_loss": losses[0],
            "final_loss_mean_last10_rank0": statistics.mean(losses[1:])
            if len(losses) > 1 else losses[0]}


def worker_w1(args, torch):
    import torch.nn as nn
    rank, world = worker_dist_setup(args)
    assert args.batch % world == 0
    local = args.batch // world
    torch.manual_seed(args.seed)

    class MLP(nn.Module):
        """4 x DotReluDot(1024), weights stacked along a layer axis like shardc's scan."""
        def __init__(self):
            super().__init__()
            self.W1 = nn.Parameter(torch.empty(W1_LAYERS, W1_DEPTH, W1_DEPTH))
            self.W2 = nn.Parameter(torch.empty(W1_LAYERS, W1_DEPTH, W1_DEPTH))
            with torch.no_grad():
                for l in range(W1_LAYERS):
                    nn.init.xavier_normal_(self.W1[l])
                    nn.init.xavier_normal_(self.W2[l])

        def forward(self, x):
            for l in range(W1_LAYERS):
                x = torch.relu(x @ self.W1[l]) @ self.W2[l]
            return x

    model = MLP()
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(args.seed)
    x_global = torch.randn(args.batch, W1_DEPTH, generator=gen)
    x = x_global[rank * local:(rank + 1) * local].contiguous()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(x).sum()
        loss.backward()
        opt.step()
        return loss

    if world > 1:
        torch.distributed.barrier()
    t0 = time.perf_counter()
    for _ in range(args.warmup):
        step()
    if world > 1:
        torch.distributed.barrier()
    t1 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    if world > 1:
        torch.distributed.barrier()
    t2 = time.perf_counter()
    return {"seconds": t2 - t1, "warmup_seconds": t1 - t0, "steps": args.steps,
            "warmup_steps": args.warmup, "final_loss_rank0": loss.item()}


def mapped_libraries():
    """Which allocator and OpenBLAS this process really loaded (a check on the env)."""
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                if "openblas" in path or "tcmalloc" in path or "libblas" in path:
                    libs.add(path)
    except OSError:
        pass
    return sorted(libs)


def worker_main(args):
    import torch
    torch.set_num_threads(args.threads)
    if args.worker == "w2":
        res = worker_w2(args, torch)
    else:
        res = worker_w1(args, torch)
    res["torch_threads"] = torch.get_num_threads()
    res["torch_version"] = torch.__version__
    res["libraries"] = mapped_libraries()
    if args.world > 1:
        torch.distributed.destroy_process_group()
    if args.rank == 0:
        print(RESULT_TAG + json.dumps(res), flush=True)


# --------------------------------------------------------------------------------------
# Parent side: standard library only.
# --------------------------------------------------------------------------------------

def best_env(threads):
    """The environment of the anchors README's best PyTorch configuration."""
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env["LD_PRELOAD"] = TCMALLOC + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["LD_LIBRARY_PATH"] = OPENBLAS_OMP_DIR + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["OMP_NUM_THREADS"] = str(threads)
    return env


def check_pytorch_prereqs():
    missing = []
    if not os.path.exists(SYSTEM_PYTHON):
        missing.append(("python3", SYSTEM_PYTHON))
    else:
        r = subprocess.run([SYSTEM_PYTHON, "-c", "import torch, torch.distributed as d; "
                            "assert d.is_available() and d.is_gloo_available()"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            missing.append(("python3-torch", f"`import torch` (with gloo) fails under {SYSTEM_PYTHON}"))
    if not os.path.exists(TCMALLOC):
        missing.append(("libtcmalloc-minimal4", TCMALLOC))
    if not os.path.exists(os.path.join(OPENBLAS_OMP_DIR, "libopenblas.so.0")):
        missing.append(("libopenblas0-openmp", OPENBLAS_OMP_DIR + "/libopenblas.so.0"))
    for f in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"):
        if not os.path.exists(os.path.join(DATASET_DIR, f)):
            missing.append(("dataset-fashion-mnist", os.path.join(DATASET_DIR, f)))
            break
    return missing


def install_prereqs(exclude=()):
    """Installs, as root, the Debian packages check_pytorch_prereqs finds missing (but
    `exclude`), apt's output on stderr: stdout is the bench's JSON alone."""
    packages = [pkg for pkg, _ in check_pytorch_prereqs() if pkg not in ("python3",) + tuple(exclude)]
    if not packages or os.geteuid() != 0:
        return
    print(f"[bench] installing {' '.join(packages)}", file=sys.stderr, flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, stdout=sys.stderr, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + packages,
                   check=True, stdout=sys.stderr, env=env)


def build_shardc(tool):
    """Builds this checkout with scripts/build.sh (which installs its Debian packages)
    when `tool` is one of its binaries (build/bin/shardc, shardc-lsp, ...) and it is
    missing; output on stderr."""
    if os.path.dirname(tool) == os.path.join(REPO, "build", "bin") and not os.access(tool, os.X_OK):
        print(f"[bench] building {os.path.basename(tool)} (scripts/build.sh)", file=sys.stderr,
              flush=True)
        subprocess.run(["bash", os.path.join(REPO, "scripts", "build.sh")], check=True,
                       stdout=sys.stderr)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torch(kind, world, threads, steps, seed, batch=None, warmup=0, timeout=1800,
              script=__file__, extra=()):
    """Runs one PyTorch measurement in `world` fresh processes of `script`'s worker
    (this file's by default; bench/gpt/run.py has its own); returns rank 0's result."""
    port = free_port()
    procs = []
    for rank in range(world):
        cmd = [SYSTEM_PYTHON, os.path.abspath(script), "--worker", kind, *extra,
               "--rank", str(rank), "--world", str(world), "--port", str(port),
               "--threads", str(threads), "--steps", str(steps), "--seed", str(seed),
               "--warmup", str(warmup)]
        if batch is not None:
            cmd += ["--batch", str(batch)]
        procs.append(subprocess.Popen(cmd, env=best_env(threads), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise RuntimeError(f"PyTorch {kind} worker timed out after {timeout} s")
        outs.append((p.returncode, out, err))
    for rc, out, err in outs:
        if rc != 0:
            raise RuntimeError(f"PyTorch {kind} worker failed (exit {rc}):\n{err[-4000:]}")
    for line in outs[0][1].splitlines():
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG):])
    raise RuntimeError(f"PyTorch {kind} worker printed no result:\n{outs[0][1][-2000:]}")


def shardc_env():
    # shardc's executables get the same OpenBLAS core type as PyTorch (anchors README,
    # fact 1), nothing else of PyTorch's configuration.
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    return env


def cpu_model():
    """The CPU's model name and whether it has bf16 instructions (/proc/cpuinfo)."""
    with open("/proc/cpuinfo") as f:
        info = f.read()
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                 if line.startswith("model name")), "unknown")
    return {"model": name, "avx512_bf16": " avx512_bf16" in info, "amx_bf16": " amx_bf16" in info}


def compile_shardc(shardc, model, rules, out, extra=()):
    """Compiles `model` to the executable `out` (with shardc's `extra` flags); returns
    the wall seconds it took."""
    cmd = [shardc, model, "--rules", rules, "-o", out, *extra]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {r.returncode}):\n"
                           f"{r.stdout[-2000:]}{r.stderr[-4000:]}")
    return seconds


def peak_resident_mib(sample):
    peak = (sample.get("resident_bytes_per_rank") or {}).get("peak")
    return round(peak / 2**20, 1) if peak else None


def write_w1_input(path, batch, seed):
    """W1's input x f32[batch, 1024] as a NumPy .npy file: normals drawn once, as PyTorch's
    worker draws its x once and reads it every step (the Flax guide W1 comes from does
    the same). Written with the standard library (no NumPy on the parent's side)."""
    rng = random.Random(seed)
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({batch}, {W1_DEPTH}), }}"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"  # data 64-byte aligned
    values = array.array("f", (rng.gauss(0.0, 1.0) for _ in range(batch * W1_DEPTH)))
    if sys.byteorder != "little":
        values.byteswap()
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        values.tofile(f)


def run_shardc(prog, ranks, run_args, steps, timeout=1800):
    """Runs a shardc executable meant to train `steps` steps; returns its JSON object
    with `bench_steps` added (the executable's own `steps` when it reports one)."""
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), prog] + run_args
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=shardc_env(),
                           timeout=timeout, cwd=REPO)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{' '.join(cmd)} timed out after {timeout} s")
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {r.returncode}):\n"
                           f"{r.stdout[-2000:]}{r.stderr[-4000:]}")
    for line in reversed(r.stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and "train_seconds" in obj:
                if obj.get("steps") not in (None, steps):
                    log(f"  note: {os.path.basename(prog)} reports {obj['steps']} steps, "
                        f"{steps} expected; using its count")
                obj["bench_steps"] = obj.get("steps") or steps
                return obj
    raise RuntimeError(f"{' '.join(cmd)} printed no JSON object with train_seconds:\n"
                       f"{r.stdout[-2000:]}")


def median(xs):
    return statistics.median(xs) if xs else None


def best_layout(layouts, metric):
    """shardc's block: every layout measured, and the fastest one named."""
    if not layouts:
        return None
    best = min(layouts, key=lambda l: layouts[l][metric])
    return {"layouts": layouts, "best": f"bench/train/{best}.rules",
            "best_" + metric: layouts[best][metric]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: a few steps of each, 1 repetition unless --reps")
    ap.add_argument("--shardc", default=os.path.join(REPO, "build", "bin", "shardc"),
                    help="the shardc binary (default: build/bin/shardc)")
    ap.add_argument("--skip-shardc", action="store_true", help="measure PyTorch only")
    ap.add_argument("--reps", type=int, default=None,
                    help="interleaved repetitions of every measurement (default 3; 1 with --quick)")
    ap.add_argument("--only", choices=["w1", "w2"], default=None,
                    help="measure one workload only")
    ap.add_argument("--seed", type=int, default=0)
    # Worker mode (this script starting itself under the best configuration).
    ap.add_argument("--worker", choices=["w1", "w2"], help=argparse.SUPPRESS)
    ap.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--world", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--warmup", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--batch", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        worker_main(args)
        return 0

    reps = args.reps if args.reps is not None else (1 if args.quick else 3)
    if reps < 1:
        ap.error("--reps must be at least 1")
    do_w1 = args.only in (None, "w1")
    do_w2 = args.only in (None, "w2")
    w2_steps = 20 if args.quick else W2_STEPS_PER_EPOCH
    # W1: (batch, timed steps, warm-up steps)
    w1_cases = [(8, 20 if args.quick else 200, 3 if args.quick else 10),
                (256, 10 if args.quick else 60, 3 if args.quick else 10)]

    install_prereqs()
    if not args.skip_shardc:
        build_shardc(args.shardc)
    missing = check_pytorch_prereqs()
    if missing:
        for pkg, what in missing:
            print(f"bench/train: missing Debian package {pkg} ({what} not found); "
                  f"install it with: apt-get install {pkg}", file=sys.stderr)
        return 2

    use_shardc = not args.skip_shardc
    tmpdir = None
    progs = {}  # (workload, layout) -> (executable, compile seconds)
    compile_seconds = {}
    if use_shardc:
        if not (os.path.isfile(args.shardc) and os.access(args.shardc, os.X_OK)):
            print(f"bench/train: shardc binary {args.shardc} not found (build it, pass "
                  f"--shardc PATH, or --skip-shardc)", file=sys.stderr)
            return 2
        if shutil.which("mpirun") is None:
            print("bench/train: mpirun not found: missing Debian package openmpi-bin "
                  "(apt-get install openmpi-bin)", file=sys.stderr)
            return 2
        tmpdir = tempfile.mkdtemp(prefix="shardc-bench-train-")
        wanted = []
        if do_w2:
            wanted.append(("w2", "w2", os.path.join(REPO, "examples", "cnn", "cnn.shard")))
        if do_w1:
            wanted.append(("w1_b8", "w1", os.path.join(REPO, "examples", "mlp", "mlp.shard")))
            wanted.append(("w1_b256", "w1", os.path.join(HERE, "mlp_b256.shard")))
            for batch, _, _ in w1_cases:
                write_w1_input(os.path.join(tmpdir, f"w1_x_b{batch}.npy"), batch, args.seed)
        for name, workload, model in wanted:
            for layout in LAYOUTS[workload]:
                out = os.path.join(tmpdir, f"{name}-{layout}")
                log(f"compiling {os.path.relpath(model, REPO)} under {layout}.rules")
                seconds = compile_shardc(args.shardc, model, os.path.join(HERE, layout + ".rules"), out)
                progs[(name, layout)] = (out, seconds)
        if args.only is None:
            for folder, model, rules in EXAMPLES:
                path = os.path.join("examples", folder, model)
                log(f"compiling {path} under {rules}")
                compile_seconds[path + " " + rules] = round(compile_shardc(
                    args.shardc, os.path.join(REPO, path), os.path.join(REPO, "examples", folder, rules),
                    os.path.join(tmpdir, "example-" + folder)), 2)

    # Each measurement is a closure returning one sample dict; every repetition runs all
    # of them, in an order rotated by the repetition number.
    measurements = []  # (key, fn)
    if do_w2:
        measurements.append(("w2/pytorch/ddp_2x1", lambda: run_torch("w2", 2, 1, w2_steps, args.seed)))
        measurements.append(("w2/pytorch/threads_1x2", lambda: run_torch("w2", 1, 2, w2_steps, args.seed)))
        if use_shardc:
            # Fashion-MNIST as examples/cnn/run.json binds it (its 5 epochs overridden).
            w2_run_args = (["--config", os.path.join(REPO, "examples", "cnn", "run.json")] +
                           (["--steps", str(w2_steps)] if args.quick else ["--epochs", "1"]))
            for layout in LAYOUTS["w2"]:
                for precision in PRECISIONS:
                    measurements.append((f"w2/{shardc_side(precision)}/{layout}",
                                         lambda l=layout, p=precision: run_shardc(
                        progs[("w2", l)][0], 2, w2_run_args + ["--seed", str(args.seed), "--no-eval",
                                                               "--matmul-precision", p], w2_steps)))
    if do_w1:
        for batch, steps, warmup in w1_cases:
            measurements.append((f"w1_b{batch}/pytorch/ddp_2x1",
                                 lambda b=batch, s=steps, w=warmup: run_torch("w1", 2, 1, s, args.seed, b, w)))
            measurements.append((f"w1_b{batch}/pytorch/threads_1x2",
                                 lambda b=batch, s=steps, w=warmup: run_torch("w1", 1, 2, s, args.seed, b, w)))
            if use_shardc:
                def shardc_w1(b=batch, s=steps, w=warmup, layout="data2", precision="f32"):
                    prog = progs[(f"w1_b{b}", layout)][0]
                    # One batch of x, read every step, as PyTorch's side has.
                    common = ["--data", "x=" + os.path.join(tmpdir, f"w1_x_b{b}.npy"),
                              "--seed", str(args.seed), "--no-eval",
                              "--matmul-precision", precision]
                    # The short run is the warm-up (page cache, first-touch, MPI start-up);
                    # it also gives a marginal per-step time without start-up costs.
                    short = run_shardc(prog, 2, ["--steps", str(w)] + common, w)
                    full = run_shardc(prog, 2, ["--steps", str(s)] + common, s)
                    full["warmup_run"] = short
                    return full
                for layout in LAYOUTS["w1"]:
                    for precision in PRECISIONS:
                        measurements.append((f"w1_b{batch}/{shardc_side(precision)}/{layout}",
                                             lambda f=shardc_w1, l=layout, p=precision:
                                             f(layout=l, precision=p)))

    samples = {k: [] for k, _ in measurements}
    load_before = os.getloadavg()
    t_start = time.time()
    for rep in range(reps):
        off = rep % len(measurements)
        for key, fn in measurements[off:] + measurements[:off]:
            log(f"rep {rep + 1}/{reps}: {key}")
            res = fn()
            samples[key].append(res)
            if "/pytorch/" in key:
                log(f"  {res['seconds']:.3f} s for {res['steps']} steps")
            else:
                log(f"  train_seconds {res['train_seconds']:.3f} for {res['bench_steps']} steps")
    load_after = os.getloadavg()

    out = {
        "benchmark": "bench/train",
        "config": {
            "reps": reps, "quick": args.quick, "seed": args.seed,
            "pytorch_env": "env -u OPENBLAS_CORETYPE LD_PRELOAD=" + TCMALLOC +
                           " LD_LIBRARY_PATH=" + OPENBLAS_OMP_DIR + " OMP_NUM_THREADS=<threads> " +
                           SYSTEM_PYTHON,
            "shardc_env": "env -u OPENBLAS_CORETYPE mpirun --allow-run-as-root --oversubscribe -np 2",
            "shardc_rules": {w: [f"bench/train/{l}.rules" for l in ls] for w, ls in LAYOUTS.items()}
                            if use_shardc else None,
        },
        "machine": {
            "cpu": cpu_model(),
            "cpus": os.cpu_count(),
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in load_after],
            "wall_seconds": round(time.time() - t_start, 1),
            "torch_version": next((s[0]["torch_version"] for k, s in samples.items()
                                   if "/pytorch/" in k and s), None),
        },
    }

    def pytorch_block(prefix, per_step_ms):
        blk = {}
        for cfg in ("ddp_2x1", "threads_1x2"):
            ss = samples.get(f"{prefix}/pytorch/{cfg}")
            if not ss:
                continue
            if per_step_ms:
                vals = [1e3 * s["seconds"] / s["steps"] for s in ss]
                blk[cfg] = {"ms_per_step": median(vals), "min": min(vals), "samples": vals,
                            "steps": ss[0]["steps"], "warmup_steps": ss[0]["warmup_steps"],
                            "final_loss_rank0": ss[-1]["final_loss_rank0"]}
            else:
                vals = [s["seconds"] * W2_STEPS_PER_EPOCH / s["steps"] for s in ss]
                blk[cfg] = {"seconds_per_epoch": median(vals), "min": min(vals), "samples": vals,
                            "steps": ss[0]["steps"],
                            "first_step_seconds": median([s["first_step_seconds"] for s in ss]),
                            "first_loss": ss[-1]["first_loss"],
                            "final_loss_mean_last10_rank0": ss[-1]["final_loss_mean_last10_rank0"]}
        metric = "ms_per_step" if per_step_ms else "seconds_per_epoch"
        best = min(blk, key=lambda c: blk[c][metric])
        blk["best"] = best
        blk["best_" + metric] = blk[best][metric]
        return blk

    def add_shardc_sides(blk, key, workload, metric, describe):
        """blk[side] for shardc in each precision: describe(samples, layout) of every
        layout measured, the fastest named; and its time over PyTorch's best."""
        for side in map(shardc_side, PRECISIONS):
            layouts = {layout: describe(samples[f"{key}/{side}/{layout}"], layout)
                       for layout in LAYOUTS[workload] if samples.get(f"{key}/{side}/{layout}")}
            blk[side] = best_layout(layouts, metric)
            blk[f"ratio_{side}_over_pytorch_best"] = (
                blk[side]["best_" + metric] / blk["pytorch"]["best_" + metric]
                if blk[side] else None)

    if do_w2:
        w2 = {"steps_per_epoch": W2_STEPS_PER_EPOCH, "global_batch": W2_BATCH,
              "steps_measured": w2_steps,
              "note": None if not args.quick else
              f"--quick: {w2_steps} steps measured, seconds_per_epoch extrapolated to "
              f"{W2_STEPS_PER_EPOCH} steps",
              "pytorch": pytorch_block("w2", per_step_ms=False)}

        def w2_layout(ss, layout):
            vals = [s["train_seconds"] * W2_STEPS_PER_EPOCH / s["bench_steps"] for s in ss]
            return {
                "seconds_per_epoch": median(vals), "min": min(vals), "samples": vals,
                "steps": ss[-1]["bench_steps"], "mesh": ss[-1].get("mesh"),
                "images_per_second": median([s.get("images_per_second") or 0 for s in ss]),
                "fraction_of_sgemm_peak": round(W2_FLOP_PER_EPOCH / SGEMM_PEAK_FLOPS_2CORES /
                                                median(vals), 3),
                "peak_resident_mib_per_rank": peak_resident_mib(ss[-1]),
                "compile_seconds": round(progs[("w2", layout)][1], 2),
                "final_train_loss": ss[-1].get("final_train_loss")}
        add_shardc_sides(w2, "w2", "w2", "seconds_per_epoch", w2_layout)
        out["w2"] = w2

    if do_w1:
        for batch, steps, warmup in w1_cases:
            key = f"w1_b{batch}"
            blk = {"batch": batch, "pytorch": pytorch_block(key, per_step_ms=True)}

            def w1_layout(ss, layout, key=key):
                vals = [1e3 * s["train_seconds"] / s["bench_steps"] for s in ss]
                marg = []
                for s in ss:
                    w = s["warmup_run"]
                    if s["bench_steps"] > w["bench_steps"]:
                        marg.append(1e3 * (s["train_seconds"] - w["train_seconds"]) /
                                    (s["bench_steps"] - w["bench_steps"]))
                return {
                    "ms_per_step": median(vals), "min": min(vals), "samples": vals,
                    "steps": ss[-1]["bench_steps"], "mesh": ss[-1].get("mesh"),
                    "ms_per_step_marginal": median(marg),
                    "marginal_note": "(train_seconds of the --steps N run minus the "
                                     "warm-up run's) / (N - warm-up steps)",
                    "peak_resident_mib_per_rank": peak_resident_mib(ss[-1]),
                    "compile_seconds": round(progs[(key, layout)][1], 2),
                    "final_train_loss": ss[-1].get("final_train_loss")}
            add_shardc_sides(blk, key, "w1", "ms_per_step", w1_layout)
            out[key] = blk

    if compile_seconds:
        out["compile_seconds"] = compile_seconds
    if tmpdir:
        shutil.rmtree(tmpdir, ignore_errors=True)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as e:
        print(f"bench/train: error: {e}", file=sys.stderr)
        sys.exit(1)
