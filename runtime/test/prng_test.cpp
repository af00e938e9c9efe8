// shardrt-test-prng: the counter-based generator and the parameter initialisers.
//
// One process, no MPI. Checks Philox4x32-10 and FNV-1a against their published test
// vectors; that fills are deterministic and differ by seed and path; that every
// sharding of a parameter holds bitwise the numbers of the unsharded one; and that the
// distributions have the moments and ranges they should. Prints a line per group and
// `prng: N checks passed`; exits non-zero on any failure.
#include "random/prng.h"
#include "shardrt/shardrt.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

namespace {

int checks = 0, failures = 0;

void expect(bool ok, const std::string &what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  }
}

void expectNear(double got, double want, double tolerance, const std::string &what) {
  expect(std::fabs(got - want) <= tolerance, what + ": " + std::to_string(got) + ", expected " +
                                                 std::to_string(want) + " +- " +
                                                 std::to_string(tolerance));
}

using Shape = std::vector<int64_t>;

int64_t elements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

/// An initialiser under test: fills the shard (global shape, local shape, offset).
using Fill = std::function<void(float *, const Shape &, const Shape &, const Shape &)>;

// --- Known answers ------------------------------------------------------------------

void checkPhiloxKnownAnswers() {
  // Random123's kat_vectors for philox4x32_10: counter, key -> output.
  struct Vector {
    uint32_t counter[4], key[2], expected[4];
  } vectors[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Vector &v : vectors) {
    uint32_t out[4];
    shardrt_philox4x32_10(v.counter, v.key, out);
    char text[128];
    std::snprintf(text, sizeof text, "philox4x32_10(%08x..., key %08x %08x) = %08x %08x %08x %08x",
                  v.counter[0], v.key[0], v.key[1], out[0], out[1], out[2], out[3]);
    expect(std::memcmp(out, v.expected, sizeof out) == 0, text);
  }
  // FNV-1a 64 of "", "a", "foobar" (Fowler/Noll/Vo's published values).
  expect(shardrt_hash_path("") == 0xcbf29ce484222325ull, "fnv1a64(\"\")");
  expect(shardrt_hash_path("a") == 0xaf63dc4c8601ec8cull, "fnv1a64(\"a\")");
  expect(shardrt_hash_path("foobar") == 0x85944171f73967e8ull, "fnv1a64(\"foobar\")");
  std::printf("prng: known answers checked (philox4x32_10, fnv1a64)\n");
}

// --- Determinism -----------------------------------------------------------------------

std::vector<float> fillWhole(const Shape &shape, uint64_t seed, const char *path) {
  std::vector<float> data(elements(shape));
  Shape zero(shape.size(), 0);
  shardrt_fill_normal_f32(data.data(), static_cast<int>(shape.size()), shape.data(), shape.data(),
                          zero.data(), seed, path, 1.0f);
  return data;
}

double fractionEqual(const std::vector<float> &a, const std::vector<float> &b) {
  int64_t same = 0;
  for (size_t i = 0; i < a.size(); ++i)
    same += a[i] == b[i];
  return double(same) / a.size();
}

void checkDeterminism() {
  const Shape shape = {64, 48};
  std::vector<float> first = fillWhole(shape, 42, "blocks.W1");
  std::vector<float> again = fillWhole(shape, 42, "blocks.W1");
  expect(std::memcmp(first.data(), again.data(), first.size() * sizeof(float)) == 0,
         "the same fill twice is bitwise the same");
  expect(fractionEqual(first, fillWhole(shape, 43, "blocks.W1")) < 0.01,
         "another seed gives other numbers");
  expect(fractionEqual(first, fillWhole(shape, 42, "blocks.W2")) < 0.01,
         "another path gives other numbers");
  // The fill's element n is the documented scalar draw at index n.
  uint64_t key = shardrt_hash_path("blocks.W1");
  bool same = true;
  for (int64_t n = 0; n < elements(shape); ++n)
    same = same && first[n] == shardrt_normal01(42, key, n);
  expect(same, "fill_normal(stddev 1)[n] == shardrt_normal01(seed, hash(path), n)");
  std::printf("prng: fills are deterministic and keyed by seed and path\n");
}

/// maskUniformRun (a dropout mask's draws, a block per four elements, vectorized) draws
/// element by element what maskUniformAt does, whatever the run's start and length:
/// runs that begin and end inside a block, empty runs, long ones.
void checkUniformRuns() {
  const uint64_t key = shardrt_hash_path("dropout.mask");
  bool same = true;
  for (uint64_t first : {0ull, 1ull, 2ull, 3ull, 5ull, 1000001ull, (1ull << 34) + 2})
    for (int64_t n : {0, 1, 2, 3, 4, 5, 7, 17, 1000}) {
      std::vector<float> run(n);
      shardrt::maskUniformRun(7, key, first, n, run.data());
      for (int64_t j = 0; j < n; ++j)
        same = same && run[j] == shardrt::maskUniformAt(7, key, first + j);
    }
  expect(same, "maskUniformRun[j] == maskUniformAt(first + j)");
  std::printf("prng: runs of uniform draws equal the draws one by one\n");
}

// --- Layout independence --------------------------------------------------------------

/// Fills `shape` as the blocks of a grid that cuts dimension d into parts[d] pieces at
/// the given boundaries, each block on its own as a rank would, and assembles them.
std::vector<float> fillByBlocks(const Fill &fill, const Shape &shape,
                                const std::vector<std::vector<int64_t>> &cuts) {
  const int ndim = static_cast<int>(shape.size());
  std::vector<float> whole(elements(shape));
  std::vector<size_t> block(ndim, 0); // which piece along each dimension
  for (;;) {
    Shape offset(ndim), local(ndim);
    for (int d = 0; d < ndim; ++d) {
      offset[d] = cuts[d][block[d]];
      local[d] = cuts[d][block[d] + 1] - offset[d];
    }
    std::vector<float> shard(elements(local));
    fill(shard.data(), shape, local, offset);
    // Copy the shard into place: walk its elements in row-major order.
    for (int64_t i = 0; i < elements(local); ++i) {
      int64_t rest = i, global = 0, stride = 1;
      for (int d = ndim - 1; d >= 0; --d) {
        global += (offset[d] + rest % local[d]) * stride;
        rest /= local[d];
        stride *= shape[d];
      }
      whole[global] = shard[i];
    }
    int d = ndim - 1;
    while (d >= 0 && ++block[d] + 1 == cuts[d].size())
      block[d--] = 0;
    if (d < 0)
      return whole;
  }
}

/// Even cuts of `size` into `parts`.
std::vector<int64_t> even(int64_t size, int64_t parts) {
  std::vector<int64_t> cuts;
  for (int64_t p = 0; p <= parts; ++p)
    cuts.push_back(size / parts * p);
  return cuts;
}

void checkLayoutIndependence() {
  const uint64_t seed = 7;
  struct Named {
    const char *name;
    Fill fill;
  };
  auto shardArgs = [](const Shape &global, const Shape &local, const Shape &offset) {
    return std::make_tuple(static_cast<int>(global.size()), global.data(), local.data(),
                           offset.data());
  };
  const std::vector<Named> initialisers = {
      {"normal",
       [&](float *out, const Shape &g, const Shape &l, const Shape &o) {
         auto [n, gs, ls, os] = shardArgs(g, l, o);
         shardrt_fill_normal_f32(out, n, gs, ls, os, seed, "p.normal", 0.02f);
       }},
      {"uniform",
       [&](float *out, const Shape &g, const Shape &l, const Shape &o) {
         auto [n, gs, ls, os] = shardArgs(g, l, o);
         shardrt_fill_uniform_f32(out, n, gs, ls, os, seed, "p.uniform", 0.05f);
       }},
      {"xavier_normal",
       [&](float *out, const Shape &g, const Shape &l, const Shape &o) {
         auto [n, gs, ls, os] = shardArgs(g, l, o);
         shardrt_fill_xavier_normal_f32(out, n, gs, ls, os, seed, "p.xn", 48, 40);
       }},
      {"xavier_uniform",
       [&](float *out, const Shape &g, const Shape &l, const Shape &o) {
         auto [n, gs, ls, os] = shardArgs(g, l, o);
         shardrt_fill_xavier_uniform_f32(out, n, gs, ls, os, seed, "p.xu", 48, 40);
       }},
      {"lecun_normal",
       [&](float *out, const Shape &g, const Shape &l, const Shape &o) {
         auto [n, gs, ls, os] = shardArgs(g, l, o);
         shardrt_fill_lecun_normal_f32(out, n, gs, ls, os, seed, "p.ln", 48, 40);
       }},
      {"he_normal",
       [&](float *out, const Shape &g, const Shape &l, const Shape &o) {
         auto [n, gs, ls, os] = shardArgs(g, l, o);
         shardrt_fill_he_normal_f32(out, n, gs, ls, os, seed, "p.hn", 48, 40);
       }},
  };
  // A 2-d parameter under four shardings (rows over 4, columns over 4, a 2x2 grid, a
  // 2x4 grid) and uneven blocks; a stacked 3-d one and a conv kernel split on inner
  // dimensions.
  struct Layout {
    const char *name;
    Shape shape;
    std::vector<std::vector<int64_t>> cuts;
  };
  const std::vector<Layout> layouts = {
      {"48x40 rows/4", {48, 40}, {even(48, 4), even(40, 1)}},
      {"48x40 cols/4", {48, 40}, {even(48, 1), even(40, 4)}},
      {"48x40 2x2", {48, 40}, {even(48, 2), even(40, 2)}},
      {"48x40 2x4", {48, 40}, {even(48, 2), even(40, 4)}},
      {"48x40 uneven", {48, 40}, {{0, 5, 47, 48}, {0, 1, 39, 40}}},
      {"4x16x24 (scan) 1x2x4", {4, 16, 24}, {even(4, 1), even(16, 2), even(24, 4)}},
      {"3x3x8x16 (conv) out/4", {3, 3, 8, 16}, {even(3, 1), even(3, 1), even(8, 1), even(16, 4)}},
  };
  int compared = 0;
  for (const Named &init : initialisers)
    for (const Layout &layout : layouts) {
      std::vector<float> whole(elements(layout.shape));
      Shape zero(layout.shape.size(), 0);
      init.fill(whole.data(), layout.shape, layout.shape, zero);
      std::vector<float> sharded = fillByBlocks(init.fill, layout.shape, layout.cuts);
      expect(std::memcmp(whole.data(), sharded.data(), whole.size() * sizeof(float)) == 0,
             std::string(init.name) + " on " + layout.name + ": shards == whole, bitwise");
      ++compared;
    }
  std::printf("prng: %d (initialiser, layout) pairs: every shard holds the unsharded "
              "numbers bitwise\n",
              compared);
}

// --- Distributions -------------------------------------------------------------------

struct Moments {
  double mean, stddev, kurtosis, min, max;
};

Moments momentsOf(const std::vector<float> &data) {
  double sum = 0;
  for (float x : data)
    sum += x;
  double mean = sum / data.size(), m2 = 0, m4 = 0;
  for (float x : data) {
    double d = x - mean;
    m2 += d * d;
    m4 += d * d * d * d;
  }
  m2 /= data.size();
  m4 /= data.size();
  auto [lo, hi] = std::minmax_element(data.begin(), data.end());
  return {mean, std::sqrt(m2), m4 / (m2 * m2), *lo, *hi};
}

void checkDistributions() {
  const Shape shape = {1000, 1000}; // 1e6 draws
  const Shape zero = {0, 0};
  std::vector<float> data(elements(shape));

  shardrt_fill_normal_f32(data.data(), 2, shape.data(), shape.data(), zero.data(), 1, "dist.normal",
                          1.0f);
  Moments normal = momentsOf(data);
  // Standard errors at 1e6 draws: mean 0.001, std 0.0007, kurtosis 0.005.
  expectNear(normal.mean, 0.0, 0.005, "normal mean");
  expectNear(normal.stddev, 1.0, 0.005, "normal stddev");
  expectNear(normal.kurtosis, 3.0, 0.03, "normal kurtosis");
  expect(normal.min > -8.6 && normal.max < 8.6, "normal within Box-Muller's +-8.6");

  shardrt_fill_uniform_f32(data.data(), 2, shape.data(), shape.data(), zero.data(), 1,
                           "dist.uniform", 0.5f);
  Moments uniform = momentsOf(data);
  expect(uniform.min >= -0.5f && uniform.max <= 0.5f, "uniform(0.5) within [-0.5, 0.5]");
  expect(uniform.min < -0.499f && uniform.max > 0.499f, "uniform(0.5) reaches both ends");
  expectNear(uniform.mean, 0.0, 0.002, "uniform(0.5) mean");
  expectNear(uniform.stddev, 1.0 / std::sqrt(12.0), 0.002, "uniform(0.5) stddev");

  uint64_t key = shardrt_hash_path("dist.uniform01");
  for (size_t n = 0; n < data.size(); ++n)
    data[n] = shardrt_uniform01(1, key, n);
  Moments unit = momentsOf(data);
  expect(unit.min >= 0.0f && unit.max < 1.0f, "uniform01 within [0, 1)");
  expectNear(unit.mean, 0.5, 0.002, "uniform01 mean");
  expectNear(unit.stddev, 1.0 / std::sqrt(12.0), 0.002, "uniform01 stddev");
  // Ten equal bins, 1e5 expected in each, standard deviation ~300.
  int64_t bins[10] = {};
  for (float x : data)
    ++bins[std::min(9, static_cast<int>(x * 10))];
  for (int b = 0; b < 10; ++b)
    expectNear(bins[b], 100000, 1500, "uniform01 bin " + std::to_string(b));

  std::printf("prng: normal mean %.4f stddev %.4f kurtosis %.3f; uniform01 mean %.4f "
              "stddev %.4f (1e6 draws each)\n",
              normal.mean, normal.stddev, normal.kurtosis, unit.mean, unit.stddev);
}

/// The normal draw's own log and cosine (vectorizable, prng.cpp) against Box-Muller
/// on libm's: the same float, or one ulp apart for a few in a million.
void checkNormalAgainstLibm() {
  const int64_t draws = 1000000;
  const uint64_t seed = 3, key = shardrt_hash_path("dist.libm");
  const uint32_t keyWords[2] = {uint32_t(key), uint32_t(key >> 32)};
  int64_t differ = 0, farther = 0;
  for (int64_t n = 0; n < draws; ++n) {
    const uint32_t counter[4] = {uint32_t(n), uint32_t(uint64_t(n) >> 32), uint32_t(seed), 0};
    uint32_t block[4];
    shardrt_philox4x32_10(counter, keyWords, block);
    double u1 = double(((uint64_t(block[1]) << 32 | block[0]) >> 11) + 1) * 0x1p-53;
    double u2 = double((uint64_t(block[3]) << 32 | block[2]) >> 11) * 0x1p-53;
    float libm = float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    float ours = shardrt_normal01(seed, key, uint64_t(n));
    if (ours != libm) {
      ++differ;
      farther += std::nextafter(libm, ours) != ours;
    }
  }
  expect(farther == 0,
         "normal01 within one ulp of libm's Box-Muller (" + std::to_string(farther) + " farther)");
  expect(differ <= draws / 100000, "normal01 equals libm's Box-Muller but for a few in 1e5 (" +
                                       std::to_string(differ) + " differ)");
  std::printf("prng: normal01 against libm's log and cos: %lld of %lld draws one ulp apart\n",
              static_cast<long long>(differ), static_cast<long long>(draws));
}

void checkVarianceScaling() {
  // Fans as Flax computes them: dense [in, out]; conv HWIO [3, 3, 64, 128].
  int64_t fanIn = 0, fanOut = 0;
  const Shape dense = {1024, 1024}, conv = {3, 3, 64, 128};
  shardrt_compute_fans(2, dense.data(), &fanIn, &fanOut);
  expect(fanIn == 1024 && fanOut == 1024, "fans of a 1024x1024 kernel");
  shardrt_compute_fans(4, conv.data(), &fanIn, &fanOut);
  expect(fanIn == 3 * 3 * 64 && fanOut == 3 * 3 * 128, "fans of a 3x3x64x128 kernel");

  struct Case {
    const char *name;
    Shape shape;
    decltype(&shardrt_fill_xavier_normal_f32) fill;
    double expectedStddev; // of the distribution, for the shape's fans
  };
  const double denseIn = 1024, denseOut = 1024, convIn = 576, convOut = 1152;
  const Case cases[] = {
      {"xavier_normal", dense, shardrt_fill_xavier_normal_f32,
       std::sqrt(2.0 / (denseIn + denseOut))},
      {"xavier_uniform", dense, shardrt_fill_xavier_uniform_f32,
       std::sqrt(6.0 / (denseIn + denseOut)) / std::sqrt(3.0)},
      {"xavier_normal (conv)", conv, shardrt_fill_xavier_normal_f32,
       std::sqrt(2.0 / (convIn + convOut))},
      {"lecun_normal (conv)", conv, shardrt_fill_lecun_normal_f32, std::sqrt(1.0 / convIn)},
      {"he_normal (conv)", conv, shardrt_fill_he_normal_f32, std::sqrt(2.0 / convIn)},
  };
  for (const Case &c : cases) {
    int ndim = static_cast<int>(c.shape.size());
    shardrt_compute_fans(ndim, c.shape.data(), &fanIn, &fanOut);
    std::vector<float> data(elements(c.shape));
    Shape zero(c.shape.size(), 0);
    c.fill(data.data(), ndim, c.shape.data(), c.shape.data(), zero.data(), 3, c.name, fanIn,
           fanOut);
    Moments m = momentsOf(data);
    expectNear(m.stddev / c.expectedStddev, 1.0, 0.01, std::string(c.name) + " stddev / expected");
    std::printf("prng: %s stddev %.6f, expected %.6f\n", c.name, m.stddev, c.expectedStddev);
  }
}

} // namespace

int main() {
  checkPhiloxKnownAnswers();
  checkDeterminism();
  checkUniformRuns();
  checkLayoutIndependence();
  checkDistributions();
  checkNormalAgainstLibm();
  checkVarianceScaling();
  if (failures == 0)
    std::printf("prng: %d checks passed\n", checks);
  else
    std::printf("prng: %d of %d checks FAILED\n", failures, checks);
  return failures == 0 ? 0 : 1;
}
