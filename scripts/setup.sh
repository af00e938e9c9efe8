#!/usr/bin/env bash
# Installs every Debian package shardc needs on a fresh Debian 12. Idempotent: it
# only calls apt-get when something is missing.
set -euo pipefail

packages=(
  cmake ninja-build ccache g++ pkg-config
  clang-format             # the C++ files' style (scripts/format.sh)
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 libclang-rt-22-dev
  antlr4 libantlr4-runtime-dev default-jre-headless
  nlohmann-json3-dev zlib1g-dev libzip-dev libstb-dev
  libopenmpi-dev openmpi-bin
  libopenblas-dev libopenblas0-openmp
  libdnnl-dev              # bfloat16 matrix products (--matmul-precision bf16)
  ocl-icd-opencl-dev       # oneDNN's CMake config asks for OpenCL (only recommended by libdnnl-dev)
  dataset-fashion-mnist
  fortunes                 # W4's corpus (examples/gpt/make_corpus.py)
  python3 python3-numpy python3-pil
  python3-torch            # test/Export loads exported GPTs into PyTorch
  chromium-headless-shell  # the report page is checked in a real browser (test/Runtime/report-page.test)
  # A one-node Slurm cluster for test/Cluster/slurm.test (examples/slurm). The test
  # starts its own daemons with its own key, socket and slurm.conf; the packages'
  # slurmctld and slurmd services stay off without /etc/slurm/slurm.conf.
  munge slurmctld slurmd slurm-client
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

# Node.js runs the editor grammar's tests; use the machine's if it has one.
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm packages of the editor extension (vscode-languageclient, vscode-textmate, vsce),
# from its lock file.
cd "$(dirname "$0")/.."
if [ ! -d editor/vscode/node_modules ] ||
   [ editor/vscode/package-lock.json -nt editor/vscode/node_modules/.package-lock.json ]; then
  npm ci --prefix editor/vscode --no-audit --no-fund --loglevel=error
fi
