#pragma once
// The engine's view of the Store: the public API (include/uringmq/store.h) plus what only the
// engine, the broker and the tools use (internal topics and groups) and the engine headers the
// Store's options come from.

#include <string_view>

#include <uringmq/store.h>

#include "engine/log/commit_log.h"
#include "engine/queues/consume_queue.h"
#include "io/fs_space.h"
#include "io/status.h"
#include "io/waker.h"
#include "sched/delay_levels.h"

namespace uringmq {

// The marker file in a store's data directory (storePathRootDir) saying its logs may hold
// foreign records (a Java master's, without uringmq's record CRC): created when a replica
// opens, kept for good, so a promoted replica (restarted as a master) still recovers, scrubs,
// dispatches and verifies its replicated records (engine/README.md, "Replica").
inline constexpr std::string_view kForeignRecordsMarker = "foreign_records";

// Where a delayed message that cannot be delivered goes (operators read it): each shard parks into
// the first queue of this topic that it owns; PARK_LEVEL, REAL_TOPIC, REAL_QID and PARK_REASON
// say what it was.
inline constexpr std::string_view kParkedScheduleTopic = "SCHEDULE_PARKED_XXXX";

// Topics the store keeps for itself: the delay levels' SCHEDULE_TOPIC_XXXX, the parked topic,
// the timer wheel's rmq_sys_wheel_timer and the transactional half and op topics. The broker
// refuses client SENDs and PULLs of them (net/core/README.md, "Internal topics"); the store's
// own deliveries and the offline tools use them. One list: a new internal topic is added here.
// %RETRY% and %DLQ% topics are not internal (clients use them).
bool is_internal_topic(std::string_view topic);
// The broker's POP journal (net/core/pop_journal.h): one queue (0) per shard, and the group
// whose committed offset in it is the oldest record a restart replays.
inline constexpr std::string_view kPopJournalTopic = "rmq_sys_pop_journal";
inline constexpr std::string_view kPopJournalGroup = "%POP_JOURNAL%";
// Consumer groups the store keeps progress and timer cancels under (in the consumer-offsets
// table): delay-level progress, timer-slot progress and timer cancels. The broker refuses client
// offset commits for them.
inline constexpr std::string_view kScheduleProgressGroup = "%SCHEDULE_PROGRESS%";
inline constexpr std::string_view kTimerProgressGroup = "%TIMER_PROGRESS%";
inline constexpr std::string_view kTimerCancelGroup = "%TIMER_CANCEL%";
// The transactional half queue's consumed point (its oldest half not ended) and the op queue's
// (all of it): retention may delete what is below them.
inline constexpr std::string_view kTransactionProgressGroup = "%TRANSACTION_PROGRESS%";
bool is_internal_group(std::string_view group);

}  // namespace uringmq
