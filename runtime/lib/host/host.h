// Process-wide settings for the machine a rank runs on, made once by shardrt_init.
#ifndef SHARDRT_LIB_HOST_H
#define SHARDRT_LIB_HOST_H

#include <cstdint>
#include <string>

namespace shardrt {

/// Makes glibc keep the memory a program frees instead of giving it back to the
/// kernel: generated code allocates and frees its temporaries every step, and the first
/// touch of a fresh page costs far more than reusing one (bench/kernels).
void keepFreedMemory();

/// OpenBLAS's pthread build starts a worker thread per core in its library
/// constructor, before main, and each maps a 128 MiB work buffer, retrying forever
/// while the address-space limit refuses it: under `ulimit -v` a program hung in
/// MPI_Init's fork, which waits for those threads. The driver computes with one BLAS
/// thread per rank anyway, so when the environment sets no thread count this starts
/// the program again (execv, the arguments of /proc/self/cmdline) with
/// OPENBLAS_NUM_THREADS=1 (and OMP_NUM_THREADS=1, for oneDNN), and no worker is
/// started. Returns only when the environment already set one (or the restart failed).
/// Call it first thing in main.
void restartWithOneBlasThread();

/// Has OpenBLAS allocate its work buffer now, while the address space has room for
/// it: once its first call finds no room for the buffer, OpenBLAS retries forever.
/// False (and nothing done) when `blasWorkBufferBytes()` cannot be allocated.
bool claimBlasWorkBuffer();
int64_t blasWorkBufferBytes();

/// Runs OpenBLAS on this rank's thread alone, unless the environment sets
/// OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS or OMP_NUM_THREADS.
void useOneBlasThread();

/// This host's name (gethostname), or "unknown host".
std::string hostName();

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

/// What the address-space limit (ulimit -v) leaves this process now, in bytes; -1
/// without a limit.
int64_t addressSpaceLeft();

/// This process's resident memory as the kernel counts it (/proc/self/status), in
/// bytes: the peak (VmHWM), and now, what is its own (anonymous) and what it shares with
/// other processes (mapped files, shared memory: one copy per host).
struct ResidentMemory {
  int64_t peak = 0, anonymous = 0, file = 0, shared = 0;
};
ResidentMemory residentMemory();

} // namespace shardrt

#endif // SHARDRT_LIB_HOST_H
