'use strict';
// The official RocketMQ 5 Node.js client's generated message classes against net/grpc/proto.
//
//   node conformance.js write DIR   one populated instance per case: DIR/<case>.bin (the client's
//                                   serialisation), .type (the message type), .json (its values)
//   node conformance.js check DIR   for each case: DIR/<case>.txt (protoc --decode with our
//                                   .proto) must hold exactly the values, and DIR/<case>.re.bin
//                                   (protoc --encode of that text) must parse in the client's
//                                   classes to the same message
//   node conformance.js descriptors OURS THEIRS
//                                   two FileDescriptorSets as text: the same declarations
//
// Every field of every message reachable from MessagingService is set to a distinct non-default
// value somewhere (checked by `write`), and every oneof alternative is set in some case, so a
// field with a wrong number, name or type in our .proto shows up as an unknown field or a value
// under another name. An enum value's number is not visible in the bytes' decoding (protoc
// prints an unknown value as its number, which is what the client's object holds), so the
// `descriptors` check compares the declarations too.
const fs = require('fs');
const path = require('path');

const pkg = 'rocketmq-client-nodejs/proto/apache/rocketmq/v2/';
const v2 = Object.assign({}, require(pkg + 'definition_pb.js'), require(pkg + 'service_pb.js'));
const { Timestamp } = require('google-protobuf/google/protobuf/timestamp_pb.js');
const { Duration } = require('google-protobuf/google/protobuf/duration_pb.js');

// Distinct values: a field decoded under another field's name cannot match by accident.
let seq = 0;
const str = () => `v${++seq}`;
const num = () => 100 + ++seq;
const ts = () => new Timestamp().setSeconds(1700000000 + num()).setNanos(num());
const dur = () => new Duration().setSeconds(num()).setNanos(num());

function make(type, fields) {
  const m = new v2[type]();
  for (const [setter, value] of Object.entries(fields)) {
    if (typeof m[setter] !== 'function') throw new Error(`${type} has no ${setter}`);
    m[setter](value);
  }
  return m;
}
function mapOf(m, getter, entries) {
  const map = m[getter]();
  for (const [k, v] of entries) map.set(k, v);
  return m;
}

const resource = () => make('Resource', { setResourceNamespace: str(), setName: str() });
const address = () => make('Address', { setHost: str(), setPort: num() });
const endpoints = (scheme) => make('Endpoints', {
  setScheme: scheme, setAddressesList: [address(), address()],
});
const broker = () => make('Broker', {
  setName: str(), setId: num(), setEndpoints: endpoints(v2.AddressScheme.IPV4),
});
const messageQueue = () => make('MessageQueue', {
  setTopic: resource(), setId: num(), setPermission: v2.Permission.READ_WRITE, setBroker: broker(),
  setAcceptMessageTypesList: [v2.MessageType.NORMAL, v2.MessageType.FIFO, v2.MessageType.DELAY,
    v2.MessageType.TRANSACTION, v2.MessageType.LITE, v2.MessageType.PRIORITY],
});
const filter = (type) => make('FilterExpression', { setType: type, setExpression: str() });
const status = (code) => make('Status', { setCode: code, setMessage: str() });
const systemProperties = () => make('SystemProperties', {
  setTag: str(), setKeysList: [str(), str()], setMessageId: str(),
  setBodyDigest: make('Digest', { setType: v2.DigestType.MD5, setChecksum: str() }),
  setBodyEncoding: v2.Encoding.GZIP, setMessageType: v2.MessageType.TRANSACTION,
  setBornTimestamp: ts(), setBornHost: str(), setStoreTimestamp: ts(), setStoreHost: str(),
  setDeliveryTimestamp: ts(), setReceiptHandle: str(), setQueueId: num(), setQueueOffset: num(),
  setInvisibleDuration: dur(), setDeliveryAttempt: num(), setMessageGroup: str(),
  setTraceContext: str(), setOrphanedTransactionRecoveryDuration: dur(),
  setDeadLetterQueue: make('DeadLetterQueue', { setTopic: str(), setMessageId: str() }),
  setLiteTopic: str(), setPriority: num(),
});
const message = () => {
  const m = make('Message', {
    setTopic: resource(), setSystemProperties: systemProperties(),
    setBody: Buffer.from(`body ${str()}`),
  });
  return mapOf(m, 'getUserPropertiesMap', [[str(), str()], [str(), str()]]);
};
const exponential = () => make('ExponentialBackoff', {
  setInitial: dur(), setMax: dur(), setMultiplier: 1.5,
});
const customized = () => make('CustomizedBackoff', { setNextList: [dur(), dur(), dur()] });
const ua = () => make('UA', {
  setLanguage: v2.Language.NODE_JS, setVersion: str(), setPlatform: str(), setHostname: str(),
});
const metric = () => make('Metric', {
  setOn: true, setEndpoints: endpoints(v2.AddressScheme.IPV6),
});
const publishing = () => make('Publishing', {
  setTopicsList: [resource(), resource()], setMaxBodySize: num(), setValidateMessageType: true,
});
const subscription = () => make('Subscription', {
  setGroup: resource(),
  setSubscriptionsList: [
    make('SubscriptionEntry', { setTopic: resource(), setExpression: filter(v2.FilterType.TAG) }),
    make('SubscriptionEntry', { setTopic: resource(), setExpression: filter(v2.FilterType.SQL) }),
  ],
  setFifo: true, setReceiveBatchSize: num(), setLongPollingTimeout: dur(),
  setLiteSubscriptionQuota: num(), setMaxLiteTopicSize: num(),
});
const settings = (pubSub, backoff, clientType) => make('Settings', {
  setClientType: clientType, setAccessPoint: endpoints(v2.AddressScheme.DOMAIN_NAME),
  setBackoffPolicy: make('RetryPolicy', {
    setMaxAttempts: num(),
    [backoff === 'exp' ? 'setExponentialBackoff' : 'setCustomizedBackoff']:
      backoff === 'exp' ? exponential() : customized(),
  }),
  setRequestTimeout: dur(),
  [pubSub === 'pub' ? 'setPublishing' : 'setSubscription']:
    pubSub === 'pub' ? publishing() : subscription(),
  setUserAgent: ua(), setMetric: metric(),
});
const telemetry = (fields) => make('TelemetryCommand', Object.assign({
  setStatus: status(v2.Code.MULTIPLE_RESULTS),
}, fields));
const nonce = (type, extra) => make(type, Object.assign({ setNonce: str() }, extra || {}));
const offsetOption = (setter, value) => make('OffsetOption', { [setter]: value });
const syncLite = (action, option) => make('SyncLiteSubscriptionRequest', {
  setAction: action, setTopic: resource(), setGroup: resource(),
  setLiteTopicSetList: [str(), str()], setVersion: num(), setOffsetOption: option,
});

// [case name, message, top-level oneof alternatives this case sets]
const cases = [
  ['QueryRouteRequest', make('QueryRouteRequest', {
    setTopic: resource(), setEndpoints: endpoints(v2.AddressScheme.IPV4) })],
  ['QueryRouteResponse', make('QueryRouteResponse', {
    setStatus: status(v2.Code.OK), setMessageQueuesList: [messageQueue(), messageQueue()] })],
  ['HeartbeatRequest', make('HeartbeatRequest', {
    setGroup: resource(), setClientType: v2.ClientType.PUSH_CONSUMER })],
  ['HeartbeatResponse', make('HeartbeatResponse', { setStatus: status(v2.Code.BAD_REQUEST) })],
  ['SendMessageRequest', make('SendMessageRequest', { setMessagesList: [message(), message()] })],
  ['SendMessageResponse', make('SendMessageResponse', {
    setStatus: status(v2.Code.OK),
    setEntriesList: [make('SendResultEntry', {
      setStatus: status(v2.Code.TOO_MANY_REQUESTS), setMessageId: str(), setTransactionId: str(),
      setOffset: num(), setRecallHandle: str() })] })],
  ['QueryAssignmentRequest', make('QueryAssignmentRequest', {
    setTopic: resource(), setGroup: resource(), setEndpoints: endpoints(v2.AddressScheme.IPV6) })],
  ['QueryAssignmentResponse', make('QueryAssignmentResponse', {
    setStatus: status(v2.Code.OK),
    setAssignmentsList: [make('Assignment', { setMessageQueue: messageQueue() })] })],
  ['ReceiveMessageRequest', make('ReceiveMessageRequest', {
    setGroup: resource(), setMessageQueue: messageQueue(),
    setFilterExpression: filter(v2.FilterType.SQL), setBatchSize: num(),
    setInvisibleDuration: dur(), setAutoRenew: true, setLongPollingTimeout: dur(),
    setAttemptId: str() })],
  ['ReceiveMessageResponse_status', make('ReceiveMessageResponse', {
    setStatus: status(v2.Code.MESSAGE_NOT_FOUND) })],
  ['ReceiveMessageResponse_message', make('ReceiveMessageResponse', { setMessage: message() })],
  ['ReceiveMessageResponse_delivery', make('ReceiveMessageResponse', {
    setDeliveryTimestamp: ts() })],
  ['AckMessageRequest', make('AckMessageRequest', {
    setGroup: resource(), setTopic: resource(),
    setEntriesList: [make('AckMessageEntry', {
      setMessageId: str(), setReceiptHandle: str(), setLiteTopic: str() })] })],
  ['AckMessageResponse', make('AckMessageResponse', {
    setStatus: status(v2.Code.OK),
    setEntriesList: [make('AckMessageResultEntry', {
      setMessageId: str(), setReceiptHandle: str(),
      setStatus: status(v2.Code.INVALID_RECEIPT_HANDLE) })] })],
  ['ForwardMessageToDeadLetterQueueRequest', make('ForwardMessageToDeadLetterQueueRequest', {
    setGroup: resource(), setTopic: resource(), setReceiptHandle: str(), setMessageId: str(),
    setDeliveryAttempt: num(), setMaxDeliveryAttempts: num(), setLiteTopic: str() })],
  ['ForwardMessageToDeadLetterQueueResponse', make('ForwardMessageToDeadLetterQueueResponse', {
    setStatus: status(v2.Code.INTERNAL_ERROR) })],
  ['PullMessageRequest', make('PullMessageRequest', {
    setGroup: resource(), setMessageQueue: messageQueue(), setOffset: num(), setBatchSize: num(),
    setFilterExpression: filter(v2.FilterType.TAG), setLongPollingTimeout: dur() })],
  ['PullMessageResponse_status', make('PullMessageResponse', {
    setStatus: status(v2.Code.OFFSET_NOT_FOUND) })],
  ['PullMessageResponse_message', make('PullMessageResponse', { setMessage: message() })],
  ['PullMessageResponse_next', make('PullMessageResponse', { setNextOffset: num() })],
  ['UpdateOffsetRequest', make('UpdateOffsetRequest', {
    setGroup: resource(), setMessageQueue: messageQueue(), setOffset: num() })],
  ['UpdateOffsetResponse', make('UpdateOffsetResponse', { setStatus: status(v2.Code.OK) })],
  ['GetOffsetRequest', make('GetOffsetRequest', {
    setGroup: resource(), setMessageQueue: messageQueue() })],
  ['GetOffsetResponse', make('GetOffsetResponse', {
    setStatus: status(v2.Code.OK), setOffset: num() })],
  ['QueryOffsetRequest', make('QueryOffsetRequest', {
    setMessageQueue: messageQueue(), setQueryOffsetPolicy: v2.QueryOffsetPolicy.TIMESTAMP,
    setTimestamp: ts() })],
  ['QueryOffsetResponse', make('QueryOffsetResponse', {
    setStatus: status(v2.Code.OK), setOffset: num() })],
  ['EndTransactionRequest', make('EndTransactionRequest', {
    setTopic: resource(), setMessageId: str(), setTransactionId: str(),
    setResolution: v2.TransactionResolution.ROLLBACK,
    setSource: v2.TransactionSource.SOURCE_SERVER_CHECK, setTraceContext: str() })],
  ['EndTransactionResponse', make('EndTransactionResponse', {
    setStatus: status(v2.Code.INVALID_TRANSACTION_ID) })],
  ['TelemetryCommand_settings_pub', telemetry({
    setSettings: settings('pub', 'exp', v2.ClientType.PRODUCER) })],
  ['TelemetryCommand_settings_sub', telemetry({
    setSettings: settings('sub', 'custom', v2.ClientType.SIMPLE_CONSUMER) })],
  ['TelemetryCommand_thread_stack_trace', telemetry({
    setThreadStackTrace: nonce('ThreadStackTrace', { setThreadStackTrace: str() }) })],
  ['TelemetryCommand_verify_message_result', telemetry({
    setVerifyMessageResult: nonce('VerifyMessageResult') })],
  ['TelemetryCommand_recover_orphaned_transaction', telemetry({
    setRecoverOrphanedTransactionCommand: make('RecoverOrphanedTransactionCommand', {
      setMessage: message(), setTransactionId: str() }) })],
  ['TelemetryCommand_print_thread_stack_trace', telemetry({
    setPrintThreadStackTraceCommand: nonce('PrintThreadStackTraceCommand') })],
  ['TelemetryCommand_verify_message', telemetry({
    setVerifyMessageCommand: nonce('VerifyMessageCommand', { setMessage: message() }) })],
  ['TelemetryCommand_reconnect_endpoints', telemetry({
    setReconnectEndpointsCommand: nonce('ReconnectEndpointsCommand') })],
  ['TelemetryCommand_notify_unsubscribe_lite', telemetry({
    setNotifyUnsubscribeLiteCommand: make('NotifyUnsubscribeLiteCommand', {
      setLiteTopic: str() }) })],
  ['NotifyClientTerminationRequest', make('NotifyClientTerminationRequest', {
    setGroup: resource() })],
  ['NotifyClientTerminationResponse', make('NotifyClientTerminationResponse', {
    setStatus: status(v2.Code.OK) })],
  ['ChangeInvisibleDurationRequest', make('ChangeInvisibleDurationRequest', {
    setGroup: resource(), setTopic: resource(), setReceiptHandle: str(),
    setInvisibleDuration: dur(), setMessageId: str(), setLiteTopic: str(), setSuspend: true })],
  ['ChangeInvisibleDurationResponse', make('ChangeInvisibleDurationResponse', {
    setStatus: status(v2.Code.OK), setReceiptHandle: str() })],
  ['RecallMessageRequest', make('RecallMessageRequest', {
    setTopic: resource(), setRecallHandle: str() })],
  ['RecallMessageResponse', make('RecallMessageResponse', {
    setStatus: status(v2.Code.OK), setMessageId: str() })],
  ['SyncLiteSubscriptionRequest_policy', syncLite(v2.LiteSubscriptionAction.COMPLETE_REMOVE,
    offsetOption('setPolicy', v2.OffsetOption.Policy.MAX))],
  ['SyncLiteSubscriptionRequest_offset', syncLite(v2.LiteSubscriptionAction.PARTIAL_REMOVE,
    offsetOption('setOffset', num()))],
  ['SyncLiteSubscriptionRequest_tail_n', syncLite(v2.LiteSubscriptionAction.COMPLETE_ADD,
    offsetOption('setTailN', num()))],
  ['SyncLiteSubscriptionRequest_timestamp', syncLite(v2.LiteSubscriptionAction.COMPLETE_ADD,
    offsetOption('setTimestamp', num()))],
  ['SyncLiteSubscriptionResponse', make('SyncLiteSubscriptionResponse', {
    setStatus: status(v2.Code.OK) })],
];

// Enum value names are unique in the package (nested OffsetOption.Policy's too), so protoc's
// text (names) and the client's objects (numbers) meet on the number.
const enumNumbers = new Map();
for (const e of Object.values(v2).concat([v2.OffsetOption.Policy])) {
  if (e && typeof e === 'object' && !Array.isArray(e)) {
    for (const [name, n] of Object.entries(e)) if (typeof n === 'number') enumNumbers.set(name, n);
  }
}
// protoc prints AddressScheme's IPv4/IPv6 as declared; the client's JS upper-cases them.
for (const name of ['IPv4', 'IPv6']) enumNumbers.set(name, v2.AddressScheme[name.toUpperCase()]);

const snake = (k) => k.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());
const isDefault = (v) => v === undefined || v === null || v === 0 || v === '' || v === false ||
  (Array.isArray(v) && v.length === 0);

// The client's toObject() as {snake_name: [values]}: defaults dropped (protoc prints only set
// fields), lists and maps under their field names, every leaf a string. `seen` collects
// "parent.field" -> set at least once, for the coverage check.
function normalise(obj, parent, seen) {
  const out = {};
  for (let [k, v] of Object.entries(obj)) {
    if (Array.isArray(v) && k.endsWith('Map')) {
      k = k.slice(0, -3);
      v = v.map(([key, value]) => ({ key: [String(key)], value: [String(value)] }));
    } else if (Array.isArray(v) && k.endsWith('List')) {
      k = k.slice(0, -4);
    }
    const name = snake(k);
    const id = `${parent}.${name}`;
    if (!seen.has(id)) seen.set(id, false);
    if (isDefault(v)) continue;
    seen.set(id, true);
    const vals = Array.isArray(v) ? v : [v];
    out[name] = vals.map((x) => (x && typeof x === 'object' && !Array.isArray(x)
      ? normalise(x, name, seen) : String(x)));
  }
  return out;
}

// protoc's text format as the same shape.
function parseText(text) {
  const toks = text.match(/"(?:[^"\\]|\\.)*"|[{}:]|[^\s{}:"]+/g) || [];
  let i = 0;
  const unescape = (s) => s.slice(1, -1).replace(/\\([0-7]{1,3}|.)/g, (m, e) => {
    if (/^[0-7]+$/.test(e)) return String.fromCharCode(parseInt(e, 8));
    return { n: '\n', t: '\t', r: '\r' }[e] || e;
  });
  function block() {
    const out = {};
    while (i < toks.length && toks[i] !== '}') {
      const key = toks[i++];
      let val;
      if (toks[i] === ':') {
        i++;
        const t = toks[i++];
        if (t.startsWith('"')) {
          val = unescape(t);
          if (key === 'body') val = Buffer.from(val, 'latin1').toString('base64');
        } else if (enumNumbers.has(t)) {
          val = String(enumNumbers.get(t));
        } else {
          val = Number.isNaN(Number(t)) ? t : String(Number(t));
        }
      } else {
        if (toks[i++] !== '{') throw new Error(`bad text near ${key}`);
        val = block();
        i++;
      }
      (out[key] = out[key] || []).push(val);
    }
    return out;
  }
  return block();
}

function diff(a, b, where) {
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return `${where}: ${a.length} values vs ${b.length}`;
    for (let i = 0; i < a.length; i++) {
      const d = diff(a[i], b[i], `${where}[${i}]`);
      if (d) return d;
    }
    return null;
  }
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b)) {
    return `${where}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  }
  if (typeof a !== 'object') return a === b ? null : `${where}: ${a} vs ${b}`;
  for (const k of new Set(Object.keys(a).concat(Object.keys(b)))) {
    if (!(k in a)) return `${where}.${k}: not in the client's message`;
    if (!(k in b)) return `${where}.${k}: missing`;
    const d = diff(a[k], b[k], `${where}.${k}`);
    if (d) return d;
  }
  return null;
}

function write(dir) {
  fs.mkdirSync(dir, { recursive: true });
  const seen = new Map();
  for (const [name, msg] of cases) {
    const type = msg.constructor === v2[name.split('_')[0]] ? name.split('_')[0] : null;
    if (!type) throw new Error(`${name}: not a ${name.split('_')[0]}`);
    const bytes = msg.serializeBinary();
    const expected = normalise(msg.toObject(), type, seen);
    // The client must read its own bytes back to the same values.
    const again = normalise(v2[type].deserializeBinary(bytes).toObject(), type, new Map());
    const d = diff(expected, again, name);
    if (d) throw new Error(`client round trip: ${d}`);
    fs.writeFileSync(path.join(dir, `${name}.bin`), bytes);
    fs.writeFileSync(path.join(dir, `${name}.type`), type + '\n');
    fs.writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(expected, null, 1) + '\n');
  }
  // Every request and response of the service has a case.
  const service = require(pkg + 'service_grpc_pb.js').MessagingServiceService;
  const rpcs = Object.values(service);
  const types = new Set(cases.map(([name]) => v2[name.split('_')[0]]));
  for (const rpc of rpcs) {
    for (const t of [rpc.requestType, rpc.responseType]) {
      if (!types.has(t)) throw new Error(`${rpc.path}: no case for one of its messages`);
    }
  }
  const unset = [...seen].filter(([, set]) => !set).map(([id]) => id);
  if (unset.length) throw new Error(`fields never set to a non-default value: ${unset.join(' ')}`);
  console.log(`wrote ${cases.length} cases for ${rpcs.length} RPCs, ${seen.size} fields set`);
}

function check(dir) {
  let failed = 0;
  for (const [name] of cases) {
    const type = fs.readFileSync(path.join(dir, `${name}.type`), 'utf8').trim();
    const expected = JSON.parse(fs.readFileSync(path.join(dir, `${name}.json`), 'utf8'));
    const decoded = parseText(fs.readFileSync(path.join(dir, `${name}.txt`), 'utf8'));
    const back = normalise(v2[type].deserializeBinary(
      fs.readFileSync(path.join(dir, `${name}.re.bin`))).toObject(), type, new Map());
    for (const [what, got] of [['protoc --decode', decoded], ['protoc --encode', back]]) {
      const d = diff(expected, got, name);
      if (d) {
        console.error(`FAIL ${what} ${d}`);
        failed++;
      }
    }
  }
  if (failed) process.exit(1);
  console.log(`${cases.length} cases: protoc's text and bytes match the client's`);
}

// Two FileDescriptorSets in protoc's text: the same files, messages, fields (names, numbers,
// types, labels, oneofs), enums and services, language options aside. This catches what the
// bytes cannot: a wire-compatible type (int32 for int64, bytes for string) or an enum value
// never sent.
function descriptors(ours, theirs) {
  const strip = (x) => {
    if (Array.isArray(x)) return x.map(strip);
    if (typeof x !== 'object') return x;
    const out = {};
    for (const [k, v] of Object.entries(x)) if (k !== 'options') out[k] = strip(v);
    return out;
  };
  const d = diff(strip(parseText(fs.readFileSync(theirs, 'utf8'))),
    strip(parseText(fs.readFileSync(ours, 'utf8'))), 'descriptor');
  if (d) {
    console.error(`FAIL ${d}`);
    process.exit(1);
  }
  console.log('descriptors: net/grpc/proto declares what the client\'s .proto files declare');
}

const [mode, dir, other] = process.argv.slice(2);
if (mode === 'write') write(dir);
else if (mode === 'check') check(dir);
else if (mode === 'descriptors') descriptors(dir, other);
else if (require.main === module) {
  console.error('usage: node conformance.js write|check DIR | descriptors OURS.txt THEIRS.txt');
  process.exit(2);
}
