#pragma once
// TestLedger: the caller side of StoreCalls for tests that call the broker core without a
// reactor: every caller alive (or none, for calls whose answers nobody reads), no accounts
// kept, and the ops started and ended counted, so a test can show each op ends once.

#include <cstdint>

#include "net/core/store_calls.h"

namespace uringmq::testing {

class TestLedger final : public net::CallerLedger {
 public:
  explicit TestLedger(bool callers_alive = true) : callers_alive_(callers_alive) {}
  bool alive(const net::Ticket&) const override { return callers_alive_; }
  void op_started(const net::Ticket&) override { started++; }
  void op_ended(const net::Ticket&) override { ended++; }
  void reserve(const net::Ticket&, uint64_t, uint64_t) override {}

  int started = 0;
  int ended = 0;

 private:
  bool callers_alive_;
};

}  // namespace uringmq::testing
