// shardrt-test-kernels: the dense f32 kernels against naive loops.
//
// One process, no MPI. Each kernel runs on random inputs and a random (not zero)
// output, which it must accumulate into, and is compared with the definition in
// shardrt.h evaluated in double: matmul in all four transpose combinations, the
// convolutions with strides 1 and 2, dilation (forward), non-square images and
// kernels, one channel, batches large enough to take several im2col chunks, and empty
// dimensions. The input gradient is also checked as the adjoint of the forward
// convolution, with dy dilated and padded as the compiler does. memrefCopy, the strided
// copy of generated code, is checked against a copy element by element. Prints a line per
// kernel and `kernels: N checks passed`; exits non-zero on any failure.
#include "shardrt/shardrt.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace {

int checks = 0, failures = 0;
std::mt19937 rng(42);
// The bfloat16 pass (shardrt_set_matmul_precision_bf16): inputs drawn exactly
// representable in bfloat16, so that the f32 definitions still give the products.
bool bf16Inputs = false;

/// `x` rounded to the nearest bfloat16, ties to even.
float roundToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits = (bits + 0x7fffu + ((bits >> 16) & 1)) & 0xffff0000u;
  std::memcpy(&x, &bits, sizeof bits);
  return x;
}

std::vector<float> randomVector(int64_t n) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = bf16Inputs ? roundToBf16(dist(rng)) : dist(rng);
  return v;
}

/// In bfloat16 a sum of two products rounds each operand to nearest, ties to even:
/// 1 + 2^-8 (a tie) to 1, 1 + 3 * 2^-8 (a tie) to 1 + 2^-6, 1 + 2^-7 + 2^-9 to 1 + 2^-7.
/// `product(a, b, c)` computes c = a[0] b[0] + a[1] b[1].
void checkBf16Rounding(const char *what, void (*product)(const float *, const float *, float *)) {
  ++checks;
  const float a[2] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f}, b[2] = {1.0f, 1.0f + 0x1p-7f + 0x1p-9f};
  float c = 0;
  product(a, b, &c);
  const float want = 1.0f * 1.0f + (1.0f + 0x1p-6f) * (1.0f + 0x1p-7f);
  if (c != want) {
    ++failures;
    std::fprintf(stderr, "FAILED: bfloat16 rounding of %s: %.9g, expected %.9g\n", what, c, want);
  }
}

/// got[i] == want[i] up to float rounding of sums of `terms` products of size <= 1.
void expectClose(const std::vector<float> &got, const std::vector<double> &want, int64_t terms,
                 const std::string &what) {
  ++checks;
  double tolerance = 1e-6 * (terms + 1) + 1e-5;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= tolerance)) {
      ++failures;
      std::fprintf(stderr, "FAILED: %s: element %zu is %g, expected %g\n", what.c_str(), i, got[i],
                   want[i]);
      return;
    }
}

void expectEqual(const std::vector<float> &got, const std::vector<float> &want,
                 const std::string &what) {
  ++checks;
  if (got != want) {
    ++failures;
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  }
}

std::vector<double> widen(const std::vector<float> &v) { return {v.begin(), v.end()}; }

/// Each kernel either adds to its output or overwrites it: the expected values
/// start from the output's random contents or from zero.
std::vector<double> startingPoint(const std::vector<float> &out, bool accumulate) {
  return accumulate ? widen(out) : std::vector<double>(out.size(), 0.0);
}

const char *mode(bool accumulate) { return accumulate ? "" : " (overwriting)"; }

/// A matmul whose matrices are strided views: each row `pad` elements longer than
/// its width.
void checkMatmul(int64_t m, int64_t n, int64_t k, bool ta, bool tb, int64_t pad = 0,
                 bool accumulate = true) {
  const int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
  std::vector<float> a = randomVector((ta ? k : m) * lda), b = randomVector((tb ? n : k) * ldb),
                     c = randomVector(m * ldc);
  std::vector<double> want = startingPoint(c, accumulate);
  // Padding between rows is not the output's: it keeps its contents either way.
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n; j < ldc; ++j)
      want[i * ldc + j] = c[i * ldc + j];
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        want[i * ldc + j] += double(ta ? a[p * lda + i] : a[i * lda + p]) *
                             double(tb ? b[j * ldb + p] : b[p * ldb + j]);
  shardrt_matmul_f32(accumulate, ta, tb, m, n, k, lda, ldb, ldc, a.data(), b.data(), c.data());
  expectClose(c, want, k,
              "matmul " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                  (ta ? " A^T" : "") + (tb ? " B^T" : "") +
                  (pad ? " rows padded by " + std::to_string(pad) : "") + mode(accumulate));
}

/// Attention's products as lower-to-kernels calls them: scores[b, h] = q[b, :, h, :] x
/// k[b, :, h, :]^T over a [batch, seq, heads, dim] layout (two batch dimensions), then
/// the scores [p, s, t] x v[p, t, d] -> out[p, s, d] (one, of b x h products). One
/// batched call writes what one shardrt_matmul_f32 per product writes (up to the
/// order of the sums, in bfloat16).
void checkBatchedMatmul(int64_t batch, int64_t heads, int64_t seq, int64_t dim, bool accumulate) {
  const int64_t rowStride = heads * dim, batchStride = seq * rowStride;
  const std::string shape = std::to_string(batch) + "x" + std::to_string(heads) + " products of " +
                            std::to_string(seq) + "x" + std::to_string(seq) + "x" +
                            std::to_string(dim) + mode(accumulate);
  std::vector<float> q = randomVector(batch * batchStride), k = randomVector(batch * batchStride);
  std::vector<float> scores = randomVector(batch * heads * seq * seq), perProduct = scores;
  shardrt_batched_matmul_f32(accumulate, 0, 1, seq, seq, dim, rowStride, rowStride, seq, batch,
                             heads, batchStride, dim, batchStride, dim, heads * seq * seq,
                             seq * seq, q.data(), k.data(), scores.data());
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t h = 0; h < heads; ++h)
      shardrt_matmul_f32(accumulate, 0, 1, seq, seq, dim, rowStride, rowStride, seq,
                         q.data() + i * batchStride + h * dim, k.data() + i * batchStride + h * dim,
                         perProduct.data() + (i * heads + h) * seq * seq);
  expectClose(scores, widen(perProduct), dim, "batched matmul, " + shape);

  const int64_t products = batch * heads;
  std::vector<float> v = randomVector(products * seq * dim),
                     out = randomVector(products * seq * dim);
  std::vector<float> outPerProduct = out;
  shardrt_batched_matmul_f32(accumulate, 0, 0, seq, dim, seq, seq, dim, dim, 1, products, 0,
                             seq * seq, 0, seq * dim, 0, seq * dim, scores.data(), v.data(),
                             out.data());
  for (int64_t p = 0; p < products; ++p)
    shardrt_matmul_f32(accumulate, 0, 0, seq, dim, seq, seq, dim, dim,
                       scores.data() + p * seq * seq, v.data() + p * seq * dim,
                       outPerProduct.data() + p * seq * dim);
  expectClose(out, widen(outPerProduct), seq, "batched matmul (one batch dimension), " + shape);
}

/// The bits of bfloat16 values (randomVector's in its bfloat16 pass).
std::vector<uint16_t> bf16Bits(const std::vector<float> &v) {
  std::vector<uint16_t> bits(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t word;
    std::memcpy(&word, &v[i], sizeof word);
    bits[i] = uint16_t(word >> 16);
  }
  return bits;
}

/// The entries of operands already in bfloat16 (`precision matmul : bf16`) against the
/// f32 ones on the same values: a product of a transposed, strided a and b, and
/// attention's scores over a [batch, seq, heads, dim] layout.
void checkBf16OperandEntries(bool accumulate) {
  const std::tuple<int64_t, int64_t, int64_t, bool, bool> shapes[] = {{7, 5, 3, false, false},
                                                                      {40, 33, 65, true, false},
                                                                      {33, 40, 48, false, true},
                                                                      {1, 1, 1, true, true}};
  for (auto [m, n, k, ta, tb] : shapes) {
    const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1;
    std::vector<float> a = randomVector((ta ? k : m) * lda), b = randomVector((tb ? n : k) * ldb);
    std::vector<float> c = randomVector(m * n), f32 = c;
    shardrt_matmul_bf16(accumulate, ta, tb, m, n, k, lda, ldb, n, bf16Bits(a).data(),
                        bf16Bits(b).data(), c.data());
    shardrt_matmul_f32(accumulate, ta, tb, m, n, k, lda, ldb, n, a.data(), b.data(), f32.data());
    expectClose(c, widen(f32), k,
                "shardrt_matmul_bf16 " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                    std::to_string(k) + mode(accumulate));
  }
  const int64_t batch = 2, heads = 3, seq = 9, dim = 4;
  const int64_t rowStride = heads * dim, batchStride = seq * rowStride;
  std::vector<float> q = randomVector(batch * batchStride), k = randomVector(batch * batchStride);
  std::vector<float> scores = randomVector(batch * heads * seq * seq), f32 = scores;
  shardrt_batched_matmul_bf16(accumulate, 0, 1, seq, seq, dim, rowStride, rowStride, seq, batch,
                              heads, batchStride, dim, batchStride, dim, heads * seq * seq,
                              seq * seq, bf16Bits(q).data(), bf16Bits(k).data(), scores.data());
  shardrt_batched_matmul_f32(accumulate, 0, 1, seq, seq, dim, rowStride, rowStride, seq, batch,
                             heads, batchStride, dim, batchStride, dim, heads * seq * seq,
                             seq * seq, q.data(), k.data(), f32.data());
  expectClose(scores, widen(f32), dim,
              std::string("shardrt_batched_matmul_bf16, attention's scores") + mode(accumulate));
}

/// A forward convolution's shapes; the input is already padded.
struct Conv {
  int64_t n, h, w, c, kh, kw, f, sh, sw, dh, dw;
  int64_t oh() const { return (h - (kh - 1) * dh - 1) / sh + 1; }
  int64_t ow() const { return (w - (kw - 1) * dw - 1) / sw + 1; }
  std::string name() const {
    return "n" + std::to_string(n) + " " + std::to_string(h) + "x" + std::to_string(w) + "x" +
           std::to_string(c) + " k" + std::to_string(kh) + "x" + std::to_string(kw) + "x" +
           std::to_string(f) + " s" + std::to_string(sh) + "," + std::to_string(sw) + " d" +
           std::to_string(dh) + "," + std::to_string(dw);
  }
};

/// The convolution entries checked: the f32 ones, or the _bf16 ones (their products in
/// bfloat16 whatever --matmul-precision says: `precision matmul : bf16`).
bool bf16Entries = false;
auto conv2d() { return bf16Entries ? shardrt_conv2d_bf16 : shardrt_conv2d_f32; }
auto conv2dFilterGrad() {
  return bf16Entries ? shardrt_conv2d_filter_grad_bf16 : shardrt_conv2d_filter_grad_f32;
}
auto conv2dInputGrad() {
  return bf16Entries ? shardrt_conv2d_input_grad_bf16 : shardrt_conv2d_input_grad_f32;
}

void checkConv(const Conv &p, bool accumulate = true) {
  int64_t oh = p.oh(), ow = p.ow();
  std::vector<float> x = randomVector(p.n * p.h * p.w * p.c),
                     k = randomVector(p.kh * p.kw * p.c * p.f),
                     y = randomVector(p.n * oh * ow * p.f);
  std::vector<double> want = startingPoint(y, accumulate);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t f = 0; f < p.f; ++f) {
          double sum = 0;
          for (int64_t a = 0; a < p.kh; ++a)
            for (int64_t b = 0; b < p.kw; ++b)
              for (int64_t c = 0; c < p.c; ++c)
                sum +=
                    double(x[((n * p.h + i * p.sh + a * p.dh) * p.w + j * p.sw + b * p.dw) * p.c +
                             c]) *
                    k[((a * p.kw + b) * p.c + c) * p.f + f];
          want[((n * oh + i) * ow + j) * p.f + f] += sum;
        }
  conv2d()(accumulate, p.n, p.h, p.w, p.c, 0, 0, p.kh, p.kw, p.f, oh, ow, p.sh, p.sw, p.dh, p.dw,
           x.data(), k.data(), y.data());
  expectClose(y, want, p.kh * p.kw * p.c, "conv2d " + p.name() + mode(accumulate));
}

void checkFilterGrad(const Conv &p, bool accumulate = true) {
  int64_t oh = p.oh(), ow = p.ow();
  std::vector<float> x = randomVector(p.n * p.h * p.w * p.c),
                     dy = randomVector(p.n * oh * ow * p.f),
                     dw = randomVector(p.kh * p.kw * p.c * p.f);
  std::vector<double> want = startingPoint(dw, accumulate);
  for (int64_t a = 0; a < p.kh; ++a)
    for (int64_t b = 0; b < p.kw; ++b)
      for (int64_t c = 0; c < p.c; ++c)
        for (int64_t f = 0; f < p.f; ++f) {
          double sum = 0;
          for (int64_t n = 0; n < p.n; ++n)
            for (int64_t i = 0; i < oh; ++i)
              for (int64_t j = 0; j < ow; ++j)
                sum += double(x[((n * p.h + i * p.sh + a) * p.w + j * p.sw + b) * p.c + c]) *
                       dy[((n * oh + i) * ow + j) * p.f + f];
          want[((a * p.kw + b) * p.c + c) * p.f + f] += sum;
        }
  conv2dFilterGrad()(accumulate, p.n, p.h, p.w, p.c, 0, 0, p.kh, p.kw, p.f, oh, ow, p.sh, p.sw,
                     x.data(), dy.data(), dw.data());
  expectClose(dw, want, p.n * oh * ow, "filter grad " + p.name() + mode(accumulate));
}

/// The input gradient by its definition on dyp [N, H+KH-1, W+KW-1, F].
void checkInputGrad(const Conv &p, bool accumulate = true) {
  int64_t hq = p.h + p.kh - 1, wq = p.w + p.kw - 1;
  std::vector<float> dyp = randomVector(p.n * hq * wq * p.f),
                     k = randomVector(p.kh * p.kw * p.c * p.f),
                     dx = randomVector(p.n * p.h * p.w * p.c);
  std::vector<double> want = startingPoint(dx, accumulate);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t i = 0; i < p.h; ++i)
      for (int64_t j = 0; j < p.w; ++j)
        for (int64_t c = 0; c < p.c; ++c) {
          double sum = 0;
          for (int64_t a = 0; a < p.kh; ++a)
            for (int64_t b = 0; b < p.kw; ++b)
              for (int64_t f = 0; f < p.f; ++f)
                sum +=
                    double(dyp[((n * hq + i - a + p.kh - 1) * wq + j - b + p.kw - 1) * p.f + f]) *
                    k[((a * p.kw + b) * p.c + c) * p.f + f];
          want[((n * p.h + i) * p.w + j) * p.c + c] += sum;
        }
  conv2dInputGrad()(accumulate, p.n, p.h, p.w, p.c, p.kh, p.kw, p.f, hq, wq, 0, 0, dyp.data(),
                    k.data(), dx.data());
  expectClose(dx, want, p.kh * p.kw * p.f, "input grad " + p.name() + mode(accumulate));
}

/// <conv(x), dy> == <x, dx> with dx the input gradient of dy dilated by the stride and
/// padded by KH-1 / KW-1 in front (dilation 1).
void checkInputGradIsAdjoint(const Conv &p) {
  int64_t oh = p.oh(), ow = p.ow(), hq = p.h + p.kh - 1, wq = p.w + p.kw - 1;
  std::vector<float> x = randomVector(p.n * p.h * p.w * p.c),
                     k = randomVector(p.kh * p.kw * p.c * p.f),
                     dy = randomVector(p.n * oh * ow * p.f), y(p.n * oh * ow * p.f, 0.0f),
                     dyp(p.n * hq * wq * p.f, 0.0f), dx(x.size(), 0.0f);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t f = 0; f < p.f; ++f)
          dyp[((n * hq + i * p.sh + p.kh - 1) * wq + j * p.sw + p.kw - 1) * p.f + f] =
              dy[((n * oh + i) * ow + j) * p.f + f];
  conv2d()(true, p.n, p.h, p.w, p.c, 0, 0, p.kh, p.kw, p.f, oh, ow, p.sh, p.sw, 1, 1, x.data(),
           k.data(), y.data());
  conv2dInputGrad()(true, p.n, p.h, p.w, p.c, p.kh, p.kw, p.f, hq, wq, 0, 0, dyp.data(), k.data(),
                    dx.data());
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < y.size(); ++i)
    lhs += double(y[i]) * dy[i];
  for (size_t i = 0; i < x.size(); ++i)
    rhs += double(x[i]) * dx[i];
  expectClose({float(lhs)}, {rhs}, int64_t(y.size()) * p.kh * p.kw * p.c,
              "input grad is the adjoint of conv2d " + p.name());
}

/// The kernels reading an unpadded input with pads give the bits they give on the
/// input padded with zeros beforehand: `top` rows and `left` columns in front,
/// `bottom` and `right` behind (the conv's [h, w] is the padded size).
void checkImplicitPadding(const Conv &p, int64_t top, int64_t left, int64_t bottom, int64_t right) {
  const int64_t h = p.h - top - bottom, w = p.w - left - right, oh = p.oh(), ow = p.ow();
  std::vector<float> x = randomVector(p.n * h * w * p.c), xpad(p.n * p.h * p.w * p.c, 0.0f),
                     k = randomVector(p.kh * p.kw * p.c * p.f),
                     dy = randomVector(p.n * oh * ow * p.f);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t i = 0; i < h; ++i)
      std::copy_n(&x[((n * h + i) * w) * p.c], w * p.c,
                  &xpad[((n * p.h + i + top) * p.w + left) * p.c]);
  const std::string what = p.name() + " padded " + std::to_string(top) + "," +
                           std::to_string(left) + "," + std::to_string(bottom) + "," +
                           std::to_string(right);
  std::vector<float> y(p.n * oh * ow * p.f), yWant(y.size());
  conv2d()(false, p.n, p.h, p.w, p.c, 0, 0, p.kh, p.kw, p.f, oh, ow, p.sh, p.sw, p.dh, p.dw,
           xpad.data(), k.data(), yWant.data());
  conv2d()(false, p.n, h, w, p.c, top, left, p.kh, p.kw, p.f, oh, ow, p.sh, p.sw, p.dh, p.dw,
           x.data(), k.data(), y.data());
  expectEqual(y, yWant, "conv2d reads its padding as zeros, " + what);
  if (p.dh == 1 && p.dw == 1) {
    std::vector<float> dw(k.size()), dwWant(k.size());
    conv2dFilterGrad()(false, p.n, p.h, p.w, p.c, 0, 0, p.kh, p.kw, p.f, oh, ow, p.sh, p.sw,
                       xpad.data(), dy.data(), dwWant.data());
    conv2dFilterGrad()(false, p.n, h, w, p.c, top, left, p.kh, p.kw, p.f, oh, ow, p.sh, p.sw,
                       x.data(), dy.data(), dw.data());
    expectEqual(dw, dwWant, "filter grad reads its padding as zeros, " + what);
  }
  // The input gradient's dyp [N, OH+KH-1, OW+KW-1, F] around dy at (top, left).
  if (top <= p.kh - 1 && left <= p.kw - 1) {
    const int64_t hq = oh + p.kh - 1, wq = ow + p.kw - 1;
    std::vector<float> dyp(p.n * hq * wq * p.f, 0.0f), dx(p.n * oh * ow * p.c), dxWant(dx.size());
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t i = 0; i < oh; ++i)
        std::copy_n(&dy[((n * oh + i) * ow) * p.f], ow * p.f,
                    &dyp[((n * hq + i + top) * wq + left) * p.f]);
    conv2dInputGrad()(false, p.n, oh, ow, p.c, p.kh, p.kw, p.f, hq, wq, 0, 0, dyp.data(), k.data(),
                      dxWant.data());
    conv2dInputGrad()(false, p.n, oh, ow, p.c, p.kh, p.kw, p.f, oh, ow, top, left, dy.data(),
                      k.data(), dx.data());
    expectEqual(dx, dxWant, "input grad reads its padding as zeros, " + what);
  }
}

/// A view of `buffer` as MLIR describes a memref: offset, sizes and strides in
/// elements of `elementBytes`.
struct View {
  std::vector<unsigned char> &buffer;
  int64_t offset;
  std::vector<int64_t> sizes, strides;
};

/// memrefCopy between two views, against a copy element by element: bytes outside
/// the target view stay as they were.
void checkMemrefCopy(int64_t elementBytes, View from, View to, const std::string &what) {
  ++checks;
  for (size_t i = 0; i < from.buffer.size(); ++i)
    from.buffer[i] = (unsigned char)(i * 7 + 3);
  for (size_t i = 0; i < to.buffer.size(); ++i)
    to.buffer[i] = (unsigned char)(i * 13 + 1);
  std::vector<unsigned char> want = to.buffer;
  const size_t rank = from.sizes.size();
  int64_t count = 1;
  for (int64_t size : from.sizes)
    count *= size;
  for (int64_t linear = 0; linear < count; ++linear) {
    int64_t rest = linear, read = from.offset, write = to.offset;
    for (size_t axis = rank; axis-- > 0;) {
      const int64_t index = rest % from.sizes[axis];
      rest /= from.sizes[axis];
      read += index * from.strides[axis];
      write += index * to.strides[axis];
    }
    for (int64_t byte = 0; byte < elementBytes; ++byte)
      want[write * elementBytes + byte] = from.buffer[read * elementBytes + byte];
  }
  auto descriptor = [&](View &view) {
    std::vector<int64_t> words(3 + 2 * rank);
    words[0] = words[1] = int64_t(reinterpret_cast<intptr_t>(view.buffer.data()));
    words[2] = view.offset;
    for (size_t axis = 0; axis < rank; ++axis) {
      words[3 + axis] = view.sizes[axis];
      words[3 + rank + axis] = view.strides[axis];
    }
    return words;
  };
  std::vector<int64_t> source = descriptor(from), target = descriptor(to);
  shardrt_unranked_memref unrankedSource{int64_t(rank), source.data()};
  shardrt_unranked_memref unrankedTarget{int64_t(rank), target.data()};
  memrefCopy(elementBytes, &unrankedSource, &unrankedTarget);
  if (to.buffer != want) {
    ++failures;
    std::fprintf(stderr, "FAILED: memrefCopy: %s\n", what.c_str());
  }
}

void checkMemrefCopies() {
  std::vector<unsigned char> a(4 * 200), b(4 * 200), c(8 * 200);
  checkMemrefCopy(4, {a, 5, {}, {}}, {b, 7, {}, {}}, "rank 0");
  checkMemrefCopy(4, {a, 0, {6, 8}, {8, 1}}, {b, 0, {6, 8}, {8, 1}}, "contiguous");
  checkMemrefCopy(4, {a, 0, {6, 8}, {1, 6}}, {b, 0, {6, 8}, {8, 1}}, "transposed source");
  // A pad's interior: 6x8 into the middle of 8x10.
  checkMemrefCopy(4, {a, 0, {6, 8}, {8, 1}}, {b, 11, {6, 8}, {10, 1}}, "into a pad's interior");
  checkMemrefCopy(4, {a, 3, {2, 3, 4, 5}, {60, 20, 5, 1}}, {b, 1, {2, 3, 4, 5}, {90, 30, 6, 1}},
                  "rank 4, runs of the two inner axes on one side");
  checkMemrefCopy(4, {a, 0, {3, 4}, {4, 1}}, {b, 0, {3, 4}, {1, 3}}, "transposed target");
  checkMemrefCopy(8, {c, 2, {5, 3}, {7, 2}}, {c, 100, {5, 3}, {3, 1}}, "8-byte elements, strided");
  checkMemrefCopy(4, {a, 0, {4, 0, 3}, {0, 3, 1}}, {b, 0, {4, 0, 3}, {0, 3, 1}}, "empty");
  checkMemrefCopy(4, {a, 0, {1, 6, 1}, {6, 1, 1}}, {b, 4, {1, 6, 1}, {1, 1, 9}}, "unit axes");
}

/// The step arena: 64-byte aligned, the same memory for a step that needs no more, grown
/// for one that needs more, and writable through its whole length.
void checkStepArena() {
  ++checks;
  auto *small = static_cast<unsigned char *>(shardrt_step_arena(1000));
  std::memset(small, 1, 1000);
  auto *again = static_cast<unsigned char *>(shardrt_step_arena(64));
  const size_t bigBytes = size_t(3) << 20;
  auto *big = static_cast<unsigned char *>(shardrt_step_arena(int64_t(bigBytes)));
  std::memset(big, 2, bigBytes);
  auto *same = static_cast<unsigned char *>(shardrt_step_arena(int64_t(bigBytes) - 1));
  if (!small || reinterpret_cast<uintptr_t>(small) % 64 || again != small || !big ||
      reinterpret_cast<uintptr_t>(big) % 64 || same != big || big[bigBytes - 1] != 2) {
    ++failures;
    std::fprintf(stderr, "FAILED: shardrt_step_arena: %p, %p, %p, %p\n", static_cast<void *>(small),
                 static_cast<void *>(again), static_cast<void *>(big), static_cast<void *>(same));
  }
}

void checkProducts() {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      checkMatmul(7, 5, 3, ta, tb);
      checkMatmul(33, 65, 129, ta, tb);
      checkMatmul(7, 5, 3, ta, tb, 4);
    }
  checkMatmul(1, 9, 4, false, false);
  checkMatmul(0, 3, 2, false, false);
  checkMatmul(3, 2, 0, true, true);
  checkMatmul(33, 65, 129, false, true, 3, /*accumulate=*/false);
  checkMatmul(3, 2, 0, true, true, 0, /*accumulate=*/false);
  std::printf("kernels: matmul checked (4 transpose combinations, empty dimensions, "
              "overwriting)\n");
  checkBatchedMatmul(2, 3, 5, 4, true);
  checkBatchedMatmul(3, 4, 16, 8, false);
  std::printf("kernels: batched matmul checked (the same as one call per product)\n");
}

void checkConvolutions() {
  //                 n   h   w   c kh kw   f sh sw dh dw
  const Conv convs[] = {{2, 7, 7, 3, 3, 3, 4, 1, 1, 1, 1},
                        {3, 9, 8, 1, 3, 3, 5, 2, 2, 1, 1},    // C=1, stride 2, h != w
                        {2, 8, 11, 4, 2, 3, 6, 2, 1, 1, 1},   // non-square kernel, mixed strides
                        {1, 6, 6, 2, 1, 1, 3, 1, 1, 1, 1},    // 1x1
                        {2, 30, 30, 1, 3, 3, 32, 1, 1, 1, 1}, // W2's conv1, 2 images
                        {8, 40, 40, 8, 3, 3, 5, 1, 1, 1, 1},  // 2 uneven im2col chunks
                        {2, 9, 9, 16, 3, 3, 8, 1, 1, 1, 1},   // 16 channels: oneDNN's forward
                        {2, 11, 10, 24, 3, 2, 6, 2, 1, 1, 1}, // ... strided, non-square
                        {0, 5, 5, 2, 3, 3, 2, 1, 1, 1, 1}};   // empty batch
  for (const Conv &p : convs) {
    for (bool accumulate : {true, false}) {
      checkConv(p, accumulate);
      checkFilterGrad(p, accumulate);
      checkInputGrad(p, accumulate);
    }
    if (p.n)
      checkInputGradIsAdjoint(p);
  }
  checkConv({2, 9, 10, 3, 3, 2, 4, 1, 2, 2, 3}); // dilated
  for (bool accumulate : {true, false})
    checkConv({2, 12, 13, 16, 3, 3, 4, 1, 2, 2, 3}, accumulate); // dilated, oneDNN's
  std::printf("kernels: conv2d, filter grad, input grad checked (strides 1 and 2, C=1, "
              "non-square, chunked, empty, oneDNN's forward; accumulating and overwriting)\n");
  checkImplicitPadding({2, 30, 30, 1, 3, 3, 32, 1, 1, 1, 1}, 1, 1, 1, 1); // W2's conv1, SAME
  checkImplicitPadding({2, 16, 16, 32, 3, 3, 8, 1, 1, 1, 1}, 1, 1, 1, 1); // W2's conv2
  checkImplicitPadding({3, 12, 11, 2, 3, 2, 4, 2, 1, 1, 1}, 2, 0, 1, 1);  // uneven, strided
  checkImplicitPadding({2, 10, 12, 3, 3, 3, 4, 1, 2, 2, 2}, 2, 3, 2, 3);  // dilated
  checkImplicitPadding({2, 40, 40, 8, 3, 3, 5, 1, 1, 1, 1}, 1, 2, 1, 0);  // chunked
  checkImplicitPadding({2, 13, 12, 16, 3, 3, 4, 2, 1, 1, 1}, 2, 0, 1, 1); // oneDNN's, uneven
  std::printf("kernels: conv2d, filter grad, input grad read an unpadded input with pads "
              "(bitwise the same as on the input padded beforehand)\n");
}

} // namespace

int main() {
  checkProducts();
  checkConvolutions();
  // The same in bfloat16 (oneDNN), and its rounding.
  shardrt_set_matmul_precision_bf16(1);
  bf16Inputs = true;
  checkProducts();
  checkConvolutions();
  checkBf16Rounding("a 1 x 1 x 2 matmul", [](const float *a, const float *b, float *c) {
    shardrt_matmul_f32(0, 0, 0, 1, 1, 2, 2, 1, 1, a, b, c);
  });
  std::printf("kernels: the same in bfloat16 (rounding to nearest, ties to even)\n");
  shardrt_set_matmul_precision_bf16(0);
  // The _bf16 convolution entries, with the flag off.
  bf16Entries = true;
  checkConvolutions();
  // A 1 x 1 convolution of one pixel of two channels is that product.
  checkBf16Rounding("shardrt_conv2d_bf16", [](const float *x, const float *k, float *y) {
    shardrt_conv2d_bf16(0, 1, 1, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, x, k, y);
  });
  std::printf("kernels: the _bf16 convolution entries the same in bfloat16, rounding so\n");
  bf16Entries = false;
  for (bool accumulate : {true, false})
    checkBf16OperandEntries(accumulate);
  std::printf("kernels: the bfloat16 operands' matmul entries give the f32 ones' products\n");
  bf16Inputs = false;

  checkMemrefCopies();
  std::printf("kernels: memrefCopy checked (rank 0 to 4, strided and transposed, empty)\n");

  checkStepArena();
  std::printf("kernels: step arena checked (aligned, reused, grown)\n");

  if (failures) {
    std::printf("kernels: %d of %d checks failed\n", failures, checks);
    return 1;
  }
  std::printf("kernels: %d checks passed\n", checks);
  return 0;
}
