// shardrt-bench-libraries [--repeats N] [--libs openblas,onednn,blis,libxsmm]
//                         [--cases SUBSTRING] [--min-sample-ms MS]
//
// Which library should libshardrt's kernels call? Times, at the shapes of the
// project's workloads, the runtime's current path (OpenBLAS cblas_sgemm, convolutions
// as im2col + sgemm: shardrt_matmul_f32 and shardrt_conv2d_*_f32 themselves) against
// oneDNN, BLIS and libxsmm, with 1 and 2 threads where the library has threads
// (libxsmm's kernels are single-threaded per call: 1 thread only).
//
//   sgemm, f32 row-major, C = op(A) op(B) (C overwritten): every forward shape
//     [M x K] x [K x N] with its two backward forms dA = dY B^T ([M x N] x [K x N]^T)
//     and dB = A^T dY ([M x K]^T x [M x N]).
//       W1 (1024 <-> 4096, batch 8 and 256), W2's dense layers (batch 128 per rank),
//       W4 (GPT) 4096x768x256 and 4096x256x1024, and W4's attention: 16*8 independent
//       128 x 128 x 32 products.
//     OpenBLAS: shardrt_matmul_f32 (a loop over the batch, as lower-to-kernels emits);
//     oneDNN: the matmul primitive (batched as one 3-D primitive) and dnnl_sgemm;
//     BLIS: bli_sgemm (typed API); libxsmm: one JIT kernel for the whole product
//     (libxsmm_smmdispatch; "unsupported" where libxsmm 1.17 returns no kernel).
//   2-D convolution, NHWC f32, W2 on one rank (batch 128), 3x3 SAME, stride 1:
//     conv1 28x28x1 -> 32 filters, conv2 14x14x32 -> 64 filters; forward, filter
//     (weight) gradient and input (data) gradient.
//     OpenBLAS: shardrt_conv2d_f32 / _filter_grad_f32 / _input_grad_f32 on the padded
//     tensors, as bench/kernels/kernels_bench.cpp calls them (the padding copy is not
//     timed); oneDNN: convolution_forward / _backward_weights / _backward_data
//       onednn_nhwc: memory in the runtime's layouts (nhwc activations, hwio = HWCF
//                    kernels), no reorder;
//       onednn_any:  format_tag::any, i.e. the layout the primitive prefers, timed with
//                    the reorders from and to NHWC/HWCF included;
//       onednn_any_noreorder: the same primitive without the reorders (what it would
//                    cost if every tensor already lived in oneDNN's layout; it does not
//                    compete for "winner").
//
// Every variant's result is checked against OpenBLAS's: max_rel_diff is the max over
// elements of |x - ref| / max(|ref|, 1e-3 * max|ref|), normwise_diff max|x - ref| /
// max|ref|. Each timing is the median of REPEATS samples after a warm-up call; a sample
// times enough calls to last MIN_SAMPLE_MS. Prints one JSON object: per case and
// variant "LIB/THREADS": ms and GFLOP/s, the winners at 1 and 2 threads and overall
// (with their speedup over OpenBLAS), and other_processes_cores: how many cores other
// processes kept busy meanwhile (the machine is shared).
//
// OpenBLAS reads OPENBLAS_CORETYPE when it loads: run once with it unset (what users
// get) and once with it set to see the difference (--libs openblas).
#include "shardrt/shardrt.h"

#if SHARDRT_BENCH_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>
#endif
#if SHARDRT_BENCH_HAVE_BLIS
#include <blis.h>
#endif
#if SHARDRT_BENCH_HAVE_LIBXSMM
#include <libxsmm.h>
#endif
#if SHARDRT_BENCH_HAVE_OPENMP
#include <omp.h>
#endif

#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

// OpenBLAS's own calls (its cblas.h would clash with BLIS's).
extern "C" {
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
char *openblas_get_config(void);
char *openblas_get_corename(void);
}

namespace {

// ---- Options, buffers, timing ----------------------------------------------------

int gRepeats = 7;
double gMinSampleMs = 2.0;
std::set<std::string> gLibs = {"openblas", "onednn", "blis", "libxsmm"};
std::string gCaseFilter;

bool want(const std::string &lib) { return gLibs.count(lib) != 0; }

/// A 64-byte aligned float array, huge-page advised and first-touched at creation.
struct Buffer {
  float *p = nullptr;
  size_t n = 0;
  Buffer() = default;
  explicit Buffer(size_t count) : n(count) {
    size_t bytes = std::max<size_t>(count, 1) * sizeof(float);
    bytes = (bytes + 4095) / 4096 * 4096;
    if (posix_memalign(reinterpret_cast<void **>(&p), 4096, bytes))
      std::abort();
    madvise(p, bytes, MADV_HUGEPAGE);
    std::memset(p, 0, bytes);
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  Buffer(Buffer &&o) noexcept : p(o.p), n(o.n) { o.p = nullptr; }
  ~Buffer() { std::free(p); }
  float *data() const { return p; }
};

/// Uniform values in [-1, 1) from a fixed LCG stream.
Buffer randomBuffer(size_t count, uint64_t seed) {
  Buffer b(count);
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (size_t i = 0; i < count; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    b.p[i] = static_cast<float>((s >> 40) * (1.0 / 16777216.0) * 2.0 - 1.0);
  }
  return b;
}

/// Elementwise: max over i of |x - ref| / max(|ref|, 1e-3 max|ref|); normwise:
/// max |x - ref| / max |ref|.
struct Diff {
  double elementwise, normwise;
};
Diff maxRelDiff(const float *x, const float *ref, size_t n) {
  double refMax = 0, diffMax = 0;
  for (size_t i = 0; i < n; ++i)
    refMax = std::max(refMax, std::fabs(static_cast<double>(ref[i])));
  double floor = std::max(refMax * 1e-3, 1e-30), worst = 0;
  for (size_t i = 0; i < n; ++i) {
    double d = std::fabs(static_cast<double>(x[i]) - ref[i]);
    if (!std::isfinite(d))
      return {INFINITY, INFINITY};
    diffMax = std::max(diffMax, d);
    worst = std::max(worst, d / std::max(std::fabs(static_cast<double>(ref[i])), floor));
  }
  return {worst, diffMax / std::max(refMax, 1e-30)};
}

double nowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Median milliseconds per call of `call`, after a warm-up call.
double medianMs(const std::function<void()> &call) {
  call();
  double t0 = nowMs();
  call();
  double once = nowMs() - t0;
  int inner =
      once >= gMinSampleMs ? 1 : static_cast<int>(std::ceil(gMinSampleMs / std::max(once, 1e-4)));
  std::vector<double> samples;
  for (int r = 0; r < gRepeats; ++r) {
    double start = nowMs();
    for (int i = 0; i < inner; ++i)
      call();
    samples.push_back((nowMs() - start) / inner);
  }
  std::sort(samples.begin(), samples.end());
  size_t n = samples.size();
  return n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
}

/// CPU seconds the whole machine (/proc/stat: user, nice, system, irq, softirq, steal)
/// and this process have used so far: their difference over a stretch of wall time is
/// the number of cores other processes kept busy meanwhile.
struct CpuClock {
  double machine = NAN, self = NAN, wallMs = NAN;
  static CpuClock now() {
    CpuClock c;
    c.wallMs = nowMs();
    if (FILE *f = std::fopen("/proc/stat", "r")) {
      unsigned long long v[8] = {};
      if (std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                      &v[4], &v[5], &v[6], &v[7]) == 8)
        c.machine =
            static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / sysconf(_SC_CLK_TCK);
      std::fclose(f);
    }
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    c.self = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
             (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
    return c;
  }
  /// Cores busy with other processes between `start` and this.
  double othersSince(const CpuClock &start) const {
    double wall = (wallMs - start.wallMs) / 1e3;
    return wall > 0 ? std::max(0.0, (machine - start.machine) - (self - start.self)) / wall : NAN;
  }
};

/// The thread pools: OpenBLAS's pthreads and the OpenMP pool (oneDNN, BLIS) spin for a
/// while after work. Before a library times, the other pool gets time to go idle.
std::string gLastPool;
void settle(const std::string &pool) {
  if (!gLastPool.empty() && gLastPool != pool)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  gLastPool = pool;
}

void setThreads(const std::string &lib, int threads) {
  if (lib == "openblas") {
    settle("openblas");
    openblas_set_num_threads(threads);
    return;
  }
  settle("omp");
#if SHARDRT_BENCH_HAVE_OPENMP
  omp_set_num_threads(threads); // oneDNN (OpenMP runtime); BLIS's own count below
#endif
#if SHARDRT_BENCH_HAVE_BLIS
  if (lib == "blis")
    bli_thread_set_num_threads(threads);
#endif
}

// ---- Results ----------------------------------------------------------------------

struct Entry {
  std::string variant; // "openblas", "onednn_matmul", ...
  int threads;
  double ms = NAN;
  bool competes = true;
  std::string note;
};

struct Case {
  std::string name, kind, shape;
  double flop = 0;
  std::vector<Entry> entries;
  std::map<std::string, Diff> relDiff;     // variant -> its difference from OpenBLAS
  std::map<std::string, std::string> impl; // variant -> implementation name
  double othersCores = NAN;                // cores other processes used meanwhile
};

std::vector<Case> gCases;

void add(Case &c, const std::string &variant, int threads, double ms, bool competes = true,
         const std::string &note = "") {
  c.entries.push_back({variant, threads, ms, competes, note});
  std::fprintf(stderr, "  %-28s %-22s %dt %9.3f ms %7.1f GFLOP/s\n", c.name.c_str(),
               variant.c_str(), threads, ms, c.flop / ms / 1e6);
}

std::string jsonEscape(const std::string &s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\')
      out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20)
      continue;
    out += ch;
  }
  return out;
}

std::string num(double v, const char *fmt = "%.4g") {
  if (!std::isfinite(v))
    return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// ---- sgemm ------------------------------------------------------------------------

struct Gemm {
  std::string name;
  int64_t m, n, k;
  bool ta, tb;
  int64_t batch = 1;
};

void benchGemm(const Gemm &g) {
  Case c;
  c.name = g.name;
  c.kind = "sgemm";
  char shape[160];
  std::snprintf(shape, sizeof shape, "%s%lldx%lldx%lld%s%s",
                g.batch > 1 ? (std::to_string(g.batch) + " x ").c_str() : "", (long long)g.m,
                (long long)g.n, (long long)g.k, g.ta ? " A^T" : "", g.tb ? " B^T" : "");
  c.shape = shape;
  c.flop = 2.0 * g.m * g.n * g.k * g.batch;
  std::fprintf(stderr, "%s [%s]\n", c.name.c_str(), c.shape.c_str());
  const CpuClock start = CpuClock::now();

  const int64_t sa = g.m * g.k, sb = g.k * g.n, sc = g.m * g.n;
  const int64_t lda = g.ta ? g.m : g.k, ldb = g.tb ? g.k : g.n, ldc = g.n;
  Buffer a = randomBuffer(sa * g.batch, 1), b = randomBuffer(sb * g.batch, 2);
  Buffer ref(sc * g.batch), out(sc * g.batch);

  auto openblas = [&](float *cOut) {
    for (int64_t i = 0; i < g.batch; ++i)
      shardrt_matmul_f32(0, g.ta, g.tb, g.m, g.n, g.k, lda, ldb, ldc, a.data() + i * sa,
                         b.data() + i * sb, cOut + i * sc);
  };
  // The reference (and OpenBLAS's timing) always runs: every other variant is checked.
  {
    setThreads("openblas", 1);
    openblas(ref.data());
  }
  if (want("openblas"))
    for (int t : {1, 2}) {
      setThreads("openblas", t);
      add(c, "openblas", t, medianMs([&] { openblas(out.data()); }));
    }

#if SHARDRT_BENCH_HAVE_ONEDNN
  if (want("onednn")) {
    using namespace dnnl;
    using dt = memory::data_type;
    engine eng(engine::kind::cpu, 0);
    stream strm(eng);
    memory::dims aDims = {g.m, g.k}, bDims = {g.k, g.n}, cDims = {g.m, g.n};
    memory::dims aStr = g.ta ? memory::dims{1, g.m} : memory::dims{g.k, 1};
    memory::dims bStr = g.tb ? memory::dims{1, g.k} : memory::dims{g.n, 1};
    memory::dims cStr = {g.n, 1};
    if (g.batch > 1) {
      aDims.insert(aDims.begin(), g.batch);
      bDims.insert(bDims.begin(), g.batch);
      cDims.insert(cDims.begin(), g.batch);
      aStr.insert(aStr.begin(), sa);
      bStr.insert(bStr.begin(), sb);
      cStr.insert(cStr.begin(), sc);
    }
    memory::desc aMd(aDims, dt::f32, aStr), bMd(bDims, dt::f32, bStr), cMd(cDims, dt::f32, cStr);
    for (int t : {1, 2}) {
      setThreads("onednn", t);
      matmul::primitive_desc pd(matmul::desc(aMd, bMd, cMd), eng);
      matmul prim(pd);
      memory am(aMd, eng, a.data()), bm(bMd, eng, b.data()), cm(cMd, eng, out.data());
      auto run = [&] {
        prim.execute(strm, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
        strm.wait();
      };
      c.impl["onednn_matmul"] = pd.impl_info_str();
      add(c, "onednn_matmul", t, medianMs(run));
      c.relDiff["onednn_matmul"] = maxRelDiff(out.data(), ref.data(), sc * g.batch);
    }
    for (int t : {1, 2}) {
      setThreads("onednn", t);
      auto run = [&] {
        for (int64_t i = 0; i < g.batch; ++i)
          dnnl_sgemm(g.ta ? 'T' : 'N', g.tb ? 'T' : 'N', g.m, g.n, g.k, 1.0f, a.data() + i * sa,
                     lda, b.data() + i * sb, ldb, 0.0f, out.data() + i * sc, ldc);
      };
      add(c, "onednn_sgemm", t, medianMs(run));
      c.relDiff["onednn_sgemm"] = maxRelDiff(out.data(), ref.data(), sc * g.batch);
    }
  }
#endif

#if SHARDRT_BENCH_HAVE_BLIS
  if (want("blis"))
    for (int t : {1, 2}) {
      setThreads("blis", t);
      float one = 1.0f, zero = 0.0f;
      auto run = [&] {
        for (int64_t i = 0; i < g.batch; ++i)
          bli_sgemm(g.ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
                    g.tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, g.m, g.n, g.k, &one,
                    a.data() + i * sa, lda, 1, b.data() + i * sb, ldb, 1, &zero,
                    out.data() + i * sc, ldc, 1);
      };
      add(c, "blis", t, medianMs(run));
      c.relDiff["blis"] = maxRelDiff(out.data(), ref.data(), sc * g.batch);
    }
#endif

#if SHARDRT_BENCH_HAVE_LIBXSMM
  if (want("libxsmm")) {
    setThreads("libxsmm", 1);
    // Column-major: C^T [N x M] = op(B)^T [N x K] op(A)^T [K x M]; row-major B^T is B's
    // buffer read column-major, so B's transpose becomes libxsmm's TRANS_A and A's its
    // TRANS_B.
    int flags = (g.tb ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) | (g.ta ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
    libxsmm_blasint m = g.n, n = g.m, k = g.k, xlda = ldb, xldb = lda, xldc = ldc;
    float alpha = 1.0f, beta = 0.0f;
    libxsmm_smmfunction kernel =
        libxsmm_smmdispatch(m, n, k, &xlda, &xldb, &xldc, &alpha, &beta, &flags, nullptr);
    if (kernel) {
      auto run = [&] {
        for (int64_t i = 0; i < g.batch; ++i)
          kernel(b.data() + i * sb, a.data() + i * sa, out.data() + i * sc);
      };
      add(c, "libxsmm", 1, medianMs(run));
      c.relDiff["libxsmm"] = maxRelDiff(out.data(), ref.data(), sc * g.batch);
    } else {
      add(c, "libxsmm", 1, NAN, false, "libxsmm_smmdispatch returned no kernel (unsupported)");
    }
  }
#endif
  c.othersCores = CpuClock::now().othersSince(start);
  gCases.push_back(std::move(c));
}

// ---- Convolutions -------------------------------------------------------------------

struct Conv {
  const char *name;
  int64_t n, h, w, c, kh, kw, f; // input h x w x c (unpadded), SAME padding, stride 1
  int64_t pad() const { return (kh - 1) / 2; }
  double flop() const { return 2.0 * n * h * w * f * kh * kw * c; }
};

/// x [N,H,W,C] zero-padded by `p` on each spatial side.
Buffer padded(const float *x, int64_t n, int64_t h, int64_t w, int64_t c, int64_t p) {
  int64_t hp = h + 2 * p, wp = w + 2 * p;
  Buffer out(n * hp * wp * c);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < h; ++y)
      std::memcpy(out.data() + ((i * hp + y + p) * wp + p) * c, x + ((i * h + y) * w) * c,
                  w * c * sizeof(float));
  return out;
}

void benchConv(const Conv &p) {
  const int64_t n = p.n, h = p.h, w = p.w, ch = p.c, kh = p.kh, kw = p.kw, f = p.f, pd = p.pad();
  const int64_t hp = h + 2 * pd, wp = w + 2 * pd;
  Buffer x = randomBuffer(n * h * w * ch, 11), k = randomBuffer(kh * kw * ch * f, 12),
         dy = randomBuffer(n * h * w * f, 13);
  Buffer xpad = padded(x.data(), n, h, w, ch, pd);
  // The input gradient's dyp: dy padded by KH-1-pad (= pad for SAME, odd KH).
  Buffer dyp = padded(dy.data(), n, h, w, f, kh - 1 - pd);
  Buffer yRef(n * h * w * f), dwRef(kh * kw * ch * f), dxRef(n * h * w * ch);
  Buffer yOut(n * h * w * f), dwOut(kh * kw * ch * f), dxOut(n * h * w * ch);

  enum Which { kForward, kFilter, kInput };
  const char *whichName[] = {"forward", "filter grad", "input grad"};
  Case cases[3];
  for (int i = 0; i < 3; ++i) {
    cases[i].name = std::string(p.name) + " " + whichName[i];
    cases[i].kind = "conv2d";
    char shape[160];
    std::snprintf(shape, sizeof shape, "N=%lld %lldx%lldx%lld -> %lld, %lldx%lld SAME",
                  (long long)n, (long long)h, (long long)w, (long long)ch, (long long)f,
                  (long long)kh, (long long)kw);
    cases[i].shape = shape;
    cases[i].flop = p.flop();
  }
  auto sForward = [&](float *y) {
    shardrt_conv2d_f32(0, n, hp, wp, ch, 0, 0, kh, kw, f, h, w, 1, 1, 1, 1, xpad.data(), k.data(),
                       y);
  };
  auto sFilter = [&](float *dw) {
    shardrt_conv2d_filter_grad_f32(0, n, hp, wp, ch, 0, 0, kh, kw, f, h, w, 1, 1, xpad.data(),
                                   dy.data(), dw);
  };
  auto sInput = [&](float *dx) {
    shardrt_conv2d_input_grad_f32(0, n, h, w, ch, kh, kw, f, h + kh - 1, w + kw - 1, 0, 0,
                                  dyp.data(), k.data(), dx);
  };
  std::fprintf(stderr, "%s [%s]\n", p.name, cases[0].shape.c_str());
  const CpuClock start = CpuClock::now();
  setThreads("openblas", 1);
  sForward(yRef.data());
  sFilter(dwRef.data());
  sInput(dxRef.data());
  if (want("openblas"))
    for (int t : {1, 2}) {
      setThreads("openblas", t);
      add(cases[kForward], "openblas", t, medianMs([&] { sForward(yOut.data()); }));
      add(cases[kFilter], "openblas", t, medianMs([&] { sFilter(dwOut.data()); }));
      add(cases[kInput], "openblas", t, medianMs([&] { sInput(dxOut.data()); }));
    }

#if SHARDRT_BENCH_HAVE_ONEDNN
  if (want("onednn")) {
    using namespace dnnl;
    using dt = memory::data_type;
    using tag = memory::format_tag;
    engine eng(engine::kind::cpu, 0);
    stream strm(eng);
    memory::dims srcDims = {n, ch, h, w}, wDims = {f, ch, kh, kw}, dstDims = {n, f, h, w};
    memory::dims strides = {1, 1}, padL = {pd, pd}, padR = {pd, pd};
    // The runtime's layouts: NHWC activations, HWCF (= hwio) kernels.
    memory::desc srcUser(srcDims, dt::f32, tag::nhwc), wUser(wDims, dt::f32, tag::hwio),
        dstUser(dstDims, dt::f32, tag::nhwc);
    memory xm(srcUser, eng, x.data()), km(wUser, eng, k.data()), dym(dstUser, eng, dy.data());
    memory ym(dstUser, eng, yOut.data()), dwm(wUser, eng, dwOut.data()),
        dxm(srcUser, eng, dxOut.data());

    for (bool anyLayout : {false, true})
      for (int t : {1, 2}) {
        setThreads("onednn", t);
        tag tt = anyLayout ? tag::any : tag::nhwc, wt = anyLayout ? tag::any : tag::hwio;
        memory::desc srcMd(srcDims, dt::f32, tt), wMd(wDims, dt::f32, wt),
            dstMd(dstDims, dt::f32, tt);
        convolution_forward::primitive_desc fwdPd(
            convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct,
                                      srcMd, wMd, dstMd, strides, padL, padR),
            eng);
        convolution_backward_weights::primitive_desc bwPd(
            convolution_backward_weights::desc(algorithm::convolution_direct, srcMd, wMd, dstMd,
                                               strides, padL, padR),
            eng, fwdPd);
        convolution_backward_data::primitive_desc bdPd(
            convolution_backward_data::desc(algorithm::convolution_direct, srcMd, wMd, dstMd,
                                            strides, padL, padR),
            eng, fwdPd);
        convolution_forward fwd(fwdPd);
        convolution_backward_weights bw(bwPd);
        convolution_backward_data bd(bdPd);

        // The primitive's own memories (the user's where the layouts agree) and the
        // reorders between them.
        struct Port {
          memory user, prim;
          bool same;
          std::unique_ptr<reorder> in, out;
        };
        auto port = [&](const memory &user, const memory::desc &primMd) {
          Port port;
          port.user = user;
          port.same = primMd == user.get_desc();
          port.prim = port.same ? user : memory(primMd, eng);
          if (!port.same) {
            port.in = std::make_unique<reorder>(user, port.prim);
            port.out = std::make_unique<reorder>(port.prim, user);
          }
          return port;
        };
        auto toPrim = [&](Port &port) {
          if (!port.same)
            port.in->execute(strm, port.user, port.prim);
        };
        auto fromPrim = [&](Port &port) {
          if (!port.same)
            port.out->execute(strm, port.prim, port.user);
        };

        std::string variant = anyLayout ? "onednn_any" : "onednn_nhwc";
        // One of the three primitives, two operands in and one out: timed with the
        // reorders from and to the runtime's layouts, checked, and (blocked layouts)
        // timed alone.
        struct Arg {
          int dnnl;
          const memory &user;
          memory::desc desc;
          const char *name, *plain;
        };
        auto timeConv = [&](Case &cc, const primitive &prim, const std::string &impl, Arg a, Arg b,
                            Arg out, const Buffer &got, const Buffer &ref) {
          Port pa = port(a.user, a.desc), pb = port(b.user, b.desc), po = port(out.user, out.desc);
          toPrim(pa);
          toPrim(pb);
          auto exec = [&] {
            prim.execute(strm, {{a.dnnl, pa.prim}, {b.dnnl, pb.prim}, {out.dnnl, po.prim}});
          };
          cc.impl[variant] = impl;
          add(cc, variant, t, medianMs([&] {
                toPrim(pa);
                toPrim(pb);
                exec();
                fromPrim(po);
                strm.wait();
              }));
          cc.relDiff[variant] = maxRelDiff(got.data(), ref.data(), ref.n);
          if (!anyLayout)
            return;
          auto layout = [](const Arg &arg, const Port &p) {
            return std::string(arg.name) + " " + (p.same ? arg.plain : "blocked");
          };
          add(cc, "onednn_any_noreorder", t, medianMs([&] {
                exec();
                strm.wait();
              }),
              false, "layouts: " + layout(a, pa) + ", " + layout(b, pb) + ", " + layout(out, po));
        };
        timeConv(cases[kForward], fwd, fwdPd.impl_info_str(),
                 {DNNL_ARG_SRC, xm, fwdPd.src_desc(), "src", "nhwc"},
                 {DNNL_ARG_WEIGHTS, km, fwdPd.weights_desc(), "weights", "hwio"},
                 {DNNL_ARG_DST, ym, fwdPd.dst_desc(), "dst", "nhwc"}, yOut, yRef);
        timeConv(cases[kFilter], bw, bwPd.impl_info_str(),
                 {DNNL_ARG_SRC, xm, bwPd.src_desc(), "src", "nhwc"},
                 {DNNL_ARG_DIFF_DST, dym, bwPd.diff_dst_desc(), "diff_dst", "nhwc"},
                 {DNNL_ARG_DIFF_WEIGHTS, dwm, bwPd.diff_weights_desc(), "diff_weights", "hwio"},
                 dwOut, dwRef);
        timeConv(cases[kInput], bd, bdPd.impl_info_str(),
                 {DNNL_ARG_DIFF_DST, dym, bdPd.diff_dst_desc(), "diff_dst", "nhwc"},
                 {DNNL_ARG_WEIGHTS, km, bdPd.weights_desc(), "weights", "hwio"},
                 {DNNL_ARG_DIFF_SRC, dxm, bdPd.diff_src_desc(), "diff_src", "nhwc"}, dxOut, dxRef);
      }
  }
#endif
  for (Case &cc : cases) {
    cc.othersCores = CpuClock::now().othersSince(start);
    gCases.push_back(std::move(cc));
  }
}

// ---- Report -----------------------------------------------------------------------

std::string libraryOf(const void *symbol) {
  Dl_info info{};
  if (symbol && dladdr(symbol, &info) && info.dli_fname)
    return info.dli_fname;
  return "";
}

std::string loadAverage() {
  double l[3] = {NAN, NAN, NAN};
  if (getloadavg(l, 3) != 3)
    return "null";
  return "[" + num(l[0], "%.2f") + ", " + num(l[1], "%.2f") + ", " + num(l[2], "%.2f") + "]";
}

void printWinner(const Case &c, int threads, const char *key) {
  const Entry *best = nullptr, *base = nullptr;
  for (const Entry &e : c.entries) {
    if (threads && e.threads != threads)
      continue;
    if (e.variant == "openblas" && (!base || e.ms < base->ms))
      base = &e;
    if (!e.competes || !std::isfinite(e.ms))
      continue;
    if (!best || e.ms < best->ms)
      best = &e;
  }
  if (!best) {
    std::printf(", \"%s\": null", key);
    return;
  }
  std::printf(", \"%s\": {\"variant\": \"%s/%d\", \"ms\": %s, \"gflops\": %s", key,
              best->variant.c_str(), best->threads, num(best->ms).c_str(),
              num(c.flop / best->ms / 1e6, "%.1f").c_str());
  if (base && std::isfinite(base->ms))
    std::printf(", \"speedup_vs_openblas\": %s", num(base->ms / best->ms, "%.2f").c_str());
  std::printf("}");
}

} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--repeats")
      gRepeats = std::max(1, std::atoi(next().c_str()));
    else if (a == "--min-sample-ms")
      gMinSampleMs = std::atof(next().c_str());
    else if (a == "--cases")
      gCaseFilter = next();
    else if (a == "--libs") {
      gLibs.clear();
      std::string list = next();
      size_t pos = 0;
      while (pos <= list.size()) {
        size_t comma = list.find(',', pos);
        if (comma == std::string::npos)
          comma = list.size();
        if (comma > pos)
          gLibs.insert(list.substr(pos, comma - pos));
        pos = comma + 1;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [--repeats N] [--min-sample-ms MS] [--libs a,b] [--cases SUBSTR]\n",
                   argv[0]);
      return 2;
    }
  }
  std::string startLoad = loadAverage();
  double startMs = nowMs();
  const CpuClock startCpu = CpuClock::now();
#if SHARDRT_BENCH_HAVE_OPENMP
  const int ompMaxThreads = omp_get_max_threads(); // from OMP_NUM_THREADS
#else
  const int ompMaxThreads = 0;
#endif
#if SHARDRT_BENCH_HAVE_LIBXSMM
  libxsmm_init();
#endif

  std::vector<Gemm> gemms;
  // A forward [M x K] x [K x N] and its backward forms.
  auto withBackward = [&](const std::string &name, int64_t m, int64_t n, int64_t k,
                          int64_t batch = 1) {
    gemms.push_back({name + " fwd", m, n, k, false, false, batch});
    gemms.push_back({name + " dA", m, k, n, false, true, batch}); // dY [M,N] x B^T
    gemms.push_back({name + " dB", k, n, m, true, false, batch}); // A^T x dY [M,N]
  };
  withBackward("W1 b8 1024->4096", 8, 4096, 1024);
  withBackward("W1 b8 4096->1024", 8, 1024, 4096);
  withBackward("W1 b256 1024->4096", 256, 4096, 1024);
  withBackward("W1 b256 4096->1024", 256, 1024, 4096);
  withBackward("W2 dense1", 128, 256, 3136);
  withBackward("W2 dense2", 128, 10, 256);
  withBackward("W4 4096x768x256", 4096, 768, 256);
  withBackward("W4 4096x256x1024", 4096, 256, 1024);
  withBackward("W4 attention", 128, 128, 32, 128);
  for (const Gemm &g : gemms)
    if (gCaseFilter.empty() || g.name.find(gCaseFilter) != std::string::npos)
      benchGemm(g);
  for (const Conv &c :
       {Conv{"W2 conv1", 128, 28, 28, 1, 3, 3, 32}, Conv{"W2 conv2", 128, 14, 14, 32, 3, 3, 64}})
    if (gCaseFilter.empty() || std::string(c.name).find(gCaseFilter) != std::string::npos)
      benchConv(c);

  // Which library a BLAS symbol resolves to (BLIS exports the BLAS and CBLAS names too).
  std::string cblasFrom = libraryOf(dlsym(RTLD_DEFAULT, "cblas_sgemm"));
  std::string sgemmFrom = libraryOf(dlsym(RTLD_DEFAULT, "sgemm_"));

  std::printf("{\"bench\": \"libraries\", \"repeats\": %d, \"min_sample_ms\": %s, "
              "\"seconds\": %s, \"load_average_start\": %s, \"load_average_end\": %s, "
              "\"other_processes_cores\": %s,\n",
              gRepeats, num(gMinSampleMs).c_str(), num((nowMs() - startMs) / 1e3, "%.1f").c_str(),
              startLoad.c_str(), loadAverage().c_str(),
              num(CpuClock::now().othersSince(startCpu), "%.2f").c_str());
  const char *coretype = std::getenv("OPENBLAS_CORETYPE");
  std::printf(" \"openblas\": {\"corename\": \"%s\", \"config\": \"%s\", "
              "\"OPENBLAS_CORETYPE\": %s%s%s, \"cblas_sgemm_from\": \"%s\", "
              "\"sgemm_from\": \"%s\"},\n",
              jsonEscape(openblas_get_corename()).c_str(),
              jsonEscape(openblas_get_config()).c_str(), coretype ? "\"" : "",
              coretype ? jsonEscape(coretype).c_str() : "null", coretype ? "\"" : "",
              jsonEscape(cblasFrom).c_str(), jsonEscape(sgemmFrom).c_str());
  std::string missing;
#if SHARDRT_BENCH_HAVE_ONEDNN
  {
    const dnnl_version_t *v = dnnl_version();
    std::printf(" \"onednn\": {\"version\": \"%d.%d.%d\", \"hash\": \"%s\", "
                "\"cpu_runtime\": \"%s\"},\n",
                v->major, v->minor, v->patch, v->hash,
                v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other");
  }
#else
  missing += "\"onednn\"";
#endif
#if SHARDRT_BENCH_HAVE_BLIS
  std::printf(" \"blis\": {\"version\": \"%s\", \"arch\": \"%s\"},\n", bli_info_get_version_str(),
              bli_arch_string(bli_arch_query_id()));
#else
  missing += std::string(missing.empty() ? "" : ", ") + "\"blis\"";
#endif
#if SHARDRT_BENCH_HAVE_LIBXSMM
  std::printf(" \"libxsmm\": {\"version\": \"%s\", \"target_arch\": \"%s\"},\n", LIBXSMM_VERSION,
              libxsmm_get_target_arch());
#else
  missing += std::string(missing.empty() ? "" : ", ") + "\"libxsmm\"";
#endif
  std::printf(" \"libraries_missing\": [%s],\n", missing.c_str());
  std::printf(" \"omp_max_threads_at_start\": %d, \"openblas_threads_env\": \"%s\",\n",
              ompMaxThreads,
              std::getenv("OPENBLAS_NUM_THREADS") ? std::getenv("OPENBLAS_NUM_THREADS") : "");
  std::printf(" \"cases\": [\n");
  for (size_t ci = 0; ci < gCases.size(); ++ci) {
    const Case &c = gCases[ci];
    std::printf("  {\"name\": \"%s\", \"kind\": \"%s\", \"shape\": \"%s\", \"gflop\": %s, "
                "\"other_processes_cores\": %s,\n   \"results\": {",
                jsonEscape(c.name).c_str(), c.kind.c_str(), jsonEscape(c.shape).c_str(),
                num(c.flop / 1e9).c_str(), num(c.othersCores, "%.2f").c_str());
    for (size_t i = 0; i < c.entries.size(); ++i) {
      const Entry &e = c.entries[i];
      std::printf("%s\"%s/%d\": {\"ms\": %s, \"gflops\": %s", i ? ",\n     " : "",
                  e.variant.c_str(), e.threads, num(e.ms).c_str(),
                  num(c.flop / e.ms / 1e6, "%.1f").c_str());
      if (!e.competes)
        std::printf(", \"competes\": false");
      if (!e.note.empty())
        std::printf(", \"note\": \"%s\"", jsonEscape(e.note).c_str());
      std::printf("}");
    }
    std::printf("},\n   \"max_rel_diff_vs_openblas\": {");
    size_t i = 0;
    for (const auto &[variant, d] : c.relDiff)
      std::printf("%s\"%s\": %s", i++ ? ", " : "", variant.c_str(),
                  num(d.elementwise, "%.2e").c_str());
    std::printf("},\n   \"normwise_diff_vs_openblas\": {");
    i = 0;
    for (const auto &[variant, d] : c.relDiff)
      std::printf("%s\"%s\": %s", i++ ? ", " : "", variant.c_str(),
                  num(d.normwise, "%.2e").c_str());
    std::printf("}");
    if (!c.impl.empty()) {
      std::printf(",\n   \"impl\": {");
      i = 0;
      for (const auto &[variant, name] : c.impl)
        std::printf("%s\"%s\": \"%s\"", i++ ? ", " : "", variant.c_str(), jsonEscape(name).c_str());
      std::printf("}");
    }
    std::printf(",\n   ");
    std::printf("\"case\": \"%s\"", jsonEscape(c.name).c_str());
    printWinner(c, 1, "winner_1_thread");
    printWinner(c, 2, "winner_2_threads");
    printWinner(c, 0, "winner");
    std::printf("}%s\n", ci + 1 < gCases.size() ? "," : "");
  }
  std::printf(" ]}\n");
#if SHARDRT_BENCH_HAVE_LIBXSMM
  libxsmm_finalize();
#endif
  return 0;
}
