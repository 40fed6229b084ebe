#pragma once
// SimFaultPlan: the failures a test armed on a SimDisk (SimDisk::fail_next), per kind of request.
// Each submitted request of a kind counts against that kind's armed faults; the first whose skip
// count has run out fires (its errno becomes the request's result) and is gone. Armed faults
// belong to the test, not to the simulated process: a crash keeps them.
//
// Threading: one thread, like the SimDisk that owns it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/assert.h"
#include "io/disk.h"

namespace uringmq::io {

class SimFaultPlan {
 public:
  // The (skip+1)-th request of `kind` counted from now on fails with errno_value.
  void arm(OpKind kind, int errno_value, uint32_t skip) {
    UMQ_ASSERT(errno_value > 0);
    armed_[static_cast<size_t>(kind)].push_back(Armed{skip, errno_value});
  }

  // Counts one submitted request of `kind` against the armed faults; returns the errno it must
  // fail with, or 0.
  int take(OpKind kind) {
    std::vector<Armed>& armed = armed_[static_cast<size_t>(kind)];
    int fire = 0;
    for (auto it = armed.begin(); it != armed.end();) {
      if (it->skip == 0 && fire == 0) {
        fire = it->errno_value;
        it = armed.erase(it);
        continue;
      }
      if (it->skip > 0) it->skip--;
      ++it;
    }
    return fire;
  }

 private:
  struct Armed {
    uint32_t skip = 0;
    int errno_value = 0;
  };
  std::array<std::vector<Armed>, 5> armed_;  // by OpKind
};

}  // namespace uringmq::io
