// Process-wide settings for the machine a rank runs on, made once by shardrt_init.
#ifndef SHARDRT_LIB_HOST_H
#define SHARDRT_LIB_HOST_H

#include <string>

namespace shardrt {

/// Makes glibc keep the memory a program frees instead of giving it back to the
/// kernel: generated code allocates and frees its temporaries every step, and on the
/// machines shardc targets the first touch of a fresh page costs about 10 us per 4 KiB.
void keepFreedMemory();

/// Runs OpenBLAS on this rank's thread alone, unless the environment sets
/// OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS or OMP_NUM_THREADS.
void useOneBlasThread();

/// The BLAS this process computes with: "OpenBLAS Haswell, 1 thread". Another kernel
/// set or thread count sums in another order, so a run's last bits depend on it.
std::string blasConfig();

/// What this host offers each of the `localRanks` ranks it runs, in bytes: an even
/// share of its physical memory, or what the address-space limit (ulimit -v) leaves
/// this process when that is less.
struct MemoryOffer {
  int64_t physical = 0;          // the host's
  int64_t share = 0;             // physical / localRanks
  int64_t addressSpaceLeft = -1; // -1: no limit
  int64_t bytes() const {
    return addressSpaceLeft >= 0 && addressSpaceLeft < share ? addressSpaceLeft : share;
  }
};
MemoryOffer memoryOffer(int localRanks);

/// This process's resident memory as the kernel counts it (/proc/self/status), in
/// bytes: the peak (VmHWM), and now, what is its own (anonymous) and what it shares with
/// other processes (mapped files, shared memory: one copy per host).
struct ResidentMemory {
  int64_t peak = 0, anonymous = 0, file = 0, shared = 0;
};
ResidentMemory residentMemory();

} // namespace shardrt

#endif // SHARDRT_LIB_HOST_H
