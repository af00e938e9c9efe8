// shardrt-test-mesh NAME=SIZE...: sets the mesh up and prints every rank's coordinates.
//
// Rank 0 gathers and prints `rank R: NAME C, ...` for every rank in rank order, so the
// output does not depend on process scheduling, then `mesh: N ranks`. Each rank checks
// its coordinates against the row-major formula (last axis fastest). With the wrong
// number of ranks, shardrt_init itself reports the error and exits.
#include "shardrt/shardrt.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    size_t eq = arg.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "usage: %s NAME=SIZE...\n", argv[0]);
      return 2;
    }
    names.push_back(arg.substr(0, eq));
    sizes.push_back(std::atoll(arg.c_str() + eq + 1));
  }
  std::vector<const char *> namePointers;
  for (const std::string &name : names)
    namePointers.push_back(name.c_str());
  shardrt_init(&argc, &argv, static_cast<int>(sizes.size()), sizes.data(), namePointers.data());

  const int rank = shardrt_rank(), numRanks = shardrt_num_ranks();
  int failures = 0;
  std::vector<int64_t> coords(sizes.size());
  int64_t stride = 1;
  for (int a = static_cast<int>(sizes.size()) - 1; a >= 0; --a) {
    coords[a] = shardrt_mesh_coord(a);
    if (coords[a] != rank / stride % sizes[a] || shardrt_mesh_axis_size(a) != sizes[a]) {
      std::fprintf(stderr, "rank %d: wrong coordinate on axis %d\n", rank, a);
      ++failures;
    }
    stride *= sizes[a];
  }

  std::vector<int64_t> all(coords.size() * numRanks);
  MPI_Gather(coords.data(), static_cast<int>(coords.size()), MPI_INT64_T, all.data(),
             static_cast<int>(coords.size()), MPI_INT64_T, 0, MPI_COMM_WORLD);
  int totalFailures = 0;
  MPI_Reduce(&failures, &totalFailures, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    for (int r = 0; r < numRanks; ++r) {
      std::printf("rank %d:", r);
      for (size_t a = 0; a < sizes.size(); ++a)
        std::printf("%s %s %lld", a ? "," : "", names[a].c_str(),
                    static_cast<long long>(all[r * sizes.size() + a]));
      std::printf("\n");
    }
    std::printf("mesh: %d ranks, %d failures\n", numRanks, totalFailures);
  }
  MPI_Bcast(&totalFailures, 1, MPI_INT, 0, MPI_COMM_WORLD);
  shardrt_finalize();
  return totalFailures == 0 ? 0 : 1;
}
