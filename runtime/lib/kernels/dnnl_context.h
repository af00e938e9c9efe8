// What the runtime's oneDNN primitives share (dnnl_matmul.cpp, dnnl_conv.cpp): one CPU
// engine and stream, the attribute that adds a result to its output, and oneDNN's
// failures reported as the runtime's.
#ifndef SHARDRT_LIB_DNNL_CONTEXT_H
#define SHARDRT_LIB_DNNL_CONTEXT_H

#include "mesh/mesh.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <string>

namespace shardrt {

struct DnnlContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};

inline DnnlContext &dnnlContext() {
  static DnnlContext context;
  return context;
}

/// A primitive's attributes: its result added to what its output holds when
/// `accumulate`, else written over it.
inline dnnl::primitive_attr addingToOutput(bool accumulate) {
  dnnl::primitive_attr attr;
  if (accumulate) {
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    attr.set_post_ops(sum);
  }
  return attr;
}

/// Runs `compute`; a oneDNN failure (an exception, which must not cross the generated
/// code that called the kernel) stops the run with `describe()` (what failed).
template <typename Compute, typename Describe>
auto reportingFailures(Compute compute, Describe describe) {
  try {
    return compute();
  } catch (const dnnl::error &error) {
    fatal("oneDNN failed on %s: %s (status %d)", std::string(describe()).c_str(), error.what(),
          int(error.status));
  }
}

} // namespace shardrt

#endif // SHARDRT_LIB_DNNL_CONTEXT_H
