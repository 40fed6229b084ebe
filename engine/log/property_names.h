#pragma once
// The names of the message properties uringmq reads or writes: RocketMQ's (its
// MessageConst.PROPERTY_* constants, named here after them) and uringmq's own. One definition of
// each; code names a property through these constants, never through a literal (tests may use
// literals: they check the wire). Format of the property string: properties.h.

#include <string_view>

namespace uringmq::engine {

// RocketMQ's properties (MessageConst).
inline constexpr std::string_view kPropertyTags = "TAGS";               // PROPERTY_TAGS
inline constexpr std::string_view kPropertyKeys = "KEYS";               // PROPERTY_KEYS
inline constexpr std::string_view kPropertyWaitStoreMsgOk = "WAIT";     // ..._WAIT_STORE_MSG_OK
inline constexpr std::string_view kPropertyDelayTimeLevel = "DELAY";    // ..._DELAY_TIME_LEVEL
inline constexpr std::string_view kPropertyRetryTopic = "RETRY_TOPIC";  // PROPERTY_RETRY_TOPIC
inline constexpr std::string_view kPropertyRealTopic = "REAL_TOPIC";    // PROPERTY_REAL_TOPIC
inline constexpr std::string_view kPropertyRealQueueId = "REAL_QID";    // ..._REAL_QUEUE_ID
inline constexpr std::string_view kPropertyTransactionPrepared = "TRAN_MSG";  // ..._PREPARED
inline constexpr std::string_view kPropertyProducerGroup = "PGROUP";          // ..._PRODUCER_GROUP
inline constexpr std::string_view kPropertyMinOffset = "MIN_OFFSET";          // PROPERTY_MIN_OFFSET
inline constexpr std::string_view kPropertyMaxOffset = "MAX_OFFSET";          // PROPERTY_MAX_OFFSET
// PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: the client's message id.
inline constexpr std::string_view kPropertyUniqClientMessageIdKeyidx = "UNIQ_KEY";
inline constexpr std::string_view kPropertyOriginMessageId = "ORIGIN_MESSAGE_ID";
// RocketMQ 5's timer (timer_message.h): a deliver time, relative or absolute.
inline constexpr std::string_view kPropertyTimerDelaySec = "TIMER_DELAY_SEC";
inline constexpr std::string_view kPropertyTimerDelayMs = "TIMER_DELAY_MS";
inline constexpr std::string_view kPropertyTimerDeliverMs = "TIMER_DELIVER_MS";
// PROPERTY_STARTDE_LIVER_TIME (sic): Aliyun ONS's absolute deliver time, epoch ms.
inline constexpr std::string_view kPropertyStartDeliverTime = "__STARTDELIVERTIME";
// The deliver time (epoch ms) of a message in the timer topic; also its ConsumeQueue tagsCode.
inline constexpr std::string_view kPropertyTimerOutMs = "TIMER_OUT_MS";
// RocketMQ 5's timer recall: "<topic>+<uniqKey>" names the timed message to cancel.
inline constexpr std::string_view kPropertyTimerDelUniqKey = "TIMER_DEL_UNIQKEY";

// uringmq's own properties, which consumers never receive (is_internal_property, properties.h):
// every name starting "__UMQ_", the record CRC and TIMER_OUT_MS.
inline constexpr std::string_view kInternalPropertyPrefix = "__UMQ_";
// The whole-record check: the last property of a stored record (message_codec.h).
inline constexpr std::string_view kPropertyRecordCrc = "__CRC32#";
// The delivery marker of a held message's copy, "<prefix><a>:<b>" (redelivery.h).
inline constexpr std::string_view kPropertyDeliveryMarker = "__UMQ_DLV";
// The wall ms at which a timed message was first put (cancel applies to earlier puts only). A
// timed message's first record goes without it (its store timestamp is its put time: 25 bytes
// less per timed put); a rolled copy carries it, the first record's store timestamp.
inline constexpr std::string_view kPropertyTimerPutMs = "__UMQ_TPUT";
// A cancel of timed messages by key (timer_message.h).
inline constexpr std::string_view kPropertyTimerCancelKey = "__UMQ_CANCEL_KEY";

// Transactional messages (engine/delivery/transactions.h): RocketMQ's names, and the store's
// outcome marker "<half queue offset>" on every record that ends a half (its committed copy, its
// rollback op record, its discarded copy), which recovery reads back.
inline constexpr std::string_view kPropertyPreparedQueueOffset = "TRAN_PREPARED_QUEUE_OFFSET";
inline constexpr std::string_view kPropertyCheckImmunitySec = "CHECK_IMMUNITY_TIME_IN_SECONDS";
inline constexpr std::string_view kPropertyTransactionCheckTimes = "TRANSACTION_CHECK_TIMES";
inline constexpr std::string_view kPropertyTransactionEnded = "__UMQ_TXN";

static_assert(kPropertyDeliveryMarker.starts_with(kInternalPropertyPrefix));
static_assert(kPropertyTransactionEnded.starts_with(kInternalPropertyPrefix));
static_assert(kPropertyTimerPutMs.starts_with(kInternalPropertyPrefix));
static_assert(kPropertyTimerCancelKey.starts_with(kInternalPropertyPrefix));

}  // namespace uringmq::engine
