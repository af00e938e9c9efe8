# lit configuration for shardc: one folder per pipeline stage.
import os
import shutil
import subprocess

import lit.formats

config.name = "shardc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".shard", ".rules", ".test", ".mlir"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.shardc_obj_root, "test")

# %shardc-opt before %shardc: lit substitutes in order.
config.substitutions.append(("%shardc-tune", os.path.join(config.shardc_obj_root, "bin", "shardc-tune")))
config.substitutions.append(("%shardc-lsp", os.path.join(config.shardc_obj_root, "bin", "shardc-lsp")))
config.substitutions.append(("%shardc-opt", os.path.join(config.shardc_obj_root, "bin", "shardc-opt")))
config.substitutions.append(("%shardc", os.path.join(config.shardc_obj_root, "bin", "shardc")))
config.substitutions.append(("%examples", os.path.join(config.shardc_src_root, "examples")))
# W4's GPT (examples/gpt/gpt.shard) at the training tests' size, set from the command
# line: a context of 16, embed 16, 4 heads of 4, 2 layers and an MLP of 32 on batches of
# 8 (sizes every layout of examples/gpt divides: 8 ranks of data, model = 4), its
# schedule shortened to match.
# %gpt4_test_size: the same with 4 layers, for 4 pipeline stages.
def gpt_test_size(layers):
    return " ".join(
        [os.path.join(config.shardc_src_root, "examples", "gpt", "gpt.shard")] +
        [f"--set {s}" for s in (f"layers={layers}", "dim=16", "heads=4", "head_dim=4",
                                "scale=0.5", "hidden=32", "context=16", "batch_size=8",
                                "warmup=10", "decay_steps=50")])
config.substitutions.append(("%gpt4_test_size", gpt_test_size(4)))
config.substitutions.append(("%gpt_test_size", gpt_test_size(2)))
# W8's MoE GPT (examples/moe/gpt_moe.shard) at the same size: one dense and one MoE
# block of 8 experts (8 ranks of data hold one each), each of 16 units, top-2, and a
# capacity of ceil(2 x 16 x 1.25 / 8) = 5 tokens per expert and sequence.
config.substitutions.append(("%moe_test_size", " ".join(
    [os.path.join(config.shardc_src_root, "examples", "moe", "gpt_moe.shard")] +
    [f"--set {s}" for s in ("layers=2", "dim=16", "heads=4", "head_dim=4", "scale=0.5",
                            "hidden=32", "expert_hidden=16", "capacity=5", "context=16",
                            "batch_size=8", "warmup=10", "decay_steps=50")])))
config.substitutions.append(("%stdlib", os.path.join(config.shardc_src_root, "stdlib")))
config.substitutions.append(("%python", "python3"))
# Debian's Python, with python3-numpy and python3-pil: test/Data writes its files with them.
config.substitutions.append(("%debian_python", "/usr/bin/python3"))
config.substitutions.append(("%mpirun", "mpirun --allow-run-as-root --oversubscribe"))
config.substitutions.append(("%shardrt_bin", os.path.join(config.shardc_obj_root, "bin")))
config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])

# Two network namespaces as two hosts (test/Runtime/two-hosts.test) need root's
# CAP_SYS_ADMIN, as CI has: probed by entering new network, host-name and mount
# namespaces.
if shutil.which("ip") and subprocess.run(["unshare", "--net", "--uts", "--mount", "true"],
                                         capture_output=True).returncode == 0:
    config.available_features.add("netns")

# test/Cluster/slurm.test starts a one-node Slurm cluster from Debian's munge,
# slurmctld, slurmd and slurm-client packages (scripts/setup.sh installs them); its
# daemons run as root, as CI does.
if os.geteuid() == 0 and all(
        shutil.which(tool, path=os.environ["PATH"] + ":/usr/sbin:/sbin")
        for tool in ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "scontrol")):
    config.available_features.add("slurm")

# test/Training/target-cpu.test runs a program built for Sapphire Rapids on a CPU
# without its AMX tiles, which must refuse to start.
with open("/proc/cpuinfo") as cpuinfo:
    if "amx_tile" not in cpuinfo.read():
        config.available_features.add("cpu-without-amx")

# The report page is checked in a real browser: Debian's headless Chromium
# (chromium-headless-shell, installed by scripts/setup.sh).
for browser in ("chromium-headless-shell", "chromium"):
    if shutil.which(browser):
        config.available_features.add("chromium")
        config.substitutions.append(("%chromium", browser + " --headless --no-sandbox --disable-gpu"))
        break

# Built with -DSHARDC_SANITIZE=ON (scripts/test-sanitized.sh): AddressSanitizer
# reserves terabytes of shadow address space, so tests under `ulimit -v` cannot run.
if getattr(config, "sanitize", False):
    config.available_features.add("sanitized")

# The libFuzzer targets (fuzz/), built into build/fuzz when clang-22's libFuzzer is
# installed: test/Fuzz runs each briefly through scripts/fuzz.sh.
fuzzers = getattr(config, "fuzzers_dir", "")
if fuzzers and os.path.exists(os.path.join(fuzzers, "shardc-fuzz-frontend")):
    config.available_features.add("fuzzers")
    config.substitutions.append(("%fuzzers", fuzzers))
    config.substitutions.append(("%fuzz_sh", os.path.join(config.shardc_src_root, "scripts", "fuzz.sh")))
