// Convolutions on oneDNN (dnnl_conv.h). The primitive picks its own (blocked) layouts
// for the input, filters and output; reorders convert from and to the program's NHWC
// and HWCF around it. With many input channels it beats im2col + OpenBLAS even so
// (kernels.cpp says where; bench/kernels measures it). A primitive, its reorders and its
// blocked buffers are made once per shape.
#include "dnnl_conv.h"
#include "dnnl_context.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string>

namespace shardrt {
namespace {

using dnnl::memory;

/// An operand in the program's layout and, where the primitive wants another, a
/// buffer in that one with the reorder between them: into it for an input, out of it
/// for the output (adding to the program's when accumulating).
struct Operand {
  memory::desc plain;
  std::optional<memory> blocked;
  std::optional<dnnl::reorder> reorder;

  Operand(const memory::desc &plain, const memory::desc &wanted, bool output, bool accumulate)
      : plain(plain) {
    if (wanted == plain)
      return;
    const dnnl::engine &engine = dnnlContext().engine;
    blocked.emplace(wanted, engine);
    reorder.emplace(output ? dnnl::reorder::primitive_desc(engine, wanted, engine, plain,
                                                           addingToOutput(accumulate))
                           : dnnl::reorder::primitive_desc(engine, plain, engine, wanted));
  }

  /// What the primitive reads for the input at `data`, reordered into its layout.
  memory input(const float *data) {
    memory program(plain, dnnlContext().engine, const_cast<float *>(data));
    if (!blocked)
      return program;
    reorder->execute(dnnlContext().stream, program, *blocked);
    return *blocked;
  }
};

/// One shape's convolution: the primitive and its three operands. Accumulating into an
/// output in the program's layout is the primitive's sum post-op; into a blocked one,
/// the reorder back adds instead.
struct Convolution {
  dnnl::convolution_forward primitive;
  Operand src, weights, dst;
};

std::optional<Convolution> makeConvolution(bool accumulate, int64_t n, int64_t h, int64_t w,
                                           int64_t c, int64_t padTop, int64_t padLeft, int64_t kh,
                                           int64_t kw, int64_t f, int64_t oh, int64_t ow,
                                           int64_t sh, int64_t sw, int64_t dh, int64_t dw) {
  // Padding behind: as far as the last window reaches (oneDNN's sizes must match).
  const int64_t padBottom = std::max<int64_t>(0, (oh - 1) * sh + (kh - 1) * dh + 1 - h - padTop);
  const int64_t padRight = std::max<int64_t>(0, (ow - 1) * sw + (kw - 1) * dw + 1 - w - padLeft);
  if ((h + padTop + padBottom - (kh - 1) * dh - 1) / sh + 1 != oh ||
      (w + padLeft + padRight - (kw - 1) * dw - 1) / sw + 1 != ow)
    return std::nullopt;
  const memory::dims srcDims{n, c, h, w}, weightsDims{f, c, kh, kw}, dstDims{n, f, oh, ow};
  auto any = [](const memory::dims &dims) {
    return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
  };
  const memory::desc dst(dstDims, memory::data_type::f32, memory::format_tag::nhwc);
  const dnnl::engine &engine = dnnlContext().engine;
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training,
                                       dnnl::algorithm::convolution_direct, any(srcDims),
                                       any(weightsDims), any(dstDims), {sh, sw}, {dh - 1, dw - 1},
                                       {padTop, padLeft}, {padBottom, padRight});
  dnnl::convolution_forward::primitive_desc pd(desc, engine);
  if (pd.dst_desc() == dst && accumulate)
    pd = dnnl::convolution_forward::primitive_desc(desc, addingToOutput(true), engine);
  return Convolution{
      dnnl::convolution_forward(pd),
      Operand(memory::desc(srcDims, memory::data_type::f32, memory::format_tag::nhwc),
              pd.src_desc(), /*output=*/false, accumulate),
      Operand(memory::desc(weightsDims, memory::data_type::f32, memory::format_tag::hwio),
              pd.weights_desc(), /*output=*/false, accumulate),
      Operand(dst, pd.dst_desc(), /*output=*/true, accumulate)};
}

/// The convolutions made, by accumulate, n, h, w, c, padTop, padLeft, kh, kw, f, oh, ow,
/// sh, sw, dh, dw (none where oneDNN has none); made after the engine they use, so
/// destroyed before it.
std::map<std::array<int64_t, 16>, std::optional<Convolution>> &convolutions() {
  dnnlContext();
  static std::map<std::array<int64_t, 16>, std::optional<Convolution>> made;
  return made;
}

} // namespace

bool dnnlConvolution(bool accumulate, int64_t n, int64_t h, int64_t w, int64_t c, int64_t padTop,
                     int64_t padLeft, int64_t kh, int64_t kw, int64_t f, int64_t oh, int64_t ow,
                     int64_t sh, int64_t sw, int64_t dh, int64_t dw, const float *x, const float *k,
                     float *y) {
  auto run = [&] {
    const std::array<int64_t, 16> shape{accumulate, n, h,  w,  c,  padTop, padLeft, kh,
                                        kw,         f, oh, ow, sh, sw,     dh,      dw};
    auto &made = convolutions();
    auto found = made.find(shape);
    if (found == made.end())
      found = made.emplace(shape, makeConvolution(accumulate, n, h, w, c, padTop, padLeft, kh, kw,
                                                  f, oh, ow, sh, sw, dh, dw))
                  .first;
    if (!found->second)
      return false;
    Convolution &conv = *found->second;
    DnnlContext &context = dnnlContext();
    memory out(conv.dst.plain, context.engine, y);
    memory written = conv.dst.blocked ? *conv.dst.blocked : out;
    conv.primitive.execute(context.stream, {{DNNL_ARG_SRC, conv.src.input(x)},
                                            {DNNL_ARG_WEIGHTS, conv.weights.input(k)},
                                            {DNNL_ARG_DST, written}});
    if (conv.dst.reorder)
      conv.dst.reorder->execute(context.stream, written, out);
    context.stream.wait();
    return true;
  };
  return reportingFailures(run, [&] {
    return "a " + std::to_string(n) + " x " + std::to_string(h) + " x " + std::to_string(w) +
           " x " + std::to_string(c) + " convolution with " + std::to_string(kh) + " x " +
           std::to_string(kw) + " x " + std::to_string(f) + " filters";
  });
}

} // namespace shardrt
