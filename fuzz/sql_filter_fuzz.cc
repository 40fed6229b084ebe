// Fuzz target: the SQL92 selector compiler and evaluator (engine/queues/sql_filter.h) on
// arbitrary text, as consumers send it (CHECK_CLIENT_CONFIG, heartbeats, pulls). The input is
// split at its first \x00 into (expression, property string); without a \x00 it is the
// expression alone, evaluated against an empty property string. Invariants (abort on violation):
//  - compile() returns a filter or invalid_argument whose message starts "Invalid
//    MessageSelector." and names a position (or the length limit);
//  - a compiled program stays within kSqlMaxNodes, and matches() on the properties gives the
//    same answer twice (no hidden state);
//  - compiling the filter's own expression again gives the same answer on the properties.
// Built two ways (fuzz/README.md): as a libFuzzer binary, and #included by
// tests/unit/fuzz_replay/sql_filter_fuzz_replay_test.cc with URINGMQ_FUZZ_NO_ENTRY defined.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/queues/sql_filter.h"
#include "io/assert.h"

namespace uringmq::fuzz {

inline int sql_filter_fuzz_one(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string_view expression = text;
  std::string_view properties;
  if (size_t zero = text.find('\0'); zero != std::string_view::npos) {
    expression = text.substr(0, zero);
    properties = text.substr(zero + 1);
  }
  io::Result<engine::SqlFilter> filter = engine::SqlFilter::compile(expression);
  if (!filter.is_ok()) {
    const std::string& message = filter.status().message();
    UMQ_ASSERT(filter.status().code() == io::Code::invalid_argument);
    UMQ_ASSERT(message.rfind("Invalid MessageSelector. ", 0) == 0);
    UMQ_ASSERT(message.find("position") != std::string::npos ||
               expression.size() > engine::kSqlMaxExpressionChars);
    return 0;
  }
  UMQ_ASSERT(filter->node_count() > 0);
  UMQ_ASSERT(filter->node_count() <= engine::kSqlMaxNodes);
  UMQ_ASSERT(filter->expression() == expression);
  const bool matched = filter->matches(properties);
  UMQ_ASSERT(filter->matches(properties) == matched);
  io::Result<engine::SqlFilter> again = engine::SqlFilter::compile(filter->expression());
  UMQ_ASSERT(again.is_ok());
  UMQ_ASSERT(again->matches(properties) == matched);
  return 0;
}

}  // namespace uringmq::fuzz

#ifndef URINGMQ_FUZZ_NO_ENTRY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return uringmq::fuzz::sql_filter_fuzz_one(data, size);
}
#endif
