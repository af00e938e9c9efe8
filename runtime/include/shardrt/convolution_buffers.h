/* convolution_buffers.h - which convolutions the runtime runs on oneDNN, and the buffers
 * it keeps for each: oneDNN computes in its own blocked layouts (channels in blocks of
 * 16), so the runtime holds a copy of the input, the filters and the output in those
 * layouts per convolution shape (runtime/lib/kernels/dnnl_conv.cpp), for the whole run. shardc's
 * --report counts them so. C++17, header only. */
#ifndef SHARDRT_CONVOLUTION_BUFFERS_H
#define SHARDRT_CONVOLUTION_BUFFERS_H

#include <cstdint>

namespace shardrt {

/* A forward convolution of at least this many input channels, or an input gradient of
 * at least this many output channels (a forward convolution of those), runs on oneDNN
 * (in f32; the _bf16 entries and --matmul-precision bf16 run on im2col instead). */
inline constexpr int64_t kDnnlConvChannels = 16;

/* Whether an f32 correlation of `n` images of `channels` channels (a forward
 * convolution's input channels, an input gradient's output channels) runs on oneDNN. */
inline constexpr bool onDnnlInF32(int64_t n, int64_t channels) {
  return n > 0 && channels >= kDnnlConvChannels;
}

/* The bytes of oneDNN's copies of a forward convolution's operands: an n x h x w x c
 * input, kh x kw x c x f filters, an n x oh x ow x f output, channels padded to whole
 * blocks of 16. */
inline constexpr int64_t dnnlConvolutionBytes(int64_t n, int64_t h, int64_t w, int64_t c,
                                              int64_t kh, int64_t kw, int64_t f, int64_t oh,
                                              int64_t ow) {
  const int64_t cb = (c + 15) / 16 * 16, fb = (f + 15) / 16 * 16;
  return int64_t(sizeof(float)) * (n * h * w * cb + kh * kw * cb * fb + n * oh * ow * fb);
}

} // namespace shardrt

#endif
