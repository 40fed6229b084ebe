'use strict';
// bench/grpc_lateness.js: how late RocketMQ 5 timers reach a gRPC SimpleConsumer that is long
// polling, and how late an unacked message comes back after its invisible time, measured by the
// official Node.js client (rocketmq-client-nodejs 1.0.8, from tests/grpc/node_modules) against a
// running broker. Lateness = the client's clock when the message arrived - the time it was due
// (deliveryTimestamp; first arrival + invisible duration); negative = early.
//   node bench/grpc_lateness.js <grpc endpoint> [messages=1000] [spread_ms=3000]
// Prints one JSON line: {"delay": {n, early, p50, p99, p999, max}, "expiry": {...}}.
const path = require('node:path');
const { Producer, SimpleConsumer } = require(
  path.join(__dirname, '..', 'tests', 'grpc', 'node_modules', 'rocketmq-client-nodejs'));

const quiet = { info() {}, debug() {}, warn() {}, error() {}, trace() {} };
const [endpoints, countArg, spreadArg] = process.argv.slice(2);
const count = Number(countArg || 1000);
const spread = Number(spreadArg || 3000);

function summary(values) {
  const v = [...values].sort((a, b) => a - b);
  const q = f => v[Math.min(v.length - 1, Math.floor(f * v.length))];
  return { n: v.length, early: v.filter(x => x < 0).length, p50: q(0.5), p99: q(0.99),
           p999: q(0.999), max: v[v.length - 1] };
}

async function consume(consumer, want, onMessage, ms) {
  const end = Date.now() + ms;
  let got = 0;
  // RECEIVES receives in flight (1 by default), each long-polling.
  const loop = async () => {
    while (got < want && Date.now() < end) {
      for (const m of await consumer.receive(32, 30000)) {
        got++;
        await onMessage(m, Date.now());
      }
    }
  };
  await Promise.all(Array.from({ length: Number(process.env.RECEIVES || 1) }, loop));
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
  const due = new Map();
  const sends = [];
  for (let i = 0; i < count; i++) {
    const at = Date.now() + 1000 + Math.floor(Math.random() * spread);
    const message = { topic, body: Buffer.from(String(i)), deliveryTimestamp: new Date(at) };
    const p = producer.send(message)
      .then(r => due.set(r.messageId, at));
    sends.push(p);
    if (sends.length >= 64) await Promise.all(sends.splice(0));
  }
  await Promise.all(sends);
  const delay = [];
  const firstSeen = new Map();
  await consume(consumer, count, async (m, now) => {
    const at = due.get(m.messageId);
    if (at !== undefined && !firstSeen.has(m.messageId)) {
      delay.push(now - at);
      // The receipt handle carries the hand-out's pop time and invisible time (RocketMQ's
      // ExtraInfoUtil form: "<ck> <popTime> <invisibleTime> ..."): its deadline, broker clock.
      const [, popTime, invisible] = m.receiptHandle.split(' ').map(Number);
      firstSeen.set(m.messageId, popTime + invisible);
    }
  }, spread + 20000);
  // Expiry: the messages above were received with a 30 s invisible time and not acked; they
  // come back at their deadline.
  const expiry = [];
  await consume(consumer, firstSeen.size, async (m, now) => {
    const deadline = firstSeen.get(m.messageId);
    if (deadline !== undefined && m.deliveryAttempt === 2) expiry.push(now - deadline);
    await consumer.ack(m);
  }, spread + 60000);
  console.log(JSON.stringify({ delay: summary(delay), expiry: summary(expiry) }));
  await producer.shutdown();
  await consumer.shutdown();
}

main().then(() => process.exit(0), e => {
  console.error(e);
  process.exit(1);
});
