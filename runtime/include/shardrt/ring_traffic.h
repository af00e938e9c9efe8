//===- ring_traffic.h - the bytes a rank sends in a collective -----------===//
//
// One formula for the compiler's communication plan (Report/CommunicationPlan.cpp)
// and the runtime's count of what a run sends (collectives/traffic.cpp), so that the
// two compare exactly: by ring algorithms over n ranks, an all-reduce of a B-byte
// message sends 2(n-1)/n B, a reduce-scatter or all-to-all (n-1)/n B (all blocks
// but its own), an all-gather its B-byte input to n-1 ranks. Saturating, as the
// report's byte counts are.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDRT_RING_TRAFFIC_H
#define SHARDRT_RING_TRAFFIC_H

#include <cstdint>

namespace shardrt {

enum class RingCollective { AllReduce, AllGather, ReduceScatter, AllToAll };

inline int64_t ringSentBytes(RingCollective kind, int64_t bytes, int64_t n) {
  auto times = [](int64_t a, int64_t b) {
    int64_t product;
    return __builtin_mul_overflow(a, b, &product) ? INT64_MAX : product;
  };
  if (kind == RingCollective::AllGather)
    return times(bytes, n - 1);
  const int64_t share = times(bytes, n - 1) / n;
  return kind == RingCollective::AllReduce ? times(share, 2) : share;
}

} // namespace shardrt

#endif // SHARDRT_RING_TRAFFIC_H
