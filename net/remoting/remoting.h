#pragma once
// RocketMQ remoting frame codec (the 4.x TCP protocol; layout and limits in
// net/remoting/FORMAT.md):
//   int32 totalLength | int32 (serializeType << 24 | headerLength) | header | body
// with the header either JSON (type 0, what ali-ons sends and the only type it can read back)
// or the ROCKETMQ binary header (type 1). All integers big-endian.
// Invariant: decode_frame never reads outside `in`, and a body it returns lies inside `in`.
// Everything arriving from the network is bounded by RemotingLimits before it is buffered.
// Pure functions and plain values; thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/common/json.h"

namespace uringmq::net {

enum class SerializeType : uint8_t { json = 0, rocketmq = 1 };

struct RemotingLimits {
  uint32_t max_frame_bytes = 16u << 20;   // the totalLength field; Java's default frameMaxLength
  uint32_t max_header_bytes = 64u << 10;  // headerLength field
  uint32_t max_ext_fields = 256;          // extFields entries in one header
  JsonLimits json;                        // for a JSON header
};

// Frame size fields, in bytes (net/remoting/FORMAT.md section 1).
inline constexpr size_t kFrameLengthFieldBytes = 4;  // totalLength
inline constexpr size_t kFramePrefixBytes = 8;       // totalLength + type/headerLength
inline constexpr uint32_t kHeaderLengthMask = 0x00FFFFFF;
static_assert(kFramePrefixBytes == 2 * kFrameLengthFieldBytes);

// Flag bits.
inline constexpr int32_t kFlagResponse = 1;  // RESPONSE_COMMAND
inline constexpr int32_t kFlagOneway = 2;    // ONEWAY request: no answer expected

// The version answers carry: RocketMQ 4.9.8's (MQVersion.Version.V4_9_8.ordinal()), as its
// broker's do. Clients read it from HEART_BEAT answers and refuse SQL92 pulls to a broker below
// V4_1_0_SNAPSHOT (331).
inline constexpr int32_t kBrokerVersion = 596;

// A VIEW_MESSAGE_BY_ID header field of uringmq's own ("true"): the record's stored bytes exactly
// (a peer repairing its copy), not as clients receive it. A Java broker ignores it and answers
// the stored bytes anyway.
inline constexpr std::string_view kStoredBytesField = "uringmqStoredBytes";

namespace request_code {
inline constexpr int32_t kSendMessage = 10;
inline constexpr int32_t kPullMessage = 11;
inline constexpr int32_t kQueryMessage = 12;
inline constexpr int32_t kQueryConsumerOffset = 14;
inline constexpr int32_t kUpdateConsumerOffset = 15;
inline constexpr int32_t kUpdateAndCreateTopic = 17;
inline constexpr int32_t kGetAllTopicConfig = 21;
inline constexpr int32_t kGetBrokerRuntimeInfo = 28;
inline constexpr int32_t kSearchOffsetByTimestamp = 29;
inline constexpr int32_t kGetMaxOffset = 30;
inline constexpr int32_t kGetMinOffset = 31;
inline constexpr int32_t kGetEarliestMsgStoretime = 32;
inline constexpr int32_t kViewMessageById = 33;
inline constexpr int32_t kHeartBeat = 34;
inline constexpr int32_t kUnregisterClient = 35;
inline constexpr int32_t kConsumerSendMsgBack = 36;
inline constexpr int32_t kEndTransaction = 37;
inline constexpr int32_t kCheckTransactionState = 39;  // broker -> client
inline constexpr int32_t kGetConsumerListByGroup = 38;
inline constexpr int32_t kCheckClientConfig = 46;
inline constexpr int32_t kNotifyConsumerIdsChanged = 40;  // broker -> client
inline constexpr int32_t kLockBatchMq = 41;
inline constexpr int32_t kUnlockBatchMq = 42;
inline constexpr int32_t kGetRouteInfoByTopic = 105;
inline constexpr int32_t kGetBrokerClusterInfo = 106;
inline constexpr int32_t kDeleteTopicInBroker = 215;
inline constexpr int32_t kDeleteTopicInNamesrv = 216;
inline constexpr int32_t kWipeWritePermOfBroker = 205;  // a NameServer request
inline constexpr int32_t kGetKvConfigByValue = 217;
inline constexpr int32_t kSendMessageV2 = 310;
inline constexpr int32_t kSendBatchMessage = 320;
// RocketMQ 5's POP consumption (net/remoting/pop_handlers.cc).
inline constexpr int32_t kPopMessage = 200050;
inline constexpr int32_t kAckMessage = 200051;
inline constexpr int32_t kPeekMessage = 200052;
inline constexpr int32_t kChangeMessageInvisibleTime = 200053;
inline constexpr int32_t kNotification = 200054;
inline constexpr int32_t kPollingInfo = 200055;
inline constexpr int32_t kBatchAckMessage = 200151;
// Admin requests (mqadmin, rocketmq-dashboard; net/ops/admin_handlers.cc).
inline constexpr int32_t kUpdateBrokerConfig = 25;
inline constexpr int32_t kGetBrokerConfig = 26;
inline constexpr int32_t kUpdateAndCreateSubscriptionGroup = 200;
inline constexpr int32_t kGetAllSubscriptionGroupConfig = 201;
inline constexpr int32_t kGetTopicStatsInfo = 202;
inline constexpr int32_t kGetConsumerConnectionList = 203;
inline constexpr int32_t kGetProducerConnectionList = 204;
inline constexpr int32_t kGetAllTopicListFromNameserver = 206;
inline constexpr int32_t kDeleteSubscriptionGroup = 207;
inline constexpr int32_t kGetConsumeStats = 208;
inline constexpr int32_t kResetConsumerClientOffset = 220;  // broker -> client
inline constexpr int32_t kInvokeBrokerToResetOffset = 222;
inline constexpr int32_t kQueryTopicConsumeByWho = 300;
// RocketMQ 5.3.2: cancel a delayed message by the handle its send returned.
inline constexpr int32_t kRecallMessage = 370;
}  // namespace request_code

namespace response_code {
inline constexpr int32_t kSuccess = 0;
inline constexpr int32_t kSystemError = 1;
inline constexpr int32_t kSystemBusy = 2;
inline constexpr int32_t kRequestCodeNotSupported = 3;
inline constexpr int32_t kFlushDiskTimeout = 10;
inline constexpr int32_t kSlaveNotAvailable = 11;
inline constexpr int32_t kFlushSlaveTimeout = 12;
inline constexpr int32_t kMessageIllegal = 13;
inline constexpr int32_t kServiceNotAvailable = 14;
inline constexpr int32_t kNoPermission = 16;
inline constexpr int32_t kTopicNotExist = 17;
inline constexpr int32_t kPullNotFound = 19;
inline constexpr int32_t kPullRetryImmediately = 20;
inline constexpr int32_t kPullOffsetMoved = 21;
inline constexpr int32_t kQueryNotFound = 22;
inline constexpr int32_t kPollingFull = 209;     // POP: too many receives wait
inline constexpr int32_t kPollingTimeout = 210;  // POP: nothing came within the poll time
inline constexpr int32_t kSubscriptionParseFailed = 23;
inline constexpr int32_t kSubscriptionNotExist = 24;
inline constexpr int32_t kSubscriptionNotLatest = 25;
inline constexpr int32_t kSubscriptionGroupNotExist = 26;
inline constexpr int32_t kFilterDataNotExist = 27;
inline constexpr int32_t kInvalidParameter = 29;  // PEEK_MESSAGE: a queueId past the topic's
inline constexpr int32_t kNoMessage = 208;        // BATCH_ACK_MESSAGE: a body without acks
// A reset by time while no consumer of the group is connected.
inline constexpr int32_t kConsumerNotOnline = 206;
// RocketMQ 5: a request the broker cannot carry out as asked (a bad recall handle).
inline constexpr int32_t kIllegalOperation = 604;
}  // namespace response_code

struct RemotingCommand {
  int32_t code = 0;
  std::string language = "JAVA";
  int32_t version = 0;
  int32_t opaque = 0;
  int32_t flag = 0;
  std::optional<std::string> remark;
  // extFields in arrival order. JSON values are normalised to strings as Java does: a string as
  // is, a number as its literal text, a boolean as "true"/"false"; a null member is skipped.
  // Nested objects/arrays in extFields: bad frame.
  std::vector<std::pair<std::string, std::string>> ext_fields;
  SerializeType serialize_type = SerializeType::json;

  bool is_response() const { return (flag & kFlagResponse) != 0; }
  bool is_oneway() const { return (flag & kFlagOneway) != 0; }
  const std::string* ext(std::string_view key) const;     // nullptr when absent
  void set_ext(std::string_view key, std::string value);  // replaces the first match or appends
};

enum class DecodeStatus : uint8_t { ok, need_more, bad };

struct DecodedFrame {
  RemotingCommand command;
  std::span<const std::byte> body;  // points into the input
  size_t frame_bytes = 0;           // 4 + totalLength: bytes to consume
};

// Decodes the first frame at the start of `in`.
// need_more: fewer bytes than a whole frame. Whatever prefix fields are present have already
// been checked (the 4-byte length against the limits, the 8-byte prefix's type and header
// length), so a huge length is `bad` at once, before its bytes arrive.
// bad: *error names what is wrong, e.g. "frame length 4294967295 exceeds the limit 16777216",
// "header length 99 exceeds frame length 10", "header JSON at byte 7: ...",
// "header field code is missing", "unknown serialize type 7"; the caller answers nothing more
// and closes the connection.
// JSON header: code (required), opaque, flag, version (int32 numbers; missing = 0), language
// (string), remark (string or null), extFields (object or null); other members are ignored.
// ROCKETMQ binary header (type 1): decoded too; the language byte maps to its name.
// *out and *error may be partly written on need_more/bad.
DecodeStatus decode_frame(std::span<const std::byte> in, const RemotingLimits& limits,
                          DecodedFrame* out, std::string* error);

// Appends one whole frame to *out: totalLength, (type << 24 | headerLength), header, body.
// JSON: {"code":N,"language":"JAVA","version":N,"opaque":N,"flag":N,"remark":"..." (omitted when
// nullopt),"extFields":{"k":"v",...} (omitted when empty),"serializeTypeCurrentRPC":"JSON"}:
// code/version/opaque/flag as JSON numbers, ext values as JSON strings.
// ROCKETMQ: the binary header; asserts code and version fit int16 and the language is known.
// Asserts the frame fits the 32-bit length fields.
void encode_frame(const RemotingCommand& command, std::span<const std::byte> body,
                  std::string* out);

// A response to `request`: flag kFlagResponse, the request's opaque and serialize type,
// language "JAVA", version kBrokerVersion, the given code and remark, no extFields.
RemotingCommand make_response(const RemotingCommand& request, int32_t code,
                              std::optional<std::string> remark = std::nullopt);

// The two JSON header decoders, for the differential fuzz target: fast_json_header reads the
// usual shape directly and gives up (false) on anything else; generic_json_header parses any
// JSON. Whenever the fast one accepts, the generic one must accept and decode the same command.
namespace internal {
bool fast_json_header(std::string_view text, const RemotingLimits& limits, RemotingCommand* out);
bool generic_json_header(std::string_view text, const RemotingLimits& limits, RemotingCommand* out,
                         std::string* error);
}  // namespace internal

// ROCKETMQ binary header language byte <-> name ("JAVA" 0 ... "RUST" 12); nullopt if unknown.
std::optional<std::string_view> language_name(uint8_t code);
std::optional<uint8_t> language_code(std::string_view name);

// View of a std::string's bytes (for bodies and raw frames).
inline std::span<const std::byte> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace uringmq::net
