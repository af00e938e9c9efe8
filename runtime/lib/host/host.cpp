// Process-wide settings: glibc's treatment of freed memory, OpenBLAS's thread count.
#include "host.h"

#include <cblas.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <vector>

namespace shardrt {

void keepFreedMemory() {
  // By default glibc maps every block above its mmap threshold (at most 32 MiB) afresh
  // and unmaps it on free, and trims the top of the heap once 2 thresholds are free
  // there, so a step's large temporaries come back as untouched pages every step.
  // Served from the heap and never trimmed, they are recycled instead of faulted in
  // again, which makes a training step several times faster (bench/kernels times a
  // step's temporaries both ways).
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
}

namespace {
bool environmentSetsBlasThreads() {
  for (const char *name : {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"})
    if (std::getenv(name))
      return true;
  return false;
}
} // namespace

void restartWithOneBlasThread() {
  if (environmentSetsBlasThreads())
    return;
  // The process's own arguments: a caller of shardrt_main may have taken some away.
  std::ifstream file("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> arguments;
  for (std::string argument; std::getline(file, argument, '\0');)
    arguments.push_back(argument);
  if (arguments.empty())
    return;
  std::vector<char *> argv;
  for (std::string &argument : arguments)
    argv.push_back(argument.data());
  argv.push_back(nullptr);
  // oneDNN's bfloat16 matmul (dnnl_matmul.h) takes its threads from OpenMP: one too.
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  setenv("OMP_NUM_THREADS", "1", 1);
  execv("/proc/self/exe", argv.data());
  unsetenv("OPENBLAS_NUM_THREADS");
  unsetenv("OMP_NUM_THREADS");
}

int64_t blasWorkBufferBytes() {
  // OpenBLAS 0.3.21's BUFFER_SIZE on x86-64 (32 << 22) and a page: the size of the
  // allocation its first sgemm retried forever under ulimit -v (seen in gdb).
  return (int64_t(32) << 22) + 4096;
}

bool claimBlasWorkBuffer() {
  void *room = std::malloc(size_t(blasWorkBufferBytes()));
  if (!room)
    return false;
  std::free(room);
  // Large enough for OpenBLAS's ordinary path (small matrices may skip the buffer).
  constexpr int n = 128;
  std::vector<float> a(n * n, 0.0f), c(n * n);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, a.data(), n,
              0.0f, c.data(), n);
  return true;
}

void useOneBlasThread() {
  if (environmentSetsBlasThreads())
    return;
  // OpenBLAS would start a thread per core. More threads speed up sgemm alone, but not
  // a training step: the extra threads spin in sched_yield between calls and compete
  // with the other ranks for the cores (bench/kernels times the kernels, bench/train
  // the steps).
  openblas_set_num_threads(1);
}

std::string hostName() {
  char host[256] = "unknown host";
  ::gethostname(host, sizeof host - 1);
  return host;
}

std::string blasConfig() {
  const int threads = openblas_get_num_threads();
  return std::string("OpenBLAS ") + openblas_get_corename() + ", " + std::to_string(threads) +
         (threads == 1 ? " thread" : " threads");
}

int64_t addressSpaceLeft() {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
    return -1;
  // The limit counts the address space already mapped: libraries, MPI's buffers.
  long long mappedPages = 0;
  if (std::FILE *statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%lld", &mappedPages) != 1)
      mappedPages = 0;
    std::fclose(statm);
  }
  const int64_t mapped = int64_t(mappedPages) * sysconf(_SC_PAGESIZE);
  const int64_t cap = int64_t(limit.rlim_cur);
  return cap > mapped ? cap - mapped : 0;
}

MemoryOffer memoryOffer(int localRanks) {
  MemoryOffer offer;
  offer.physical = int64_t(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  offer.share = offer.physical / (localRanks > 0 ? localRanks : 1);
  offer.addressSpaceLeft = addressSpaceLeft();
  return offer;
}

ResidentMemory residentMemory() {
  ResidentMemory memory;
  std::FILE *status = std::fopen("/proc/self/status", "r");
  if (!status)
    return memory;
  char line[256];
  while (std::fgets(line, sizeof line, status)) {
    long long kib = 0;
    if (std::sscanf(line, "VmHWM: %lld kB", &kib) == 1)
      memory.peak = kib * 1024;
    else if (std::sscanf(line, "RssAnon: %lld kB", &kib) == 1)
      memory.anonymous = kib * 1024;
    else if (std::sscanf(line, "RssFile: %lld kB", &kib) == 1)
      memory.file = kib * 1024;
    else if (std::sscanf(line, "RssShmem: %lld kB", &kib) == 1)
      memory.shared = kib * 1024;
  }
  std::fclose(status);
  return memory;
}

} // namespace shardrt
