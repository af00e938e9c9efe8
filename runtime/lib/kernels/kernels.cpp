// Dense f32 kernels for linalg ops that lower-to-kernels (compiler/lib/Conversion)
// replaces: matmul and the three 2-D convolutions of a training step, on OpenBLAS and
// oneDNN (dnnl_matmul.h: the matmuls' wide products in f32, and with
// `--matmul-precision bf16` every product in bfloat16, as the _bf16 entries' always;
// dnnl_conv.h: forward convolutions of many input channels in f32).
//
// A convolution is sgemm on an im2col matrix: row (n, oh, ow) holds the input
// window that output position reads, laid out (kh, kw, c) like the kernel's leading
// dimensions, so that
//   forward       y[rows, F]        += cols[rows, KH*KW*C] @ k[KH*KW*C, F]
//   filter grad   dw[KH*KW*C, F]    += cols^T @ dy[rows, F]
//   input grad    dx[rows, C]       += cols(dyp, stride 1)[rows, KH*KW*F] @ flip(k)
// where flip(k)[(kh, kw, f), c] = k[KH-1-kh, KW-1-kw, c, f]. The batch is cut into
// chunks of images whose im2col matrix stays around kIm2colChunkBytes, so that sgemm reads
// it back from cache rather than memory; the matrices live in the runtime's scratch
// buffer, which collectives use too: no collective runs inside a kernel and the
// runtime is single-threaded, so the two never hold it at the same time.
#include "collectives/collectives.h"
#include "dnnl_conv.h"
#include "dnnl_matmul.h"
#include "memory/scratch.h"
#include "mesh/mesh.h"

#include "shardrt/convolution_buffers.h"
#include "shardrt/scratch_regions.h"
#include "shardrt/shardrt.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace shardrt {
namespace {

/// The largest M or K of a product that oneDNN's sgemm computes in f32 instead of
/// OpenBLAS's.
constexpr int64_t kThinSide = 16;

/// One f32 product of sgemm's (below) with k > 0. Thin products (a side of at most
/// 16: W1's at batch 8, their weight gradients) on oneDNN's sgemm, which is faster than
/// OpenBLAS there (bench/kernels); the others on OpenBLAS.
void f32Product(const char *caller, bool accumulate, bool transA, bool transB, int64_t m, int64_t n,
                int64_t k, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                int64_t ldc) {
  const float beta = accumulate ? 1.0f : 0.0f;
  if (std::min(m, k) > kThinSide)
    return cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                       transB ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b, ldb, beta, c,
                       ldc);
  const dnnl_status_t status = dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, 1.0f, a,
                                          lda, b, ldb, beta, c, ldc);
  if (status != dnnl_success)
    fatal("%s: oneDNN's sgemm failed on %lld x %lld x %lld (status %d)", caller, (long long)m,
          (long long)n, (long long)k, int(status));
}

/// Whether an f32 correlation of `n` images of `channels` channels goes to oneDNN:
/// from kDnnlConvChannels input channels of a forward convolution (or output channels
/// of an input gradient, a forward convolution of the output's gradient) oneDNN's
/// convolution is faster than im2col + OpenBLAS, reorders included; below, the reorder
/// of the output out of oneDNN's blocked layout costs more than it saves (bench/kernels).
bool onDnnlConvolution(int64_t n, int64_t channels, bool productsInBf16) {
  return !productsInBf16 && onDnnlInF32(n, channels) && !matmulInBf16();
}

/// The smallest side of a matmul kernel's f32 product that oneDNN's matmul computes
/// instead of OpenBLAS: faster than OpenBLAS at W4's and W1 batch 256's shapes, and a
/// batch of products (attention's) is one primitive instead of a call per product.
/// Narrower products (W2's class layer, n = 10) are slower there and stay on OpenBLAS,
/// as do the convolutions' im2col products, whose chunks are sized for OpenBLAS
/// (bench/kernels measures both).
constexpr int64_t kWideSide = 32;

/// Whether the products of `batch` (c[m, n] = op(a) op(b) of k terms) have anything
/// to compute, after stopping on a size out of BLAS's range. An empty product (k = 0)
/// adds nothing (BLAS would reject its leading dimensions of 0), but an overwritten
/// output is still zero: it is zeroed here.
bool productsToCompute(const char *caller, bool accumulate, int64_t m, int64_t n, int64_t k,
                       int64_t lda, int64_t ldb, float *c, int64_t ldc, const Batch &batch) {
  for (int64_t v : {m, n, k, lda, ldb, ldc, batch.sizes[0], batch.sizes[1]})
    if (v < 0 || v > INT_MAX)
      fatal("%s: dimension %lld is out of range for BLAS", caller, static_cast<long long>(v));
  if (m == 0 || n == 0 || batch.sizes[0] == 0 || batch.sizes[1] == 0)
    return false;
  if (k > 0)
    return true;
  if (!accumulate)
    for (int64_t i = 0; i < batch.sizes[0]; ++i)
      for (int64_t j = 0; j < batch.sizes[1]; ++j)
        for (int64_t row = 0; row < m; ++row)
          std::memset(c + i * batch.c[0] + j * batch.c[1] + row * ldc, 0, n * sizeof(float));
  return false;
}

/// c[m, n] = op(a) op(b) (+ c when accumulating), row-major with leading dimensions lda,
/// ldb, ldc; a is [m, k] or [k, m], b [k, n] or [n, k]; for each product of `batch`.
/// `im2col`: a convolution's product; `inBf16`: in bfloat16 whatever --matmul-precision
/// says (a _bf16 convolution entry's).
void sgemm(const char *caller, bool im2col, bool inBf16, bool accumulate, bool transA, bool transB,
           int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
           int64_t ldb, float *c, int64_t ldc, const Batch &batch = {}) {
  if (!productsToCompute(caller, accumulate, m, n, k, lda, ldb, c, ldc, batch))
    return;
  progressGradients();
  if (inBf16 || matmulInBf16())
    return bf16Gemm(accumulate, transA, transB, m, n, k, a, lda, b, ldb, c, ldc, batch);
  if (!im2col && std::min({m, n, k}) >= kWideSide)
    return dnnlGemm(accumulate, transA, transB, m, n, k, a, lda, b, ldb, c, ldc, batch);
  for (int64_t i = 0; i < batch.sizes[0]; ++i)
    for (int64_t j = 0; j < batch.sizes[1]; ++j)
      f32Product(caller, accumulate, transA, transB, m, n, k, a + i * batch.a[0] + j * batch.a[1],
                 lda, b + i * batch.b[0] + j * batch.b[1], ldb, c + i * batch.c[0] + j * batch.c[1],
                 ldc);
}

/// The bf16 kernels' products: operands already in bfloat16, on oneDNN's matmul.
void bf16Products(const char *caller, bool accumulate, bool transA, bool transB, int64_t m,
                  int64_t n, int64_t k, const uint16_t *a, int64_t lda, const uint16_t *b,
                  int64_t ldb, float *c, int64_t ldc, const Batch &batch = {}) {
  if (!productsToCompute(caller, accumulate, m, n, k, lda, ldb, c, ldc, batch))
    return;
  progressGradients();
  bf16OperandsGemm(accumulate, transA, transB, m, n, k, a, lda, b, ldb, c, ldc, batch);
}

/// The C entry a convolution came in by: its name, for errors, and whether it computes
/// its products in bfloat16 (the _bf16 entries, `precision matmul : bf16`).
struct ConvEntry {
  const char *name;
  bool productsInBf16;
};

/// A convolution's sgemm on dense matrices.
void im2colProduct(ConvEntry entry, bool accumulate, bool transA, bool transB, int64_t m, int64_t n,
                   int64_t k, const float *a, const float *b, float *c) {
  sgemm(entry.name, /*im2col=*/true, entry.productsInBf16, accumulate, transA, transB, m, n, k, a,
        transA ? m : k, b, transB ? k : n, c, n);
}

/// Copies `n` floats. A window row of a few channels (conv1's 3 pixels of 1
/// channel) is a short inline loop rather than a call of memcpy per 12 bytes.
inline void copyRun(const float *from, int64_t n, float *to) {
  if (n > 16) {
    std::memcpy(to, from, n * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    to[i] = from[i];
}

/// Writes the im2col rows of `images` images starting at `x` into `cols`.
void im2col(const Windows &g, int64_t images, const float *x, float *cols) {
  const int64_t imageSize = g.h * g.w * g.c;
  // With unit dilation along w, a window row (kw, c) is one contiguous run.
  const bool contiguousRun = g.dilW == 1;
  for (int64_t n = 0; n < images; ++n) {
    const float *image = x + n * imageSize;
    for (int64_t oh = 0; oh < g.outH; ++oh)
      for (int64_t ow = 0; ow < g.outW; ++ow)
        for (int64_t kh = 0; kh < g.kh; ++kh) {
          const float *pixel =
              image + ((oh * g.strideH + kh * g.dilH) * g.w + ow * g.strideW) * g.c;
          if (contiguousRun) {
            copyRun(pixel, g.kw * g.c, cols);
            cols += g.kw * g.c;
            continue;
          }
          for (int64_t kw = 0; kw < g.kw; ++kw, cols += g.c)
            copyRun(pixel + kw * g.dilW * g.c, g.c, cols);
        }
  }
}

/// The batch cut into chunks of images, each chunk's im2col matrix in the scratch
/// buffer, after the product's extra region, which stays valid across the chunks. An
/// input with padding is padded one image at a time in a scratch image whose
/// border stays zero, small enough to stay in cache for its im2col.
class Im2colChunks {
public:
  Im2colChunks(const Im2colProduct &product, int64_t n)
      : g(product.g), padding(product.padding), padsImages(product.padsImages()), n(n),
        perChunk(product.imagesPerChunk(n)) {
    const ScratchRegions<3> bytes = product.regions(n);
    auto [extraRegion, paddedRegion, colsRegion] = scratch().regions<3>(bytes);
    extra = reinterpret_cast<float *>(extraRegion);
    padded = reinterpret_cast<float *>(paddedRegion);
    cols = reinterpret_cast<float *>(colsRegion);
    std::memset(padded, 0, bytes[1]);
  }

  float *extra;

  /// Calls `gemm(first, images, cols)` for consecutive chunks of the batch `x`: `cols`
  /// is the im2col matrix of `images` images from image `first` on.
  template <typename Gemm> void forEach(const float *x, Gemm gemm) {
    const int64_t imageSize = padding.h * padding.w * g.c;
    const int64_t colsPerImage = g.rowsPerImage() * g.rowLength();
    for (int64_t first = 0; first < n; first += perChunk) {
      int64_t images = std::min(perChunk, n - first);
      if (!padsImages) {
        im2col(g, images, x + first * imageSize, cols);
      } else {
        for (int64_t i = 0; i < images; ++i) {
          const float *image = x + (first + i) * imageSize;
          for (int64_t row = 0; row < padding.h; ++row)
            copyRun(image + row * padding.w * g.c, padding.w * g.c,
                    padded + ((row + padding.top) * g.w + padding.left) * g.c);
          im2col(g, 1, padded, cols + i * colsPerImage);
        }
      }
      gemm(first, images, cols);
    }
  }

private:
  Windows g;
  Padding padding;
  bool padsImages;
  int64_t n, perChunk;
  float *padded, *cols;
};

void conv2d(ConvEntry entry, int32_t accumulate, int64_t n, int64_t h, int64_t w, int64_t c,
            int64_t pad_h, int64_t pad_w, int64_t kh, int64_t kw, int64_t f, int64_t oh, int64_t ow,
            int64_t sh, int64_t sw, int64_t dh, int64_t dw, const float *x, const float *k,
            float *y) {
  if (onDnnlConvolution(n, c, entry.productsInBf16) &&
      dnnlConvolution(accumulate, n, h, w, c, pad_h, pad_w, kh, kw, f, oh, ow, sh, sw, dh, dw, x, k,
                      y))
    return;
  const Im2colProduct product =
      forwardIm2col(h, w, c, pad_h, pad_w, kh, kw, oh, ow, sh, sw, dh, dw);
  const Windows &g = product.g;
  Im2colChunks(product, n).forEach(x, [&](int64_t first, int64_t images, const float *cols) {
    im2colProduct(entry, accumulate, false, false, images * g.rowsPerImage(), f, g.rowLength(),
                  cols, k, y + first * g.rowsPerImage() * f);
  });
}

void conv2dFilterGrad(ConvEntry entry, int32_t accumulate, int64_t n, int64_t h, int64_t w,
                      int64_t c, int64_t pad_h, int64_t pad_w, int64_t kh, int64_t kw, int64_t f,
                      int64_t oh, int64_t ow, int64_t sh, int64_t sw, const float *x,
                      const float *dy, float *dw) {
  const Im2colProduct product = forwardIm2col(h, w, c, pad_h, pad_w, kh, kw, oh, ow, sh, sw, 1, 1);
  const Windows &g = product.g;
  // Every chunk adds to the same dw: only the first may overwrite it, and without
  // images there is no first.
  if (!accumulate && n == 0)
    std::memset(dw, 0, g.rowLength() * f * sizeof(float));
  Im2colChunks(product, n).forEach(x, [&](int64_t first, int64_t images, const float *cols) {
    im2colProduct(entry, accumulate || first > 0, true, false, g.rowLength(), f,
                  images * g.rowsPerImage(), cols, dy + first * g.rowsPerImage() * f, dw);
  });
}

void conv2dInputGrad(ConvEntry entry, int32_t accumulate, int64_t n, int64_t h, int64_t w,
                     int64_t c, int64_t kh, int64_t kw, int64_t f, int64_t dy_h, int64_t dy_w,
                     int64_t pad_h, int64_t pad_w, const float *dy, const float *k, float *dx) {
  // A stride-1 correlation of dyp [N, H+KH-1, W+KW-1, F] (dy [N, dy_h, dy_w, F] at
  // (pad_h, pad_w), zeros around it) with the flipped kernel.
  auto flip = [&](float *flipped) {
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j)
        for (int64_t ci = 0; ci < c; ++ci)
          for (int64_t fi = 0; fi < f; ++fi)
            flipped[((i * kw + j) * f + fi) * c + ci] =
                k[(((kh - 1 - i) * kw + (kw - 1 - j)) * c + ci) * f + fi];
  };
  if (onDnnlConvolution(n, f, entry.productsInBf16)) {
    auto [region] = scratch().regions<1>({flippedFiltersBytes(kh, kw, f, c)});
    float *flipped = reinterpret_cast<float *>(region);
    flip(flipped);
    if (dnnlConvolution(accumulate, n, dy_h, dy_w, f, pad_h, pad_w, kh, kw, c, h, w, 1, 1, 1, 1, dy,
                        flipped, dx))
      return;
  }
  const Im2colProduct product = inputGradIm2col(h, w, c, kh, kw, f, dy_h, dy_w, pad_h, pad_w);
  const Windows &g = product.g;
  Im2colChunks chunks(product, n);
  float *flipped = chunks.extra;
  flip(flipped);
  chunks.forEach(dy, [&](int64_t first, int64_t images, const float *cols) {
    im2colProduct(entry, accumulate, false, false, images * g.rowsPerImage(), c, g.rowLength(),
                  cols, flipped, dx + first * g.rowsPerImage() * c);
  });
}

} // namespace
} // namespace shardrt

using namespace shardrt;

extern "C" {

void shardrt_matmul_f32(int32_t accumulate, int32_t trans_a, int32_t trans_b, int64_t m, int64_t n,
                        int64_t k, int64_t lda, int64_t ldb, int64_t ldc, const float *a,
                        const float *b, float *c) {
  sgemm("shardrt_matmul_f32", /*im2col=*/false, /*inBf16=*/false, accumulate, trans_a, trans_b, m,
        n, k, a, lda, b, ldb, c, ldc);
}

void shardrt_batched_matmul_f32(int32_t accumulate, int32_t trans_a, int32_t trans_b, int64_t m,
                                int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc,
                                int64_t batch0, int64_t batch1, int64_t a_stride0,
                                int64_t a_stride1, int64_t b_stride0, int64_t b_stride1,
                                int64_t c_stride0, int64_t c_stride1, const float *a,
                                const float *b, float *c) {
  const Batch batch{
      {batch0, batch1}, {a_stride0, a_stride1}, {b_stride0, b_stride1}, {c_stride0, c_stride1}};
  sgemm("shardrt_batched_matmul_f32", /*im2col=*/false, /*inBf16=*/false, accumulate, trans_a,
        trans_b, m, n, k, a, lda, b, ldb, c, ldc, batch);
}

void shardrt_matmul_bf16(int32_t accumulate, int32_t trans_a, int32_t trans_b, int64_t m, int64_t n,
                         int64_t k, int64_t lda, int64_t ldb, int64_t ldc, const uint16_t *a,
                         const uint16_t *b, float *c) {
  bf16Products("shardrt_matmul_bf16", accumulate, trans_a, trans_b, m, n, k, a, lda, b, ldb, c,
               ldc);
}

void shardrt_batched_matmul_bf16(int32_t accumulate, int32_t trans_a, int32_t trans_b, int64_t m,
                                 int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc,
                                 int64_t batch0, int64_t batch1, int64_t a_stride0,
                                 int64_t a_stride1, int64_t b_stride0, int64_t b_stride1,
                                 int64_t c_stride0, int64_t c_stride1, const uint16_t *a,
                                 const uint16_t *b, float *c) {
  const Batch batch{
      {batch0, batch1}, {a_stride0, a_stride1}, {b_stride0, b_stride1}, {c_stride0, c_stride1}};
  bf16Products("shardrt_batched_matmul_bf16", accumulate, trans_a, trans_b, m, n, k, a, lda, b, ldb,
               c, ldc, batch);
}

#define SHARDRT_CONV2D_ENTRIES(PRECISION, IN_BF16)                                                 \
  void shardrt_conv2d_##PRECISION(int32_t accumulate, int64_t n, int64_t h, int64_t w, int64_t c,  \
                                  int64_t pad_h, int64_t pad_w, int64_t kh, int64_t kw, int64_t f, \
                                  int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t dh,      \
                                  int64_t dw, const float *x, const float *k, float *y) {          \
    conv2d({"shardrt_conv2d_" #PRECISION, IN_BF16}, accumulate, n, h, w, c, pad_h, pad_w, kh, kw,  \
           f, oh, ow, sh, sw, dh, dw, x, k, y);                                                    \
  }                                                                                                \
  void shardrt_conv2d_filter_grad_##PRECISION(                                                     \
      int32_t accumulate, int64_t n, int64_t h, int64_t w, int64_t c, int64_t pad_h,               \
      int64_t pad_w, int64_t kh, int64_t kw, int64_t f, int64_t oh, int64_t ow, int64_t sh,        \
      int64_t sw, const float *x, const float *dy, float *dw) {                                    \
    conv2dFilterGrad({"shardrt_conv2d_filter_grad_" #PRECISION, IN_BF16}, accumulate, n, h, w, c,  \
                     pad_h, pad_w, kh, kw, f, oh, ow, sh, sw, x, dy, dw);                          \
  }                                                                                                \
  void shardrt_conv2d_input_grad_##PRECISION(                                                      \
      int32_t accumulate, int64_t n, int64_t h, int64_t w, int64_t c, int64_t kh, int64_t kw,      \
      int64_t f, int64_t dy_h, int64_t dy_w, int64_t pad_h, int64_t pad_w, const float *dy,        \
      const float *k, float *dx) {                                                                 \
    conv2dInputGrad({"shardrt_conv2d_input_grad_" #PRECISION, IN_BF16}, accumulate, n, h, w, c,    \
                    kh, kw, f, dy_h, dy_w, pad_h, pad_w, dy, k, dx);                               \
  }

SHARDRT_CONV2D_ENTRIES(f32, false)
SHARDRT_CONV2D_ENTRIES(bf16, true)
#undef SHARDRT_CONV2D_ENTRIES

} // extern "C"
