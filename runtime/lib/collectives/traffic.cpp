// The collectives' traffic, counted (traffic.h).
#include "traffic.h"

namespace shardrt {
namespace {

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
  // The report's formulas (sentPerRank), integer division included, so that the
  // figures compare exactly.
  const int64_t n = groupSize;
  int64_t sent = bytes;
  switch (kind) {
  case TrafficKind::AllReduce:
    sent = bytes * (n - 1) / n * 2;
    break;
  case TrafficKind::AllGather:
    sent = bytes * (n - 1);
    break;
  case TrafficKind::ReduceScatter:
  case TrafficKind::AllToAll:
    sent = bytes * (n - 1) / n;
    break;
  case TrafficKind::Send:
    break;
  }
  Traffic &t = counts.kinds[int(kind)];
  ++t.calls;
  t.bytes += bytes;
  t.sentBytes += sent;
}

const TrafficCounts &trafficCounts() { return counts; }

} // namespace shardrt
