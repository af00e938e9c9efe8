// shardrt-calibrate: what a layout search's cost model needs to know of this machine,
// measured with every rank busy at once (start it as the program will run:
// `mpirun -np N shardrt-calibrate`, across hosts or over TCP alike):
//
//   gemm_flops_per_rank    the runtime's sgemm (shardrt_matmul_f32, one BLAS thread per
//                          rank) on square matrices of 128, 256 and 512: the median rate
//   elementwise_per_rank   iterations per second of a streaming loop c = a * b + c over
//                          arrays larger than the caches (what an elementwise op or the
//                          optimizer's update costs per element)
//   latency_seconds, bandwidth_bytes_per_second
//                          the runtime's all_reduce over every rank at 4 KiB .. 8 MiB:
//                          time = latency + sent / bandwidth, sent = 2 (N - 1) / N bytes a
//                          rank sends in a ring; the bandwidth from the two largest sizes,
//                          the latency what the smallest leaves
//
// Each figure is the slowest rank's (a step waits for it), the median of its repeats.
// Prints one JSON object on rank 0.
#include "shardrt/shardrt.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/// Seconds the slowest rank takes for `call`, all starting together.
template <typename Call> double slowest(Call call) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  call();
  double local = MPI_Wtime() - start, worst = 0;
  MPI_Allreduce(&local, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

/// The median over `repeats` of `call` run often enough (the same count on every rank)
/// to last about `atLeast` seconds, per call.
template <typename Call> double secondsPerCall(Call call, int repeats, double atLeast) {
  double once = slowest(call);
  int times = std::max(1, int(atLeast / std::max(once, 1e-7)));
  MPI_Bcast(&times, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r)
    samples.push_back(slowest([&] {
                        for (int i = 0; i < times; ++i)
                          call();
                      }) /
                      times);
  return median(samples);
}

} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::printf("usage: mpirun -np N shardrt-calibrate\n\nMeasures, with N ranks busy at "
                  "once, the GEMM rate, a streaming loop's rate and the all_reduce's latency "
                  "and bandwidth; prints them as one JSON object (what shardc tune's cost "
                  "model reads).\n");
      return 0;
    }
  MPI_Init(&argc, &argv);
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int64_t meshSize = ranks;
  shardrt_init(&argc, &argv, 1, &meshSize, nullptr);
  const int repeats = 5;

  std::string gemmSamples;
  std::vector<double> gemmRates;
  for (int64_t n : {128, 256, 512}) {
    std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n, 0.0f);
    double seconds = secondsPerCall(
        [&] { shardrt_matmul_f32(0, 0, 0, n, n, n, n, n, n, a.data(), b.data(), c.data()); },
        repeats, 0.03);
    double rate = 2.0 * double(n * n * n) / seconds;
    gemmRates.push_back(rate);
    char entry[160];
    std::snprintf(entry, sizeof entry, "%s{\"m\": %lld, \"n\": %lld, \"k\": %lld, \"flops_per_rank\": %.4g}",
                  gemmSamples.empty() ? "" : ", ", (long long)n, (long long)n, (long long)n, rate);
    gemmSamples += entry;
  }

  const int64_t streamed = int64_t(1) << 21; // 3 arrays of 8 MiB
  std::vector<float> x(streamed, 1.0f), y(streamed, 0.5f), z(streamed, 0.0f);
  double streamSeconds = secondsPerCall(
      [&] {
        float *out = z.data();
        const float *p = x.data(), *q = y.data();
        for (int64_t i = 0; i < streamed; ++i)
          out[i] = p[i] * q[i] + out[i];
      },
      repeats, 0.03);
  const double elementwise = double(streamed) / streamSeconds;

  std::string reduceSamples;
  std::vector<std::pair<double, double>> sentAndSeconds;
  if (ranks > 1)
    for (int64_t bytes : {int64_t(4) << 10, int64_t(64) << 10, int64_t(1) << 20, int64_t(8) << 20}) {
      const int64_t count = bytes / int64_t(sizeof(float));
      std::vector<float> buffer(count, 1.0f);
      double seconds = secondsPerCall(
          [&] { shardrt_all_reduce_f32(1, buffer.data(), buffer.data(), count, SHARDRT_SUM); },
          repeats, 0.02);
      sentAndSeconds.push_back({2.0 * double(ranks - 1) / ranks * double(bytes), seconds});
      char entry[120];
      std::snprintf(entry, sizeof entry, "%s{\"bytes\": %lld, \"seconds\": %.4g}",
                    reduceSamples.empty() ? "" : ", ", (long long)bytes, seconds);
      reduceSamples += entry;
    }

  if (shardrt_rank() == 0) {
    std::printf("{\"ranks\": %d, \"gemm_flops_per_rank\": %.4g, \"gemm\": [%s], "
                "\"elementwise_per_rank\": %.4g",
                ranks, median(gemmRates), gemmSamples.c_str(), elementwise);
    if (ranks > 1) {
      const auto &[sentMid, secondsMid] = sentAndSeconds[sentAndSeconds.size() - 2];
      const auto &[sentBig, secondsBig] = sentAndSeconds.back();
      const double bandwidth = (sentBig - sentMid) / std::max(secondsBig - secondsMid, 1e-9);
      const double latency =
          std::max(0.0, sentAndSeconds.front().second - sentAndSeconds.front().first / bandwidth);
      std::printf(", \"all_reduce\": [%s], \"latency_seconds\": %.4g, "
                  "\"bandwidth_bytes_per_second\": %.4g",
                  reduceSamples.c_str(), latency, bandwidth);
    }
    std::printf("}\n");
  }
  shardrt_finalize();
  MPI_Finalize();
  return 0;
}
