// shardrt-calibrate: what a layout search's cost model needs to know of this machine,
// measured with every rank busy at once. Start it as the program will run,
// `mpirun -np N shardrt-calibrate` (with `--mca btl tcp,self` it measures TCP links).
// Prints one JSON object on rank 0's stdout and nothing else:
//
//   gemm_flops_per_rank    the runtime's own f32 products (shardrt_matmul_f32: oneDNN's
//                          matmul at these sizes, one thread per rank, set up as a
//                          compiled program's main sets it up), every rank at once, 2 M N K per
//                          call: "gemm" per size (256^3, 512^3), the 512^3 figure the headline
//   gemm_bf16_flops_per_rank
//                          the same for the products a program holds in bfloat16
//                          (shardrt_matmul_bf16: oneDNN's bf16 matmul, f32 accumulation;
//                          `precision matmul : bf16`): "gemm_bf16" per size
//   bf16_products          how those ran: "onednn" (the CPU's bf16 kernels) or
//                          "emulated" (an f32 product of the operands widened: a CPU
//                          without AVX512-BF16 or AMX, or ONEDNN_MAX_CPU_ISA below it)
//   elementwise_per_rank   iterations per second of a streaming loop c = a * b + c over
//                          arrays larger than the caches (what an elementwise op or the
//                          optimizer's update costs per element)
//   all_reduce             shardrt_all_reduce_f32 over a 1-axis mesh of all N ranks, in
//                          place, 4 KiB .. 8 MiB: seconds per call
//   latency_seconds, bandwidth_bytes_per_second
//                          time = latency + sent / bandwidth fitted to those samples by
//                          least squares in relative error (each sample's residual over
//                          its time, so that 4 KiB counts as much as 8 MiB), sent =
//                          2 (N - 1) / N bytes, what a rank sends in a ring all-reduce;
//                          1 rank: latency 0, bandwidth null
//   blas                   the BLAS the runtime computes with ("OpenBLAS Haswell, 1 thread")
//
// `shardrt-calibrate --process-memory` measures instead what a rank of a compiled program
// holds before its own memory (what shardc --report adds to the program's figures as
// "process"): {"ranks": N, "process_resident_bytes": B, "onednn_resident_bytes": C},
// C what its first oneDNN convolutions and products add (onednnResidentBytes), B the
// largest rank's resident memory once MPI, the runtime and OpenBLAS's work buffer are set up and a
// few collectives have run (MPI's buffers, the runtime's scratch at its first size), as a compiled
// program's first step finds them. The build runs it (runtime/CMakeLists.txt).
//
// Every sample is the slowest rank's (a step waits for it): the ranks meet, a batch of calls
// lasting at least a few tens of milliseconds, the most of the ranks' times. After one
// untimed warm-up call, the median of up to 7 such batches (fewer when a batch is slow,
// so that 8 ranks on 2 cores finish in a few seconds).
#include "shardrt/shardrt.h"

#include "host/host.h"
#include "shardrt/convolution_buffers.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kRepeats = 7;
// A measurement's repeats stop once they took this long (at least 3 are kept).
constexpr double kSecondsPerMeasurement = 0.6;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/// Seconds the slowest rank takes for `call`, all starting together. The ranks meet
/// through the runtime's own all_reduce, which waits as a compiled program waits
/// (yielding the core): MPI's barrier spins, and with more ranks than cores the
/// spinning ranks take the cores from those still computing.
template <typename Call> double slowest(Call call) {
  float token = 0;
  shardrt_all_reduce_f32(1, &token, &token, 1, SHARDRT_SUM);
  double start = MPI_Wtime();
  call();
  float local = float(MPI_Wtime() - start), worst = 0;
  shardrt_all_reduce_f32(1, &local, &worst, 1, SHARDRT_MAX);
  return worst;
}

/// Seconds per call of `call`: one untimed warm-up (first touches, connections), then
/// batches growing until one lasts `batchSeconds`, then the median of batches of that
/// many calls. Every rank sees the same slowest times and so makes the same counts.
template <typename Call> double secondsPerCall(Call call, double batchSeconds) {
  auto batchOf = [&](int times) {
    return slowest([&] {
      for (int i = 0; i < times; ++i)
        call();
    });
  };
  call();
  int times = 1;
  for (double took = batchOf(times); took < batchSeconds && times < (1 << 20);
       took = batchOf(times))
    times = int(times * std::clamp(1.2 * batchSeconds / std::max(took, 1e-7), 2.0, 8.0));
  std::vector<double> samples;
  double spent = 0;
  for (int r = 0; r < kRepeats && (r < 3 || spent < kSecondsPerMeasurement); ++r) {
    const double batch = batchOf(times);
    spent += batch;
    samples.push_back(batch / times);
  }
  return median(samples);
}

struct Fit {
  double latency = 0, secondsPerByte = 0;
};

/// t = latency + secondsPerByte * x, minimising the sum of ((fitted - t) / t)^2.
Fit fitRelative(const std::vector<std::pair<double, double>> &sentAndSeconds) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto &[x, t] : sentAndSeconds) {
    const double w = 1 / (t * t);
    sw += w;
    sx += w * x;
    sy += w * t;
    sxx += w * x * x;
    sxy += w * x * t;
  }
  Fit fit;
  const double det = sw * sxx - sx * sx;
  if (det > 0) {
    fit.secondsPerByte = (sw * sxy - sx * sy) / det;
    fit.latency = (sy - fit.secondsPerByte * sx) / sw;
  }
  // On a loaded machine (the ranks sharing their cores with other work) the times may
  // not grow with the size, and the fit's rate or latency comes out negative: then the
  // smallest message's time is the latency and the largest's the rate, at least half
  // of its time being bytes.
  if (fit.secondsPerByte > 0 && fit.latency >= 0)
    return fit;
  auto [smallest, largest] =
      std::minmax_element(sentAndSeconds.begin(), sentAndSeconds.end(),
                          [](const auto &a, const auto &b) { return a.first < b.first; });
  fit.latency = smallest->second;
  fit.secondsPerByte =
      std::max(largest->second - fit.latency, largest->second / 2) / largest->first;
  return fit;
}

/// This rank's resident bytes.
int64_t residentBytes() {
  const shardrt::ResidentMemory memory = shardrt::residentMemory();
  return memory.anonymous + memory.file + memory.shared;
}

/// The most of `mine` over the ranks. Collective.
int64_t largestOverRanks(int64_t mine) {
  int64_t largest = 0;
  MPI_Allreduce(&mine, &largest, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  return largest;
}

/// The largest rank's resident bytes, set up as a compiled program is when its first
/// step starts. Collective.
int64_t processResidentBytes() {
  if (!shardrt::claimBlasWorkBuffer())
    return -1;
  for (int64_t bytes : {int64_t(4) << 10, int64_t(1) << 20}) {
    std::vector<float> buffer(bytes / int64_t(sizeof(float)), 1.0f);
    shardrt_all_reduce_f32(/*all axes*/ 1, buffer.data(), buffer.data(), int64_t(buffer.size()),
                           SHARDRT_SUM);
  }
  return largestOverRanks(residentBytes());
}

/// What a rank's first calls into oneDNN add to it whatever their shapes (the
/// library's code they touch, its generated kernels): the most any rank grew over a
/// forward convolution and an input gradient of 16 channels on 4 x 4 pixels, products
/// with a thin side (oneDNN's sgemm) and 32 x 32 x 32 ones (its matmul), each as a
/// forward pass and both gradients use it, whose own buffers are a few KiB. shardc
/// --report adds it to a program with product or convolution kernels, and each
/// convolution shape's buffers (shardrt/convolution_buffers.h).
int64_t onednnResidentBytes() {
  const int64_t before = residentBytes();
  constexpr int64_t n = 1, side = 4, channels = shardrt::kDnnlConvChannels;
  std::vector<float> x(n * side * side * channels, 1.0f), k(9 * channels * channels, 0.5f),
      y(x.size(), 0.0f), dx(x.size(), 0.0f);
  shardrt_conv2d_f32(0, n, side, side, channels, 1, 1, 3, 3, channels, side, side, 1, 1, 1, 1,
                     x.data(), k.data(), y.data());
  shardrt_conv2d_input_grad_f32(0, n, side, side, channels, 3, 3, channels, side, side, 1, 1,
                                y.data(), k.data(), dx.data());
  // [m, 32] x [32, 32] as y = x w, dx = dy w^T, dw = x^T dy: m = 4 is thin, 32 wide.
  constexpr int64_t d = 32;
  std::vector<float> a(d * d, 1.0f), b(d * d, 0.5f), c(d * d, 0.0f);
  for (int64_t m : {4, 32}) {
    shardrt_matmul_f32(0, 0, 0, m, d, d, d, d, d, a.data(), b.data(), c.data());
    shardrt_matmul_f32(0, 0, 1, m, d, d, d, d, d, a.data(), b.data(), c.data());
    shardrt_matmul_f32(0, 1, 0, d, d, m, d, d, d, a.data(), b.data(), c.data());
  }
  return largestOverRanks(std::max<int64_t>(0, residentBytes() - before));
}

std::string number(double value) {
  if (!std::isfinite(value))
    return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

int usage(std::FILE *to, int status) {
  // Under mpirun every rank would print it; rank 0 alone does.
  const char *rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!rank || !std::strcmp(rank, "0"))
    std::fprintf(
        to, "usage: mpirun -np N shardrt-calibrate\n\n"
            "Measures this machine with N ranks running at once, as a compiled program runs\n"
            "(one BLAS thread per rank): the runtime's sgemm rate per rank (256^3 and 512^3),\n"
            "a streaming loop's rate, and shardrt_all_reduce_f32 over all N ranks at 4 KiB,\n"
            "64 KiB, 1 MiB and 8 MiB, fitted as latency + bytes sent / bandwidth. Prints one\n"
            "JSON object on rank 0's stdout (what shardc tune's cost model reads).\n\n"
            "--process-memory: prints instead what a rank holds before a compiled program's\n"
            "own memory (MPI, the runtime, the libraries' code), as shardc --report counts it.\n");
  return status;
}

} // namespace

int main(int argc, char **argv) {
  bool processMemory = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h"))
      return usage(stdout, 0);
    if (!std::strcmp(argv[i], "--process-memory")) {
      processMemory = true;
      continue;
    }
    std::fprintf(stderr, "shardrt-calibrate: error: unknown argument '%s'\n", argv[i]);
    return usage(stderr, 2);
  }
  // As a compiled program's main (shardrt_main) does: OpenBLAS starts no worker threads,
  // and shardrt_init then computes with one BLAS thread unless the environment says
  // otherwise; the sgemm measured is the one the kernels call.
  shardrt::restartWithOneBlasThread();
  MPI_Init(&argc, &argv);
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int64_t meshSize = ranks;
  shardrt_init(&argc, &argv, 1, &meshSize, nullptr);
  if (processMemory) {
    const int64_t bytes = processResidentBytes();
    const int64_t onednn = onednnResidentBytes();
    if (shardrt_rank() == 0 && bytes >= 0)
      std::printf("{\"ranks\": %d, \"process_resident_bytes\": %lld, "
                  "\"onednn_resident_bytes\": %lld}\n",
                  ranks, (long long)bytes, (long long)onednn);
    shardrt_finalize();
    MPI_Finalize();
    return bytes >= 0 ? 0 : 1;
  }

  // Square products of 256 and 512, 2 M N K per call; the 512 one the headline.
  auto gemmRates = [&](auto product, std::string &samples) {
    double headline = 0;
    for (int64_t n : {256, 512}) {
      const double seconds = secondsPerCall([&] { product(n); }, 0.05);
      headline = 2.0 * double(n) * double(n) * double(n) / seconds;
      samples += (samples.empty() ? "" : ", ") + std::string("{\"m\": ") + std::to_string(n) +
                 ", \"n\": " + std::to_string(n) + ", \"k\": " + std::to_string(n) +
                 ", \"flops_per_rank\": " + number(headline) + "}";
    }
    return headline;
  };
  std::vector<float> a(512 * 512, 0.5f), b(512 * 512, 0.25f), c(512 * 512, 0.0f);
  std::string gemmSamples, gemmBf16Samples;
  const double gemmHeadline = gemmRates(
      [&](int64_t n) {
        shardrt_matmul_f32(0, 0, 0, n, n, n, n, n, n, a.data(), b.data(), c.data());
      },
      gemmSamples);
  // 0.5 and 0.25 in bfloat16: the high halves of their f32 bits.
  std::vector<uint16_t> a16(512 * 512, 0x3f00), b16(512 * 512, 0x3e80);
  const double gemmBf16Headline = gemmRates(
      [&](int64_t n) {
        shardrt_matmul_bf16(0, 0, 0, n, n, n, n, n, n, a16.data(), b16.data(), c.data());
      },
      gemmBf16Samples);

  const int64_t streamed = int64_t(1) << 21; // 3 arrays of 8 MiB
  std::vector<float> x(streamed, 1.0f), y(streamed, 0.5f), z(streamed, 0.0f);
  const double streamSeconds = secondsPerCall(
      [&] {
        float *out = z.data();
        const float *p = x.data(), *q = y.data();
        for (int64_t i = 0; i < streamed; ++i)
          out[i] = p[i] * q[i] + out[i];
      },
      0.05);
  const double elementwise = double(streamed) / streamSeconds;

  std::string reduceSamples;
  std::vector<std::pair<double, double>> sentAndSeconds;
  if (ranks > 1)
    for (int64_t bytes :
         {int64_t(4) << 10, int64_t(64) << 10, int64_t(1) << 20, int64_t(8) << 20}) {
      const int64_t count = bytes / int64_t(sizeof(float));
      std::vector<float> buffer(count, 1.0f);
      const double seconds = secondsPerCall(
          [&] {
            shardrt_all_reduce_f32(/*all axes*/ 1, buffer.data(), buffer.data(), count,
                                   SHARDRT_SUM);
          },
          0.02);
      sentAndSeconds.push_back({2.0 * double(ranks - 1) / ranks * double(bytes), seconds});
      reduceSamples += (reduceSamples.empty() ? "" : ", ") + std::string("{\"bytes\": ") +
                       std::to_string(bytes) + ", \"seconds\": " + number(seconds) + "}";
    }

  if (shardrt_rank() == 0) {
    std::string latency = "0", bandwidth = "null";
    if (ranks > 1) {
      const Fit fit = fitRelative(sentAndSeconds);
      latency = number(std::max(fit.latency, 0.0));
      if (fit.secondsPerByte > 0)
        bandwidth = number(1 / fit.secondsPerByte);
    }
    std::printf("{\"ranks\": %d, \"gemm_flops_per_rank\": %s, \"gemm\": [%s], "
                "\"gemm_bf16_flops_per_rank\": %s, \"gemm_bf16\": [%s], "
                "\"bf16_products\": \"%s\", "
                "\"elementwise_per_rank\": %s, \"all_reduce\": [%s], \"latency_seconds\": %s, "
                "\"bandwidth_bytes_per_second\": %s, \"blas\": \"%s\"}\n",
                ranks, number(gemmHeadline).c_str(), gemmSamples.c_str(),
                number(gemmBf16Headline).c_str(), gemmBf16Samples.c_str(), shardrt_bf16_products(),
                number(elementwise).c_str(), reduceSamples.c_str(), latency.c_str(),
                bandwidth.c_str(), shardrt::blasConfig().c_str());
    std::fflush(stdout);
  }
  shardrt_finalize();
  MPI_Finalize();
  return 0;
}
