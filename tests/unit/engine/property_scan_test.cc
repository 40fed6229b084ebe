// Goal: scan_properties (engine/log/property_scan.h), the append path's and recovery's one pass
// over a message's properties, answers for every name it keeps exactly what find_property answers
// (the first well-formed entry of the name counts), on tricky strings (empty values, empty names,
// names that are prefixes or extensions of others, leading/trailing/doubled \x02, values holding
// \x01) and on many generated ones; its timer_reserved flag matches for_each_property; the struct
// overloads of parse_timer_request, timer_cancel_key and index_key_count agree with the string
// ones.
// Method: differential checks against find_property / for_each_property; generated strings come
// from a fixed-seed generator over name fragments and separators.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "engine/delivery/timer_message.h"
#include "engine/log/properties.h"
#include "engine/log/property_names.h"
#include "engine/log/property_scan.h"
#include "engine/queues/index_store.h"

namespace uringmq::engine {
namespace {

struct Field {
  std::string_view name;
  std::optional<std::string_view> PropertyScan::*slot;
};

const Field kFields[] = {
    {kPropertyDelayTimeLevel, &PropertyScan::delay},
    {kPropertyTimerDelaySec, &PropertyScan::timer_delay_sec},
    {kPropertyTimerDelayMs, &PropertyScan::timer_delay_ms},
    {kPropertyTimerDeliverMs, &PropertyScan::timer_deliver_ms},
    {kPropertyStartDeliverTime, &PropertyScan::start_deliver_time},
    {kPropertyTimerOutMs, &PropertyScan::timer_out_ms},
    {kPropertyTimerCancelKey, &PropertyScan::timer_cancel_key},
    {kPropertyTimerDelUniqKey, &PropertyScan::timer_del_uniq_key},
    {kPropertyUniqClientMessageIdKeyidx, &PropertyScan::uniq_key},
    {kPropertyKeys, &PropertyScan::keys},
    {kPropertyTags, &PropertyScan::tags},
    {kPropertyTransactionPrepared, &PropertyScan::transaction_prepared},
    {kPropertyDeliveryMarker, &PropertyScan::delivery_marker},
    {kPropertyTimerPutMs, &PropertyScan::timer_put_ms},
    {kPropertyTransactionEnded, &PropertyScan::transaction_ended},
};

bool reserved_by_for_each(std::string_view encoded) {
  bool reserved = false;
  for_each_property(encoded, [&](std::string_view name, std::string_view) {
    reserved |= is_timer_written_property(name);
  });
  return reserved;
}

// Every kept name: same value and the same position in `encoded` (the first entry) as
// find_property; the reserved flag as for_each_property sees it.
void expect_same_as_find(std::string_view encoded) {
  const PropertyScan scan = scan_properties(encoded);
  for (const Field& f : kFields) {
    const std::optional<std::string_view> want = find_property(encoded, f.name);
    const std::optional<std::string_view>& got = scan.*f.slot;
    ASSERT_EQ(got.has_value(), want.has_value())
        << f.name << " in " << testing::PrintToString(std::string(encoded));
    if (!want) continue;
    EXPECT_EQ(*got, *want) << f.name;
    EXPECT_EQ(got->data(), want->data()) << f.name << ": not the same entry";
  }
  EXPECT_EQ(scan.timer_reserved, reserved_by_for_each(encoded))
      << testing::PrintToString(std::string(encoded));
}

TEST(PropertyScan, EmptyStringHoldsNothing) {
  const PropertyScan scan = scan_properties("");
  for (const Field& f : kFields) EXPECT_FALSE((scan.*f.slot).has_value()) << f.name;
  EXPECT_FALSE(scan.timer_reserved);
}

TEST(PropertyScan, FindsEachNameItKeeps) {
  std::string s;
  for (const Field& f : kFields) append_property(s, f.name, std::string(f.name) + "-v");
  const PropertyScan scan = scan_properties(s);
  for (const Field& f : kFields) {
    ASSERT_TRUE((scan.*f.slot).has_value()) << f.name;
    EXPECT_EQ(*(scan.*f.slot), std::string(f.name) + "-v");
  }
  expect_same_as_find(s);
}

TEST(PropertyScan, TrickyStringsAgreeWithFindProperty) {
  using namespace std::string_literals;
  const std::string cases[] = {
      "TAGS\x01\x02TAGS\x01"
      "b"s,                                    // an empty value is skipped
      "TAGS\x01"s,                             // only an empty value
      "\x01v\x02TAGS\x01t"s,                   // an empty name
      "TAG\x01x\x02TAGSX\x01y\x02TAGS\x01z"s,  // a prefix and an extension
      "KEY\x01x\x02KEYS_\x01y\x02KEYS\x01z"s,  // the same for KEYS
      "TAGS\x01"
      "a\x02"s,  // a trailing \x02 (Java)
      "\x02\x02TAGS\x01"
      "a\x02\x02KEYS\x01k\x02"s,  // leading and doubled \x02
      "KEYS\x01"
      "a\x01"
      "b\x02TAGS\x01t"s,     // a value holding \x01
      "TAGS\x02TAGS\x01t"s,  // a name without \x01
      "TAGS\x01"
      "first\x02TAGS\x01second"s,  // the first entry counts
      "DELAY\x01\x02"
      "DELAY\x01"
      "3"s,  // empty, then a value
      "__STARTDELIVERTIME\x01"
      "5\x02__STARTDELIVERTIMEX\x01"
      "6"s,  // the longest name, and one more
      "TIMER_DEL_UNIQKEY_LONGER_THAN_ANY\x01x\x02TIMER_DEL_UNIQKEY\x01t+u"s,
      "REAL_TOPIC\x01x"s,              // reserved
      "REAL_TOPIC\x01\x02TAGS\x01t"s,  // reserved, but malformed: not
      "__UMQ_DLV\x01"
      "1:2\x02TIMER_OUT_MS\x01"
      "9"s,                         // reserved and a timer copy
      "\x01\x02\x01\x01\x02\x02"s,  // separators only
      "TAGS"s,                      // a bare name
      "\x01TAGS\x01t"s,             // \x01 first: an empty name
      "UNIQ_KEY\x01u\x02KEYS\x01"
      "a b  c\x02TRAN_MSG\x01true"s,
  };
  for (const std::string& c : cases) expect_same_as_find(c);
}

// Strings built from the kept names, their prefixes and extensions, short values and
// separators, in every arrangement a fixed-seed generator reaches.
TEST(PropertyScan, GeneratedStringsAgreeWithFindProperty) {
  std::vector<std::string> pieces = {"\x01", "\x02",     "\x02",       "v", "1",
                                     "x y",  "REAL_QID", "__UMQ_TPUT", "Z"};
  for (const Field& f : kFields) {
    pieces.emplace_back(f.name);
    pieces.emplace_back(f.name.substr(0, f.name.size() - 1));
    pieces.push_back(std::string(f.name) + "_");
  }
  std::mt19937 random(20261201);
  for (int round = 0; round < 20000; round++) {
    std::string s;
    const int n = static_cast<int>(random() % 12);
    for (int i = 0; i < n; i++) s += pieces[random() % pieces.size()];
    expect_same_as_find(s);
    if (testing::Test::HasFailure()) break;
  }
}

TEST(PropertyScan, StructOverloadsAgreeWithStringOnes) {
  using namespace std::string_literals;
  const std::string cases[] = {
      "TIMER_DELAY_SEC\x01"
      "5\x02TIMER_DELAY_MS\x01"
      "7"s,
      "TIMER_DELAY_MS\x01\x02TIMER_DELAY_MS\x01"
      "70"s,
      "TIMER_DELIVER_MS\x01"
      "abc"s,
      "__STARTDELIVERTIME\x01"
      "2000\x02REAL_TOPIC\x01t"s,
      "TIMER_OUT_MS\x01"
      "2000\x02TIMER_DELAY_SEC\x01"
      "1"s,
      "__UMQ_CANCEL_KEY\x01k1\x02TIMER_DEL_UNIQKEY\x01t+u"s,
      "TIMER_DEL_UNIQKEY\x01t+u\x02__UMQ_CANCEL_KEY\x01\x02"s,
      "TIMER_DEL_UNIQKEY\x01t+"s,
      "UNIQ_KEY\x01u\x02KEYS\x01"
      "a  b c\x02KEYS\x01z"s,
      "UNIQ_KEY\x01\x02KEYS\x01 "s,
  };
  for (const std::string& c : cases) {
    const PropertyScan scan = scan_properties(c);
    for (int64_t now : {int64_t{1000}, int64_t{3000}}) {
      const TimerRequest a = parse_timer_request(c, now, 10'000);
      const TimerRequest b = parse_timer_request(scan, now, 10'000);
      EXPECT_EQ(a.kind, b.kind);
      EXPECT_EQ(a.deliver_ms, b.deliver_ms);
      EXPECT_EQ(a.reserved, b.reserved);
    }
    EXPECT_EQ(timer_cancel_key(c), timer_cancel_key(scan));
    EXPECT_EQ(index_key_count(c), index_key_count(scan));
  }
  // The values the cases above pin (so that a wrong wrapper cannot pass by agreeing with itself).
  EXPECT_EQ(parse_timer_request(cases[0], 1000, 10'000).deliver_ms, 6000);
  EXPECT_EQ(parse_timer_request(cases[1], 1000, 10'000).deliver_ms, 1070);
  EXPECT_EQ(parse_timer_request(cases[4], 1000, 10'000).kind, TimerRequest::Kind::none);
  EXPECT_TRUE(parse_timer_request(cases[3], 1000, 10'000).reserved);
  EXPECT_EQ(timer_cancel_key(cases[5]), "k1");
  EXPECT_EQ(timer_cancel_key(cases[6]), "u");
  EXPECT_EQ(timer_cancel_key(cases[7]), std::nullopt);
  EXPECT_EQ(index_key_count(cases[8]), 4u);
  EXPECT_EQ(index_key_count(cases[9]), 0u);
}

}  // namespace
}  // namespace uringmq::engine
