// shardrt-bench-kernels [REPEATS]: libshardrt's dense kernels at W2's per-rank shapes
// (batch 128: 256 images over 2 data-parallel ranks), and what glibc's handling of
// freed memory costs a training step's temporaries.
//
// 1. Temporaries: the activations and gradients of one W2 step at batch 128 are
//    allocated, written once and freed, step after step; first with glibc's defaults,
//    then after shardrt_init, which makes glibc keep freed memory. Medians of the
//    steps after the first.
// 2. Kernels, after shardrt_init has chosen OpenBLAS's thread count (set
//    OPENBLAS_NUM_THREADS to override): both convolutions forward and both
//    gradients, and the dense layers' matmuls. Median milliseconds and GFLOP/s.
// Runs on every rank of an mpirun at once (the slowest rank's time counts), so that
// ranks sharing the cores show what each gets. Prints one JSON object on rank 0.
#include "shardrt/shardrt.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

double median(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  size_t n = times.size();
  return n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
}

/// Milliseconds of `call` on the slowest rank.
double timed(const std::function<void()> &call) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  call();
  double local = MPI_Wtime() - start, slowest = 0;
  MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest * 1e3;
}

/// Median milliseconds of `repeats` calls after one untimed call.
double medianTime(int repeats, const std::function<void()> &call) {
  call();
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r)
    times.push_back(timed(call));
  return median(times);
}

std::vector<float> filled(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(i % 17) * 0.01f - 0.08f;
  return v;
}

/// One W2 step's temporaries at batch 128, in bytes: forward activations (conv1,
/// relu, pool, padded, conv2, relu, pool, dense), then their gradients.
const int64_t kStepBytes[] = {
    128 * 30 * 30 * 1 * 4,  128 * 28 * 28 * 32 * 4, 128 * 28 * 28 * 32 * 4, 128 * 14 * 14 * 32 * 4,
    128 * 16 * 16 * 32 * 4, 128 * 14 * 14 * 64 * 4, 128 * 14 * 14 * 64 * 4, 128 * 7 * 7 * 64 * 4,
    128 * 256 * 4,          128 * 256 * 4,          128 * 7 * 7 * 64 * 4,   128 * 14 * 14 * 64 * 4,
    128 * 16 * 16 * 64 * 4, 128 * 14 * 14 * 32 * 4, 128 * 28 * 28 * 32 * 4, 128 * 30 * 30 * 32 * 4};

/// Median and first-step milliseconds of `steps` steps that allocate, write and free
/// the step's temporaries.
std::pair<double, double> timeTemporaries(int steps) {
  std::vector<double> times;
  for (int s = 0; s < steps; ++s)
    times.push_back(timed([] {
      std::vector<void *> blocks;
      for (int64_t bytes : kStepBytes) {
        void *p = std::malloc(bytes);
        std::memset(p, 1, bytes);
        blocks.push_back(p);
      }
      for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
        std::free(*it);
    }));
  double first = times.front();
  times.erase(times.begin());
  return {median(times), first};
}

struct Result {
  std::string name;
  double ms, gflops;
};

/// A convolution's shapes (input already padded).
struct Conv {
  const char *name;
  int64_t n, h, w, c, kh, kw, f, stride;
  int64_t oh() const { return (h - kh) / stride + 1; }
  int64_t ow() const { return (w - kw) / stride + 1; }
  double flops() const { return 2.0 * n * oh() * ow() * f * kh * kw * c; }
};

void benchConv(const Conv &p, int repeats, std::vector<Result> &results) {
  int64_t oh = p.oh(), ow = p.ow();
  std::vector<float> x = filled(p.n * p.h * p.w * p.c), k = filled(p.kh * p.kw * p.c * p.f),
                     y = filled(p.n * oh * ow * p.f), dw = filled(p.kh * p.kw * p.c * p.f);
  double ms = medianTime(repeats, [&] {
    shardrt_conv2d_f32(false, p.n, p.h, p.w, p.c, 0, 0, p.kh, p.kw, p.f, oh, ow, p.stride, p.stride,
                       1, 1, x.data(), k.data(), y.data());
  });
  results.push_back({std::string(p.name) + " forward", ms, p.flops() / ms / 1e6});
  ms = medianTime(repeats, [&] {
    shardrt_conv2d_filter_grad_f32(false, p.n, p.h, p.w, p.c, 0, 0, p.kh, p.kw, p.f, oh, ow,
                                   p.stride, p.stride, x.data(), y.data(), dw.data());
  });
  results.push_back({std::string(p.name) + " filter grad", ms, p.flops() / ms / 1e6});
  // dx [N, OH', OW', C] of the unpadded input (SAME padding: OH' = OH), from dy padded
  // by KH-1 - pad on each side: dyp [N, OH + KH-1, OW + KW-1, F].
  std::vector<float> dyp = filled(p.n * (oh + p.kh - 1) * (ow + p.kw - 1) * p.f),
                     dx = filled(p.n * oh * ow * p.c);
  ms = medianTime(repeats, [&] {
    shardrt_conv2d_input_grad_f32(false, p.n, oh, ow, p.c, p.kh, p.kw, p.f, oh + p.kh - 1,
                                  ow + p.kw - 1, 0, 0, dyp.data(), k.data(), dx.data());
  });
  results.push_back({std::string(p.name) + " input grad", ms, p.flops() / ms / 1e6});
}

void benchMatmul(const char *name, bool ta, bool tb, int64_t m, int64_t n, int64_t k, int repeats,
                 std::vector<Result> &results) {
  std::vector<float> a = filled(m * k), b = filled(k * n), c = filled(m * n);
  double ms = medianTime(repeats, [&] {
    shardrt_matmul_f32(false, ta, tb, m, n, k, ta ? m : k, tb ? k : n, n, a.data(), b.data(),
                       c.data());
  });
  results.push_back({name, ms, 2.0 * m * n * k / ms / 1e6});
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int numRanks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &numRanks);
  // REPEATS alone: anything else (--help) gets the usage, not atoi's 0 repeats (whose
  // empty medians crashed it).
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 10;
  if (argc > 2 || repeats < 1) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
      std::fprintf(stderr, "usage: %s [REPEATS]  (REPEATS >= 1, default 10)\n", argv[0]);
    MPI_Finalize();
    return argc > 1 && std::string(argv[1]) == "--help" ? 0 : 2;
  }

  auto [defaultMs, defaultFirstMs] = timeTemporaries(repeats + 1);
  int64_t meshSize = numRanks;
  shardrt_init(&argc, &argv, 1, &meshSize, nullptr);
  auto [keptMs, keptFirstMs] = timeTemporaries(repeats + 1);

  std::vector<Result> results;
  benchConv({"conv1", 128, 30, 30, 1, 3, 3, 32, 1}, repeats, results);
  benchConv({"conv2", 128, 16, 16, 32, 3, 3, 64, 1}, repeats, results);
  benchMatmul("dense1 forward [128x3136]x[3136x256]", false, false, 128, 256, 3136, repeats,
              results);
  benchMatmul("dense1 input grad [128x256]x[3136x256]^T", false, true, 128, 3136, 256, repeats,
              results);
  benchMatmul("dense1 weight grad [128x3136]^T x[128x256]", true, false, 3136, 256, 128, repeats,
              results);
  benchMatmul("sgemm 1024^3", false, false, 1024, 1024, 1024, repeats, results);

  if (shardrt_rank() == 0) {
    int64_t stepBytes = 0;
    for (int64_t bytes : kStepBytes)
      stepBytes += bytes;
    std::printf("{\"bench\": \"kernels\", \"ranks\": %d, \"repeats\": %d, "
                "\"openblas_threads_env\": \"%s\",\n",
                numRanks, repeats,
                std::getenv("OPENBLAS_NUM_THREADS") ? std::getenv("OPENBLAS_NUM_THREADS") : "");
    std::printf(" \"temporaries\": {\"mib_per_step\": %.1f, \"glibc_default_median_ms\": %.2f, "
                "\"glibc_default_first_ms\": %.2f, \"kept_median_ms\": %.2f, "
                "\"kept_first_ms\": %.2f},\n",
                stepBytes / 1048576.0, defaultMs, defaultFirstMs, keptMs, keptFirstMs);
    std::printf(" \"kernels\": [\n");
    for (size_t i = 0; i < results.size(); ++i)
      std::printf("  {\"name\": \"%s\", \"median_ms\": %.3f, \"gflops\": %.1f}%s\n",
                  results[i].name.c_str(), results[i].ms, results[i].gflops,
                  i + 1 < results.size() ? "," : "");
    std::printf(" ]}\n");
  }
  shardrt_finalize();
  MPI_Finalize();
  return 0;
}
