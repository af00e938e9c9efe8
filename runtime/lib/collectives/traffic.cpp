// The collectives' traffic, counted (traffic.h).
#include "traffic.h"
#include "shardrt/ring_traffic.h"

namespace shardrt {
namespace {

// A collective's kind is its RingCollective.
static_assert(int(TrafficKind::AllReduce) == int(RingCollective::AllReduce) &&
              int(TrafficKind::AllGather) == int(RingCollective::AllGather) &&
              int(TrafficKind::ReduceScatter) == int(RingCollective::ReduceScatter) &&
              int(TrafficKind::AllToAll) == int(RingCollective::AllToAll));

bool counting = false;
TrafficCounts counts;

} // namespace

const char *trafficKindName(TrafficKind kind) {
  switch (kind) {
  case TrafficKind::AllReduce:
    return "all_reduce";
  case TrafficKind::AllGather:
    return "all_gather";
  case TrafficKind::ReduceScatter:
    return "reduce_scatter";
  case TrafficKind::AllToAll:
    return "all_to_all";
  case TrafficKind::Send:
    return "send";
  }
  return "?";
}

void startCountingTraffic() {
  counting = true;
  ++counts.steps;
}

void stopCountingTraffic() { counting = false; }

void countTraffic(TrafficKind kind, int64_t bytes, int groupSize) {
  if (!counting || groupSize <= 1)
    return;
  // The report's formula (shardrt/ring_traffic.h), so that the figures compare exactly.
  const int64_t sent = kind == TrafficKind::Send
                           ? bytes
                           : ringSentBytes(static_cast<RingCollective>(kind), bytes, groupSize);
  Traffic &t = counts.kinds[int(kind)];
  ++t.calls;
  t.bytes += bytes;
  t.sentBytes += sent;
}

const TrafficCounts &trafficCounts() { return counts; }

} // namespace shardrt
