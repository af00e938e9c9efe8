/* scratch_regions.h - what the runtime's kernels and blocking collectives take of its one
 * scratch buffer (runtime/lib/memory/scratch.h) per call, from the call's arguments: the runtime
 * asks for these regions, and shardc plans the buffer's size as the most any call of a
 * program takes (the manifest's scratch_bytes, mapped by the driver before the first
 * step), which --report counts. C++17, header only. */
#ifndef SHARDRT_SCRATCH_REGIONS_H
#define SHARDRT_SCRATCH_REGIONS_H

#include "shardrt/convolution_buffers.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace shardrt {

/* The sizes of consecutive regions, each starting 64-byte aligned. */
template <size_t N> using ScratchRegions = std::array<size_t, N>;

inline constexpr size_t alignedRegion(size_t bytes) { return (bytes + 63) / 64 * 64; }

template <size_t N> constexpr size_t scratchBytes(const ScratchRegions<N> &regions) {
  size_t total = 0;
  for (size_t bytes : regions)
    total += alignedRegion(bytes);
  return total;
}

/* ---- convolutions as im2col products (runtime/lib/kernels/kernels.cpp) ---- */

/* An NHWC tensor's window geometry: `outH` x `outW` positions, each reading `kh` x `kw`
 * pixels `dilH`/`dilW` apart, windows `strideH`/`strideW` apart. */
struct Windows {
  int64_t h, w, c;
  int64_t kh, kw;
  int64_t outH, outW;
  int64_t strideH, strideW;
  int64_t dilH, dilW;

  int64_t rowLength() const { return kh * kw * c; }
  int64_t rowsPerImage() const { return outH * outW; }
};

/* Where an input's [h, w] images sit in the zero-padded images the windows read: `top`
 * rows and `left` columns in (the padding past the far edges is what the windows reach). */
struct Padding {
  int64_t h, w, top, left;

  bool none(const Windows &g) const { return top == 0 && left == 0 && h == g.h && w == g.w; }
};

/* The batch is cut into chunks whose im2col matrix stays around this size, so that sgemm
 * reads it back from cache rather than memory; the whole batch at once is much slower
 * (bench/kernels times the convolutions at W2's shapes). */
inline constexpr int64_t kIm2colChunkBytes = int64_t(2) << 20;

/* A convolution as im2col products: the windows over the padded input, the input's place
 * in it, and the bytes of a region before the chunks that stays valid across them (an
 * input gradient's flipped filters). */
struct Im2colProduct {
  Windows g;
  Padding padding;
  size_t extraBytes = 0;

  bool padsImages() const { return !padding.none(g); }
  size_t imageBytes() const { return size_t(g.rowsPerImage() * g.rowLength()) * sizeof(float); }
  int64_t imagesPerChunk(int64_t n) const {
    const size_t image = imageBytes();
    return std::clamp<int64_t>(image ? int64_t(kIm2colChunkBytes / image) : 1, 1,
                               std::max<int64_t>(n, 1));
  }
  /* The extra region, one padded image (when the input is padded), one chunk's im2col
   * matrix, for `n` images. */
  ScratchRegions<3> regions(int64_t n) const {
    return {extraBytes, padsImages() ? size_t(g.h * g.w * g.c) * sizeof(float) : 0,
            size_t(imagesPerChunk(n)) * imageBytes()};
  }
};

/* The windows over the padded images: at least the image and its front padding, and as
 * far as the last window reaches. */
inline Im2colProduct im2colOver(const Padding &p, Windows g, size_t extraBytes = 0) {
  g.h = std::max(p.h + p.top, (g.outH - 1) * g.strideH + (g.kh - 1) * g.dilH + 1);
  g.w = std::max(p.w + p.left, (g.outW - 1) * g.strideW + (g.kw - 1) * g.dilW + 1);
  return {g, p, extraBytes};
}

/* shardrt_conv2d_f32's and shardrt_conv2d_filter_grad_f32's products (the filter
 * gradient's with unit dilation). */
inline Im2colProduct forwardIm2col(int64_t h, int64_t w, int64_t c, int64_t padH, int64_t padW,
                                   int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
                                   int64_t sw, int64_t dh, int64_t dw) {
  return im2colOver({h, w, padH, padW}, {h, w, c, kh, kw, oh, ow, sh, sw, dh, dw});
}

/* The filters of a convolution flipped for its input gradient: kh x kw x f x c. */
inline size_t flippedFiltersBytes(int64_t kh, int64_t kw, int64_t f, int64_t c) {
  return size_t(kh * kw * f * c) * sizeof(float);
}

/* shardrt_conv2d_input_grad_f32's: a stride-1 correlation of the output's gradient, padded,
 * with the flipped filters (kept in the extra region). */
inline Im2colProduct inputGradIm2col(int64_t h, int64_t w, int64_t c, int64_t kh, int64_t kw,
                                     int64_t f, int64_t dyH, int64_t dyW, int64_t padH,
                                     int64_t padW) {
  return im2colOver({dyH, dyW, padH, padW}, {dyH, dyW, f, kh, kw, h, w, 1, 1, 1, 1},
                    flippedFiltersBytes(kh, kw, f, c));
}

/* What each convolution entry takes of the scratch, by the entries' arguments but the
 * pointers: `productsInBf16` for the _bf16 entries, whose convolutions are all im2col
 * products (with --matmul-precision bf16 the f32 entries' are too, past this plan). */
inline size_t conv2dScratchBytes(bool productsInBf16, int64_t n, int64_t h, int64_t w, int64_t c,
                                 int64_t padH, int64_t padW, int64_t kh, int64_t kw, int64_t oh,
                                 int64_t ow, int64_t sh, int64_t sw, int64_t dh, int64_t dw) {
  if (!productsInBf16 && onDnnlInF32(n, c))
    return 0;
  return scratchBytes(
      forwardIm2col(h, w, c, padH, padW, kh, kw, oh, ow, sh, sw, dh, dw).regions(n));
}

inline size_t conv2dFilterGradScratchBytes(int64_t n, int64_t h, int64_t w, int64_t c, int64_t padH,
                                           int64_t padW, int64_t kh, int64_t kw, int64_t oh,
                                           int64_t ow, int64_t sh, int64_t sw) {
  return scratchBytes(forwardIm2col(h, w, c, padH, padW, kh, kw, oh, ow, sh, sw, 1, 1).regions(n));
}

inline size_t conv2dInputGradScratchBytes(bool productsInBf16, int64_t n, int64_t h, int64_t w,
                                          int64_t c, int64_t kh, int64_t kw, int64_t f, int64_t dyH,
                                          int64_t dyW, int64_t padH, int64_t padW) {
  if (!productsInBf16 && onDnnlInF32(n, f))
    return scratchBytes(ScratchRegions<1>{flippedFiltersBytes(kh, kw, f, c)});
  return scratchBytes(inputGradIm2col(h, w, c, kh, kw, f, dyH, dyW, padH, padW).regions(n));
}

/* ---- blocking collectives (runtime/lib/collectives/collectives.cpp) ---- */

/* A tensor viewed around one dimension: the elements before it, its size, and after. */
struct DimView {
  int64_t outer = 1, dim = 1, inner = 1;
  int64_t elements() const { return outer * dim * inner; }
};

inline DimView viewOf(int ndim, const int64_t *shape, int d) {
  DimView view;
  for (int i = 0; i < ndim; ++i)
    (i < d ? view.outer : i == d ? view.dim : view.inner) *= shape[i];
  return view;
}

/* Below this many bytes a reduce-scatter is MPI's, from it the runtime's ring
 * (SHARDRT_RING_MIN_BYTES changes it): glibc serves allocations up to 32 MiB (its largest
 * dynamic mmap threshold) from memory it keeps, so below that MPI's per-call temporary
 * costs no page faults and MPI's collective is as fast as the ring or faster; above it
 * every call maps fresh pages. */
inline constexpr int64_t kDefaultRingMinBytes = int64_t(32) << 20;

/* An all-gather of `local` on each of `ranks` ranks: a gather along a dimension that is
 * not the outermost is received into the scratch, then joined. */
inline ScratchRegions<1> allGatherRegions(const DimView &local, size_t elementBytes,
                                          int64_t ranks) {
  return {ranks == 1 || local.outer == 1 ? 0 : size_t(ranks * local.elements()) * elementBytes};
}

/* A reduce-scatter of `in`: its blocks packed together where they are not, and the ring's
 * two blocks from `ringMinBytes` on. */
inline ScratchRegions<3> reduceScatterRegions(const DimView &in, size_t elementBytes, int64_t ranks,
                                              int64_t ringMinBytes) {
  if (ranks == 1)
    return {0, 0, 0};
  const size_t inBytes = size_t(in.elements()) * elementBytes;
  const size_t block = size_t((in.elements() + ranks - 1) / ranks) * elementBytes;
  const bool ring = int64_t(inBytes) >= ringMinBytes;
  return {in.outer == 1 ? 0 : inBytes, ring ? block : 0, ring ? block : 0};
}

/* The blocks an all-to-all receives (the input's shape with the split dimension cut
 * `ranks`-fold) viewed around the concat dimension, along which they lie side by side. */
inline DimView receivedBlocks(DimView concat, int splitDim, int concatDim, int64_t ranks) {
  if (splitDim < concatDim)
    concat.outer /= ranks;
  else if (splitDim > concatDim)
    concat.inner /= ranks;
  else
    concat.dim /= ranks;
  return concat;
}

/* An all-to-all of `split` (viewed around its split dimension): what it sends packed where
 * the blocks are not contiguous, what it receives where `received` are not in place. */
inline ScratchRegions<2> allToAllRegions(const DimView &split, const DimView &received,
                                         size_t elementBytes, int64_t ranks) {
  if (ranks == 1)
    return {0, 0};
  const size_t inBytes = size_t(split.elements()) * elementBytes;
  return {split.outer == 1 ? 0 : inBytes, received.outer == 1 ? 0 : inBytes};
}

} // namespace shardrt

#endif
