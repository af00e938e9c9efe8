// Convolutions on oneDNN (dnnl_conv.h). The primitive picks its own (blocked) layouts
// for the input, filters and output; reorders convert from and to the program's NHWC
// and HWCF around it: W2's forward convolutions take 1.3-1.5x less time so than
// im2col + OpenBLAS on one core of a Zen 4 (bench/kernels), reorders included. A
// primitive, its reorders and its blocked buffers are made once per shape.
#include "dnnl_conv.h"
#include "mesh.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <optional>

namespace shardrt {
namespace {

using dnnl::memory;

/// One shape's convolution: the primitive, and for each operand whose layout differs
/// from the program's, a buffer in the primitive's layout and the reorder into it (the
/// output's out of it, adding to the program's when accumulating).
struct Convolution {
  dnnl::convolution_forward primitive;
  memory::desc src, weights, dst;
  std::optional<memory> blockedSrc, blockedWeights, blockedDst;
  std::optional<dnnl::reorder> toSrc, toWeights, fromDst;
};

struct State {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  // accumulate, n, h, w, c, padTop, padLeft, kh, kw, f, oh, ow, sh, sw, dh, dw
  std::map<std::array<int64_t, 16>, std::optional<Convolution>> convolutions;
};

State &state() {
  static State s;
  return s;
}

std::optional<Convolution> makeConvolution(State &st, bool accumulate, int64_t n, int64_t h,
                                           int64_t w, int64_t c, int64_t padTop, int64_t padLeft,
                                           int64_t kh, int64_t kw, int64_t f, int64_t oh,
                                           int64_t ow, int64_t sh, int64_t sw, int64_t dh,
                                           int64_t dw) {
  // Padding behind: as far as the last window reaches (oneDNN's sizes must match).
  const int64_t padBottom = std::max<int64_t>(0, (oh - 1) * sh + (kh - 1) * dh + 1 - h - padTop);
  const int64_t padRight = std::max<int64_t>(0, (ow - 1) * sw + (kw - 1) * dw + 1 - w - padLeft);
  if ((h + padTop + padBottom - (kh - 1) * dh - 1) / sh + 1 != oh ||
      (w + padLeft + padRight - (kw - 1) * dw - 1) / sw + 1 != ow)
    return std::nullopt;
  Convolution conv;
  conv.src = memory::desc({n, c, h, w}, memory::data_type::f32, memory::format_tag::nhwc);
  conv.weights = memory::desc({f, c, kh, kw}, memory::data_type::f32, memory::format_tag::hwio);
  conv.dst = memory::desc({n, f, oh, ow}, memory::data_type::f32, memory::format_tag::nhwc);
  auto any = [](memory::dims dims) {
    return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
  };
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, any({n, c, h, w}),
      any({f, c, kh, kw}), any({n, f, oh, ow}), {sh, sw}, {dh - 1, dw - 1}, {padTop, padLeft},
      {padBottom, padRight});
  // Accumulating into an output in the program's layout: a sum post-op; into a
  // blocked one, the reorder back adds instead.
  dnnl::primitive_attr attr;
  dnnl::convolution_forward::primitive_desc pd(desc, st.engine);
  if (pd.dst_desc() == conv.dst && accumulate) {
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    attr.set_post_ops(sum);
    pd = dnnl::convolution_forward::primitive_desc(desc, attr, st.engine);
  }
  conv.primitive = dnnl::convolution_forward(pd);
  if (pd.src_desc() != conv.src) {
    conv.blockedSrc.emplace(pd.src_desc(), st.engine);
    conv.toSrc.emplace(dnnl::reorder::primitive_desc(st.engine, conv.src, st.engine, pd.src_desc()));
  }
  if (pd.weights_desc() != conv.weights) {
    conv.blockedWeights.emplace(pd.weights_desc(), st.engine);
    conv.toWeights.emplace(
        dnnl::reorder::primitive_desc(st.engine, conv.weights, st.engine, pd.weights_desc()));
  }
  if (pd.dst_desc() != conv.dst) {
    conv.blockedDst.emplace(pd.dst_desc(), st.engine);
    dnnl::primitive_attr add;
    if (accumulate) {
      dnnl::post_ops sum;
      sum.append_sum(1.0f);
      add.set_post_ops(sum);
    }
    conv.fromDst.emplace(
        dnnl::reorder::primitive_desc(st.engine, pd.dst_desc(), st.engine, conv.dst, add));
  }
  return conv;
}

} // namespace

bool dnnlConvolution(bool accumulate, int64_t n, int64_t h, int64_t w, int64_t c, int64_t padTop,
                     int64_t padLeft, int64_t kh, int64_t kw, int64_t f, int64_t oh, int64_t ow,
                     int64_t sh, int64_t sw, int64_t dh, int64_t dw, const float *x, const float *k,
                     float *y) {
  State &st = state();
  try {
    const std::array<int64_t, 16> shape{accumulate, n,  h,  w,  c,  padTop, padLeft, kh,
                                        kw,         f,  oh, ow, sh, sw,     dh,      dw};
    auto found = st.convolutions.find(shape);
    if (found == st.convolutions.end())
      found = st.convolutions
                  .emplace(shape, makeConvolution(st, accumulate, n, h, w, c, padTop, padLeft,
                                                  kh, kw, f, oh, ow, sh, sw, dh, dw))
                  .first;
    if (!found->second)
      return false;
    Convolution &conv = *found->second;
    memory src(conv.src, st.engine, const_cast<float *>(x));
    memory weights(conv.weights, st.engine, const_cast<float *>(k));
    memory dst(conv.dst, st.engine, y);
    if (conv.toSrc)
      conv.toSrc->execute(st.stream, src, *conv.blockedSrc);
    if (conv.toWeights)
      conv.toWeights->execute(st.stream, weights, *conv.blockedWeights);
    conv.primitive.execute(st.stream, {{DNNL_ARG_SRC, conv.blockedSrc ? *conv.blockedSrc : src},
                                       {DNNL_ARG_WEIGHTS, conv.blockedWeights ? *conv.blockedWeights : weights},
                                       {DNNL_ARG_DST, conv.blockedDst ? *conv.blockedDst : dst}});
    if (conv.fromDst)
      conv.fromDst->execute(st.stream, *conv.blockedDst, dst);
    st.stream.wait();
    return true;
  } catch (const dnnl::error &error) {
    fatal("oneDNN failed on a %lld x %lld x %lld x %lld convolution with %lld x %lld x %lld "
          "filters: %s (status %d)",
          (long long)n, (long long)h, (long long)w, (long long)c, (long long)kh, (long long)kw,
          (long long)f, error.what(), int(error.status));
  }
}

} // namespace shardrt
