// A pipeline's point-to-point messages between stages (shardrt.h): each send copies its
// data to a staging buffer and leaves nonblocking, so that the stage computes on while
// the activation travels; its buffer goes back to a pool once the send has completed.
// Receives wait in the watchdog, as collectives do.
#include "collectives.h"
#include "mesh/mesh.h"
#include "traffic.h"
#include "watchdog.h"

#include "shardrt/shardrt.h"

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

using namespace shardrt;

namespace {

struct Send {
  MPI_Request request;
  std::unique_ptr<char[]> staging;
  int64_t bytes;
};

std::vector<Send> sends;
std::multimap<int64_t, std::unique_ptr<char[]>> pool; // staging buffers by size
double receiveSeconds = 0; // waited in receives: the bubble, and the messages' travel
int64_t receives = 0;

std::unique_ptr<char[]> stagingOf(int64_t bytes) {
  auto found = pool.find(bytes);
  if (found == pool.end())
    return std::unique_ptr<char[]>(new char[bytes]);
  std::unique_ptr<char[]> buffer = std::move(found->second);
  pool.erase(found);
  return buffer;
}

void checkMessage(const char *caller, int64_t bytes, int64_t peer, const Group &group) {
  if (bytes < 0 || bytes > INT32_MAX)
    fatal("%s: a message of %lld bytes (MPI counts in int)", caller, static_cast<long long>(bytes));
  if (peer < 0 || peer >= group.size || peer == group.index)
    fatal("%s: peer %lld in a group of %d ranks where this rank is %d", caller,
          static_cast<long long>(peer), group.size, group.index);
}

} // namespace

void shardrt_send(uint32_t axes, const void *data, int64_t bytes, int64_t peer, int tag) {
  Group group = groupOver(axes, "shardrt_send");
  checkMessage("shardrt_send", bytes, peer, group);
  countTraffic(TrafficKind::Send, bytes, group.size);
  Send send{MPI_REQUEST_NULL, stagingOf(bytes), bytes};
  std::memcpy(send.staging.get(), data, bytes);
  MPI_Isend(send.staging.get(), static_cast<int>(bytes), MPI_BYTE, static_cast<int>(peer), tag,
            group.comm, &send.request);
  sends.push_back(std::move(send));
}

void shardrt_recv(uint32_t axes, void *data, int64_t bytes, int64_t peer, int tag) {
  Group group = groupOver(axes, "shardrt_recv");
  checkMessage("shardrt_recv", bytes, peer, group);
  arrive("pipeline receive", axes, /*world=*/false, bytes / 4);
  MPI_Request request;
  const auto start = std::chrono::steady_clock::now();
  MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, static_cast<int>(peer), tag, group.comm,
            &request);
  await(1, &request);
  receiveSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++receives;
}

void shardrt_wait_sends(void) {
  if (sends.empty())
    return;
  std::vector<MPI_Request> requests;
  for (Send &send : sends)
    requests.push_back(send.request);
  arrive("pipeline sends", 0, /*world=*/false, -1);
  await(static_cast<int>(requests.size()), requests.data());
  for (Send &send : sends)
    pool.emplace(send.bytes, std::move(send.staging));
  sends.clear();
}

namespace shardrt {
double pipelineReceiveSeconds() { return receiveSeconds; }
int64_t pipelineReceives() { return receives; }
} // namespace shardrt

void shardrt_make_communicators(void) {
  const uint32_t all = (1u << shardrt_mesh_num_axes()) - 1;
  for (uint32_t axes = 1; axes <= all; ++axes)
    groupOver(axes, "shardrt_make_communicators");
}
