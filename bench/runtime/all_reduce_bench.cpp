// shardrt-bench-all-reduce [SIZES] [REPEATS]: shardrt_all_reduce_f32 against a plain
// MPI_Allreduce on the same buffer, in place, over all ranks (a 1-axis mesh), the
// gradients' all-reduce under --reduce-precision bf16 (shardrt_all_reduce_gradient_f32:
// half the bytes sent, and the conversions), and a memcpy of the buffer (what gathering
// it into a gradient bucket costs). SIZES is a
// comma-separated list, each in MiB or in bytes with a K or M suffix (binary units):
// 4K,256K,64M; by default 4K,64K,1M,16M,64M.
//
// Each repeat times the three, one after the other (which first rotates), so the
// machine's noise hits them alike.
// Prints one JSON object per size (a line each) on rank 0 with the medians in
// milliseconds.
#include "shardrt/shardrt.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace {

double median(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  size_t n = times.size();
  return n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
}

template <typename Call> double timed(Call call) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  call();
  double local = MPI_Wtime() - start, slowest = 0;
  MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest * 1e3;
}

/// Times both calls on `bytes` bytes, `repeats` times; prints the medians on rank 0.
void measure(int numRanks, int64_t bytes, int repeats) {
  const int64_t count = std::max<int64_t>(bytes / int64_t(sizeof(float)), 1);
  std::vector<float> buffer(count, 1.0f), copy(count);
  const uint32_t allAxes = 1;

  // One untimed call each: the scratch buffer's first touch, MPI's connections.
  shardrt_all_reduce_f32(allAxes, buffer.data(), buffer.data(), count, SHARDRT_SUM);
  MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                MPI_COMM_WORLD);
  shardrt_set_reduce_precision_bf16(1);
  shardrt_all_reduce_gradient_f32(allAxes, buffer.data(), buffer.data(), count, SHARDRT_SUM);
  shardrt_set_reduce_precision_bf16(0);
  std::vector<double> shardrt, mpi, bf16, copies;
  auto runtimeCall = [&] {
    shardrt.push_back(timed([&] {
      shardrt_all_reduce_f32(allAxes, buffer.data(), buffer.data(), count, SHARDRT_SUM);
    }));
  };
  auto mpiCall = [&] {
    mpi.push_back(timed([&] {
      MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    }));
  };
  auto bf16Call = [&] {
    shardrt_set_reduce_precision_bf16(1);
    bf16.push_back(timed([&] {
      shardrt_all_reduce_gradient_f32(allAxes, buffer.data(), buffer.data(), count, SHARDRT_SUM);
    }));
    shardrt_set_reduce_precision_bf16(0);
  };
  const std::function<void()> calls[] = {runtimeCall, mpiCall, bf16Call};
  for (int r = 0; r < repeats; ++r) {
    copies.push_back(
        timed([&] { std::memcpy(copy.data(), buffer.data(), count * sizeof(float)); }));
    // Whichever runs later finds the caches and the allocator as the one before left
    // them: the order rotates.
    for (int i = 0; i < 3; ++i)
      calls[(r + i) % 3]();
  }
  if (shardrt_rank() == 0)
    std::printf("{\"bench\": \"all_reduce_f32\", \"ranks\": %d, \"bytes\": %lld, "
                "\"repeats\": %d, \"shardrt_median_ms\": %.4f, "
                "\"mpi_allreduce_median_ms\": %.4f, \"gradient_bf16_median_ms\": %.4f, "
                "\"memcpy_median_ms\": %.4f}\n",
                numRanks, static_cast<long long>(count * sizeof(float)), repeats, median(shardrt),
                median(mpi), median(bf16), median(copies));
}
} // namespace

int main(int argc, char **argv) {
  int numRanks = 1;
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &numRanks);
  int64_t meshSize = numRanks;
  shardrt_init(&argc, &argv, 1, &meshSize, nullptr);

  std::vector<int64_t> sizes;
  for (const char *size = argc > 1 ? argv[1] : "4K,64K,1M,16M,64M"; *size;) {
    char *unit = nullptr;
    int64_t bytes = std::strtoll(size, &unit, 10);
    bytes *= *unit == 'K' ? 1 << 10 : *unit == 'M' || *unit == ',' || *unit == 0 ? 1 << 20 : 0;
    size = unit + (*unit == 'K' || *unit == 'M');
    if (*size == ',')
      ++size;
    else if (*size)
      bytes = 0;
    sizes.push_back(bytes);
    if (bytes <= 0)
      break;
  }
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 10;
  if (sizes.empty() || sizes.back() <= 0 || repeats < 1) {
    std::fprintf(stderr, "usage: shardrt-bench-all-reduce [SIZES: comma-separated, MiB or bytes "
                         "with K or M] [REPEATS]\n");
    shardrt_finalize();
    MPI_Finalize();
    return 2;
  }
  for (int64_t bytes : sizes)
    measure(numRanks, bytes, repeats);
  shardrt_finalize();
  MPI_Finalize();
  return 0;
}
