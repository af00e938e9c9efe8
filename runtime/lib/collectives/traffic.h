// What the compiled steps' collectives move, counted so that a run can be held against
// `shardc --report`'s communication plan (Report/CommunicationPlan.cpp): per kind, the
// calls, their messages' bytes and the bytes this rank sent, each as the report defines
// it. Only while counting is on, which the driver turns on around each train step: its
// own collectives (the step's health, evaluations, checkpoints, the summary) and the
// evaluation steps stay out.
#ifndef SHARDRT_LIB_TRAFFIC_H
#define SHARDRT_LIB_TRAFFIC_H

#include <cstdint>

namespace shardrt {

/// The kinds counted: the report's four collectives, and a pipeline's sends between
/// stages (which the report plans apart, per microbatch).
enum class TrafficKind { AllReduce, AllGather, ReduceScatter, AllToAll, Send };
constexpr int kTrafficKinds = 5;

/// The name of a kind in the summary, as the report's kinds begin ("all_reduce sum").
const char *trafficKindName(TrafficKind kind);

struct Traffic {
  int64_t calls = 0;
  int64_t bytes = 0;     // the messages': a collective's input on this rank, or a send
  int64_t sentBytes = 0; // what this rank sends of them
};

struct TrafficCounts {
  int64_t steps = 0; // counted steps
  Traffic kinds[kTrafficKinds];
};

/// Around each train step.
void startCountingTraffic();
void stopCountingTraffic();

/// One collective of `kind` whose message is `bytes`, over a group of `groupSize`
/// ranks: the report's bytes for it, and what a rank sends by a ring (an all_reduce
/// 2(n-1)/n of them, a reduce_scatter or all_to_all (n-1)/n, an all_gather n-1 times
/// its input; a send all of them). Over one rank it moves nothing and is not counted.
void countTraffic(TrafficKind kind, int64_t bytes, int groupSize);

const TrafficCounts &trafficCounts();

} // namespace shardrt

#endif // SHARDRT_LIB_TRAFFIC_H
