// Convolutions on oneDNN's convolution primitive: the f32 forward correlations of the
// dense kernels (kernels.cpp: a convolution, and an input gradient as the correlation of
// the output's gradient with the flipped filters), NHWC input and output and HWCF
// filters as the compiled program holds them.
#ifndef SHARDRT_LIB_DNNL_CONV_H
#define SHARDRT_LIB_DNNL_CONV_H

#include <cstdint>

namespace shardrt {

/// y[n, oh, ow, f] (+= when accumulating) = the convolution of x[n, h, w, c], zero-padded
/// by padTop rows and padLeft columns in front (and behind as far as the windows reach),
/// with k[kh, kw, c, f], strides sh, sw and dilations dh, dw. False (nothing written)
/// where oneDNN has no primitive for it.
bool dnnlConvolution(bool accumulate, int64_t n, int64_t h, int64_t w, int64_t c, int64_t padTop,
                     int64_t padLeft, int64_t kh, int64_t kw, int64_t f, int64_t oh, int64_t ow,
                     int64_t sh, int64_t sw, int64_t dh, int64_t dw, const float *x, const float *k,
                     float *y);

} // namespace shardrt

#endif // SHARDRT_LIB_DNNL_CONV_H
