#!/usr/bin/env python3
"""left_behind.py DIR: lists the processes whose command line names a path under DIR
(a daemon, a rank, mpirun), other than this one and its ancestors; exits 1 if any."""
import os
import sys

root = os.path.realpath(sys.argv[1]) + "/"
mine = set()
pid = os.getpid()
while pid > 1:  # this process and the shells above it, which name DIR too
    mine.add(pid)
    with open(f"/proc/{pid}/stat") as f:
        pid = int(f.read().rsplit(")", 1)[1].split()[1])
left = []
for entry in os.listdir("/proc"):
    if not entry.isdigit() or int(entry) in mine:
        continue
    try:
        with open(f"/proc/{entry}/cmdline", "rb") as f:
            words = f.read().split(b"\0")
    except OSError:
        continue  # gone meanwhile
    if any(root.encode() in w or w.decode(errors="replace").rstrip("/") + "/" == root
           for w in words):
        left.append(f"{entry}: {b' '.join(words).decode(errors='replace')}")
for line in left:
    print("left_behind: still running:", line)
sys.exit(1 if left else 0)
