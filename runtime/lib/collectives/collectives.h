// What collectives.cpp shares with the gradients' reductions (gradients.cpp).
#ifndef SHARDRT_LIB_COLLECTIVES_H
#define SHARDRT_LIB_COLLECTIVES_H

#include "element.h"

#include "shardrt/scratch_regions.h"

#include <cstddef>
#include <cstdint>

namespace shardrt {

/// `shape` viewed around dimension `d`. Stops on a dimension out of range or a negative
/// size; `role` names `d` in the message.
DimView viewAround(int ndim, const int64_t *shape, int d, const char *caller, const char *role);

/// Stops unless `view.dim` divides into `groupSize` blocks.
void requireDivisible(const DimView &view, int groupSize, int d, const char *caller);

void copyUnlessSame(void *out, const void *in, size_t bytes);

/// The plain entries' all-reduce, all-gather and reduce-scatter (shardrt.h), `caller`
/// naming the entry in messages.
void allReduce(const char *caller, Scalar scalar, uint32_t axes, const void *in, void *out,
               int64_t count, shardrt_reduction op);
void allGather(const char *caller, Scalar scalar, uint32_t axes, const void *in, void *out,
               int ndim, const int64_t *localShape, int gatherDim);
void reduceScatter(const char *caller, Scalar scalar, uint32_t axes, const void *in, void *out,
                   int ndim, const int64_t *inShape, int scatterDim, shardrt_reduction op);

/// Moves the collectives in flight on (the gradients' reductions under
/// --overlap-gradients, the parameters' gathers under --prefetch-weights; gradients.cpp)
/// without waiting; the kernels call it before each product.
void progressGradients();
/// Seconds this rank has waited in a pipeline's receives (pipeline.cpp), and how many.
double pipelineReceiveSeconds();
int64_t pipelineReceives();

} // namespace shardrt

#endif // SHARDRT_LIB_COLLECTIVES_H
