'use strict';
// bench/grpc_lateness.js: how late RocketMQ 5 timers reach a gRPC SimpleConsumer that is long
// polling, and how late an unacked message comes back after its invisible time, measured by the
// official Node.js client (rocketmq-client-nodejs 1.0.8, from tests/grpc/node_modules) against a
// running broker. Lateness = the client's clock when the message arrived - the time it was due
// (deliveryTimestamp; first arrival's pop time + invisible duration); negative = early. The
// broker's part, its clock (the same machine): the time it answered the receive (the answer's
// delivery_timestamp, the client's transportDeliveryTimestamp) - the time it was due, and the
// pop time the receipt handle carries (when the receive that handed it out last began to look:
// a receive that began just before the message was due and found it reads early) - the time
// it was due; from the pop time to the answer go the receive's pull and its journal record,
// from the answer to the arrival the wire and the client's own processing.
//   node bench/grpc_lateness.js <grpc endpoint> [messages=1000] [spread_ms=3000]
// Env: RECEIVES (receives in flight, each long polling; 16: enough that one is waiting when a
// message falls due while others carry answers back). The receives run while the sends go
// (a message may be due before the last send). Prints one JSON line:
// {"delay": {n, early, p50, p99, p999, max}, "delay_answer": {...}, "delay_broker": {...},
//  "expiry": {...}, "expiry_answer": {...}, "expiry_broker": {...}, "delay_spent": {...},
//  "expiry_spent": {...}} (ms; _answer: answered, _broker: pop time, _spent: answered - pop
//  time, the broker's own part whatever the client did).
const path = require('node:path');
const { Producer, SimpleConsumer } = require(
  path.join(__dirname, '..', 'tests', 'grpc', 'node_modules', 'rocketmq-client-nodejs'));

const quiet = { info() {}, debug() {}, warn() {}, error() {}, trace() {} };
const clock = () => performance.timeOrigin + performance.now();  // ms, fractional
const [endpoints, countArg, spreadArg] = process.argv.slice(2);
const count = Number(countArg || 1000);
const spread = Number(spreadArg || 3000);
const receives = Number(process.env.RECEIVES || 16);

function summary(values) {
  const v = [...values].sort((a, b) => a - b);
  const q = f => v[Math.min(v.length - 1, Math.floor(f * v.length))];
  const r = x => Math.round(x * 100) / 100;
  return { n: v.length, early: v.filter(x => x < 0).length, p50: r(q(0.5)), p99: r(q(0.99)),
           p999: r(q(0.999)), max: r(v[v.length - 1]) };
}

// The receipt handle carries the hand-out's pop time and invisible time (RocketMQ's
// ExtraInfoUtil form: "<ck> <popTime> <invisibleTime> ..."), broker clock.
const handedOut = m => m.receiptHandle.split(' ').map(Number).slice(1, 3);

// `receives` receives in flight until `want` messages came or `ms` passed; onMessage runs as
// each arrives and never delays the next receive.
async function consume(consumer, want, onMessage, ms) {
  const end = Date.now() + ms;
  let got = 0;
  const loop = async () => {
    while (got < want && Date.now() < end) {
      for (const m of await consumer.receive(32, 30000)) {
        got++;
        onMessage(m, clock());
      }
    }
  };
  await Promise.all(Array.from({ length: receives }, loop));
  return got;
}

async function main() {
  const topic = 'BenchTimer';
  const producer = new Producer({ endpoints, logger: quiet });
  await producer.startup();
  const consumer = new SimpleConsumer({ endpoints, consumerGroup: 'BenchTimerGroup',
    subscriptions: new Map([[topic, '*']]), awaitDuration: 5000, logger: quiet });
  await consumer.startup();
  await consumer.receive(1, 30000);  // the group's queues opened before the sends
  const due = new Map();  // by body: a message may arrive before its send's receipt
  const delay = [];
  const delayBroker = [];
  const delayAnswer = [];
  const delaySpent = [];
  const comesBack = new Map();  // message id -> its first hand-out's deadline
  const delayed = consume(consumer, count, (m, now) => {
    const at = due.get(m.body.toString());
    if (at === undefined || comesBack.has(m.messageId)) return;
    const [popTime, invisible] = handedOut(m);
    delay.push(now - at);
    delayBroker.push(popTime - at);
    delayAnswer.push(m.transportDeliveryTimestamp.getTime() - at);
    delaySpent.push(m.transportDeliveryTimestamp.getTime() - popTime);
    comesBack.set(m.messageId, popTime + invisible);
  }, spread + 20000);
  const sends = [];
  for (let i = 0; i < count; i++) {
    const at = Math.round(clock()) + 1000 + Math.floor(Math.random() * spread);
    due.set(String(i), at);
    sends.push(producer.send({ topic, body: Buffer.from(String(i)),
                               deliveryTimestamp: new Date(at) }));
    if (sends.length >= 64) await Promise.all(sends.splice(0));
  }
  await Promise.all(sends);
  await delayed;
  // Expiry: the messages above were received with a 30 s invisible time and not acked; they
  // come back at their deadline. Acks go without waiting for them.
  const expiry = [];
  const expiryBroker = [];
  const expiryAnswer = [];
  const expirySpent = [];
  const acks = [];
  await consume(consumer, comesBack.size, (m, now) => {
    const deadline = comesBack.get(m.messageId);
    if (deadline !== undefined && m.deliveryAttempt === 2) {
      expiry.push(now - deadline);
      expiryBroker.push(handedOut(m)[0] - deadline);
      expiryAnswer.push(m.transportDeliveryTimestamp.getTime() - deadline);
      expirySpent.push(m.transportDeliveryTimestamp.getTime() - handedOut(m)[0]);
    }
    acks.push(consumer.ack(m));
  }, spread + 60000);
  await Promise.all(acks);
  console.log(JSON.stringify({
    delay: summary(delay), delay_answer: summary(delayAnswer), delay_broker: summary(delayBroker),
    expiry: summary(expiry), expiry_answer: summary(expiryAnswer),
    expiry_broker: summary(expiryBroker), delay_spent: summary(delaySpent),
    expiry_spent: summary(expirySpent) }));
  await producer.shutdown();
  await consumer.shutdown();
}

main().then(() => process.exit(0), e => {
  console.error(e);
  process.exit(1);
});
