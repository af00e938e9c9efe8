// What a run chooses about the collectives (collectives.cpp).
#ifndef SHARDRT_LIB_COLLECTIVES_H
#define SHARDRT_LIB_COLLECTIVES_H

namespace shardrt {

/// --reduce-precision bf16: the parameters' gradients are reduced in bfloat16
/// (shardrt_all_reduce_gradient_f32, shardrt_reduce_scatter_gradient_f32).
void setGradientSyncsInBf16(bool enabled);

} // namespace shardrt

#endif // SHARDRT_LIB_COLLECTIVES_H
