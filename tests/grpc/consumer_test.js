'use strict';
// The broker's POP consumption against the official RocketMQ 5 Node.js client
// (rocketmq-client-nodejs 1.0.8) over gRPC: SimpleConsumer receive and ack, a message not acked
// coming back after its invisible time (never before) with its attempt counted,
// ChangeInvisibleDuration, one AckMessage of many entries, a remoting producer read by a gRPC
// consumer, PushConsumer retries ending in the group's DLQ, FIFO message groups, several
// receives of one group long polling side by side while their acks are answered, and kill -9
// of the broker with messages in
// flight (acked ones never return, unacked ones do). Run by consumer_test.sh (CTest
// grpc_consumer_test).
//
//   node consumer_test.js <work-dir>     (URINGMQ_BROKER_BIN: the broker executable)

const assert = require('node:assert/strict');
const { Producer, SimpleConsumer, PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');
const { sleep } = require('../interop/broker.js');
const v2 = Object.assign({},
  require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb.js'),
  require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/service_pb.js'));
const {
  quiet, startBroker, withRaw, createTopic, createGroup, pullEverywhere, sendByRemoting,
} = require('./lib.js');

async function started(client) {
  await client.startup();
  return client;
}

function simpleConsumer(endpoints, group, topic, awaitDuration = 2000) {
  return started(new SimpleConsumer({
    endpoints, consumerGroup: group, subscriptions: new Map([[topic, '*']]), awaitDuration,
    logger: quiet, requestTimeout: 5000,
  }));
}

// Receives until `want` messages came or `ms` passed; each with the time it arrived.
async function receiveUntil(consumer, want, ms, invisible) {
  const got = [];
  const end = Date.now() + ms;
  while (got.length < want && Date.now() < end) {
    for (const m of await consumer.receive(16, invisible)) got.push({ m, at: Date.now() });
  }
  return got;
}

const bodyOf = g => g.m.body.toString();

async function sendAll(producer, topic, n, prefix, extra = {}) {
  for (let i = 0; i < n; i++) {
    await producer.send(Object.assign({
      topic, tag: 'T', keys: [`${prefix}-k${i}`], body: Buffer.from(`${prefix}-${i}`),
      properties: new Map([['idx', String(i)]]),
    }, extra));
  }
}

// Receive, ack half, and the other half comes back after the invisible time with attempt 2;
// a changed invisible time holds the message back longer.
async function receiveAckExpire(broker, endpoints, producer) {
  console.log('receive, ack, expiry');
  const topic = 'GrpcPop';
  const consumer = await simpleConsumer(endpoints, 'G_POP', topic);
  try {
    await sendAll(producer, topic, 6, 'p');
    const invisible = 2000;
    const first = await receiveUntil(consumer, 6, 15000, invisible);
    assert.deepEqual(first.map(bodyOf).sort(), [0, 1, 2, 3, 4, 5].map(i => `p-${i}`));
    for (const { m } of first) {
      assert.equal(m.tag, 'T');
      assert.equal(m.properties.get('idx'), m.body.toString().slice(2));
      assert.deepEqual(m.keys, [`p-k${m.properties.get('idx')}`]);
      assert.equal(m.deliveryAttempt, 1);
    }
    const acked = first.filter(g => Number(g.m.properties.get('idx')) % 2 === 0);
    for (const { m } of acked) await consumer.ack(m);
    const again = await receiveUntil(consumer, 3, 15000, invisible);
    assert.deepEqual(again.map(bodyOf).sort(), ['p-1', 'p-3', 'p-5'], 'only the unacked return');
    for (const g of again) {
      const before = first.find(f => bodyOf(f) === bodyOf(g));
      // Never early: back no sooner than its invisible time after it was handed out (the
      // client's clock marks the answer's arrival, after the hand-out).
      assert.ok(g.at - before.at >= invisible - 50, `back after ${g.at - before.at} ms`);
      assert.equal(g.m.deliveryAttempt, 2);
      await consumer.ack(g.m);
    }
    // ChangeInvisibleDuration: 1 s -> 5 s; not back at 2.5 s, back by 8 s.
    await sendAll(producer, topic, 1, 'c');
    const [held] = await receiveUntil(consumer, 1, 10000, 1000);
    assert.equal(bodyOf(held), 'c-0');
    await consumer.changeInvisibleDuration(held.m, 5000);
    const early = await receiveUntil(consumer, 1, 2500, 1000);
    assert.equal(early.length, 0, 'back before its changed invisible time');
    const late = await receiveUntil(consumer, 1, 8000, 10000);
    assert.equal(late.length, 1);
    assert.ok(late[0].at - held.at >= 5000 - 50, `back after ${late[0].at - held.at} ms`);
    assert.equal(late[0].m.deliveryAttempt, 2);
    await consumer.ack(late[0].m);
    // An acked handle is refused.
    await assert.rejects(consumer.ack(late[0].m));
    // Nothing else comes.
    assert.equal((await receiveUntil(consumer, 1, 3000, 1000)).length, 0);
    // The brokers' runtime tables count it: 7 acks and 4 expiries over both, none in flight.
    const table = { popAckTotal: 0, popExpiryTotal: 0, popInFlightMessages: 0 };
    for (const addr of broker.brokerAddrs) {
      await withRaw(addr, async raw => {
        const r = await raw.request(28, {});
        assert.equal(r.code, 0, `GET_BROKER_RUNTIME_INFO: ${r.remark}`);
        const t = JSON.parse(r.body.toString()).table;
        for (const k of Object.keys(table)) table[k] += Number(t[k]);
      });
    }
    assert.deepEqual(table, { popAckTotal: 7, popExpiryTotal: 4, popInFlightMessages: 0 });
  } finally {
    await consumer.shutdown().catch(() => {});
  }
}

// One AckMessage of many entries over both brokers' queues, one of them a bogus handle: every
// real entry OK, the bogus one INVALID_RECEIPT_HANDLE, the whole MULTIPLE_RESULTS; the acked
// messages never come back.
async function batchAck(endpoints, producer) {
  console.log('one AckMessage of many entries');
  const topic = 'GrpcBatchAck';
  const consumer = await simpleConsumer(endpoints, 'G_BATCH_ACK', topic);
  try {
    await sendAll(producer, topic, 12, 'b');
    const invisible = 2000;
    const got = await receiveUntil(consumer, 12, 15000, invisible);
    assert.equal(got.length, 12);
    // Each broker's messages in one request to that broker (a handle names its broker).
    const byEndpoints = new Map();
    for (const { m } of got) {
      const key = m.endpoints.toString();
      if (!byEndpoints.has(key)) byEndpoints.set(key, { endpoints: m.endpoints, views: [] });
      byEndpoints.get(key).views.push(m);
    }
    for (const { endpoints: at, views } of byEndpoints.values()) {
      const request = new v2.AckMessageRequest()
        .setGroup(new v2.Resource().setName('G_BATCH_ACK'))
        .setTopic(new v2.Resource().setName(topic));
      for (const m of views) {
        request.addEntries().setMessageId(m.messageId).setReceiptHandle(m.receiptHandle);
      }
      request.addEntries().setMessageId('bogus').setReceiptHandle('not a handle');
      const res = (await consumer.rpcClientManager.ackMessage(at, request, 5000)).toObject();
      assert.equal(res.status.code, v2.Code.MULTIPLE_RESULTS, JSON.stringify(res.status));
      assert.equal(res.entriesList.length, views.length + 1);
      res.entriesList.forEach((e, i) => assert.equal(
        e.status.code, i < views.length ? v2.Code.OK : v2.Code.INVALID_RECEIPT_HANDLE,
        `entry ${i}: ${JSON.stringify(e.status)}`));
    }
    assert.equal((await receiveUntil(consumer, 1, invisible + 2000, 1000)).length, 0,
      'an acked message came back');
  } finally {
    await consumer.shutdown().catch(() => {});
  }
}

// Two SimpleConsumers of one group, eight receives in flight between them, long polling side by
// side: every message is received, left unacked, comes back after its invisible time (waking
// the waiting receives) and is then acked on its consumer's own connection while that
// consumer's other receives wait. Every message arrives twice (attempts 1 and 2) and no more,
// every receive and ack is answered without error and promptly: no TOO_MANY_REQUESTS and no
// stalled connection, however many wake-ups (the waits share one watch per queue, so neither
// the store's pull slots nor a connection's bounds grow with the receives or their wake-ups).
async function concurrentLongPolls(endpoints, producer) {
  console.log('concurrent long polls');
  const topic = 'GrpcPoll';
  const awaitDuration = 5000;
  const invisible = 2000;
  const consumers = [await simpleConsumer(endpoints, 'G_POLL', topic, awaitDuration),
                     await simpleConsumer(endpoints, 'G_POLL', topic, awaitDuration)];
  const n = 400;
  const attempts = new Map();
  const firstAt = new Map();
  const errors = [];
  const late = [];
  const ackMs = [];
  let acked = 0;
  let stop = false;
  const take = async (consumer, m) => {
    const body = m.body.toString();
    attempts.set(body, [...(attempts.get(body) || []), m.deliveryAttempt]);
    if (m.deliveryAttempt === 1) {
      firstAt.set(body, Date.now());
      return;  // left to come back
    }
    late.push(Date.now() - firstAt.get(body) - invisible);
    const t0 = Date.now();
    try {
      await consumer.ack(m);
      ackMs.push(Date.now() - t0);
      acked++;
    } catch (e) {
      errors.push(`ack: ${e.message}`);
    }
  };
  const loop = async consumer => {
    while (!stop) {
      try {
        for (const m of await consumer.receive(4, invisible)) await take(consumer, m);
      } catch (e) {
        errors.push(`receive: ${e.message}`);
        return;
      }
    }
  };
  try {
    const loops = [0, 0, 0, 0, 1, 1, 1, 1].map(i => loop(consumers[i]));
    await sleep(500);  // every receive waiting
    for (let i = 0; i < n; i++) await producer.send({ topic, body: Buffer.from(`poll-${i}`) });
    const end = Date.now() + 30000;
    while (acked < n && Date.now() < end && errors.length === 0) await sleep(100);
    stop = true;
    await Promise.all(loops);
    assert.deepEqual(errors, []);
    assert.equal(acked, n, `${acked} of ${n} messages came back and were acked`);
    for (const [body, seen] of attempts) assert.deepEqual(seen, [1, 2], `${body}: attempts`);
    const worst = Math.max(...late);
    assert.ok(worst < awaitDuration / 2, `a message came back ${worst} ms late`);
    assert.ok(Math.max(...ackMs) < 2000, `an ack took ${Math.max(...ackMs)} ms`);
  } finally {
    stop = true;
    for (const c of consumers) await c.shutdown().catch(() => {});
  }
}

// A message a remoting producer sent is received over gRPC with its tag.
async function remotingToGrpc(broker, endpoints) {
  console.log('remoting to gRPC');
  const topic = 'GrpcFromRemoting';
  await createTopic(broker, topic);
  const consumer = await simpleConsumer(endpoints, 'G_FROM_REMOTING', topic);
  try {
    await sendByRemoting(broker, topic, 'from remoting', 'rt');
    const got = await receiveUntil(consumer, 1, 15000, 5000);
    assert.equal(got.length, 1);
    assert.equal(bodyOf(got[0]), 'from remoting');
    assert.equal(got[0].m.tag, 'rt');
    await consumer.ack(got[0].m);
  } finally {
    await consumer.shutdown().catch(() => {});
  }
}

// A PushConsumer whose listener always fails: the message is retried (backoff 1 s, 2 s) and,
// past the group's retryMaxTimes + 1 attempts, lands in %DLQ%<group>.
async function pushRetryToDlq(broker, endpoints, producer) {
  console.log('push consumer: retries to DLQ');
  const topic = 'GrpcPush';
  const group = 'G_PUSH';
  await createGroup(broker, group, { retryMaxTimes: 2 });
  const attempts = [];
  const consumer = await started(new PushConsumer({
    endpoints, consumerGroup: group, subscriptions: new Map([[topic, '*']]), logger: quiet,
    requestTimeout: 5000, awaitDuration: 2000,
    messageListener: {
      consume(m) {
        attempts.push(m.deliveryAttempt);
        return ConsumeResult.FAILURE;
      },
    },
  }));
  try {
    await sendAll(producer, topic, 1, 'push');
    let dead = [];
    const end = Date.now() + 30000;
    while (dead.length === 0 && Date.now() < end) {
      await sleep(500);
      dead = await pullEverywhere(broker, `%DLQ%${group}`);
    }
    assert.equal(dead.length, 1, `not dead-lettered; attempts seen ${attempts}`);
    assert.equal(dead[0].body.toString(), 'push-0');
    assert.deepEqual(attempts, [1, 2, 3]);
  } finally {
    await consumer.shutdown().catch(() => {});
  }
}

// FIFO: a group marked consumeMessageOrderly gets a message group's next message only after the
// previous one is acked, and each group's messages in send order.
async function fifoGroups(broker, endpoints, producer) {
  console.log('FIFO message groups');
  const topic = 'GrpcFifo';
  const group = 'G_FIFO';
  await createGroup(broker, group, { consumeMessageOrderly: true });
  const consumer = await simpleConsumer(endpoints, group, topic);
  try {
    for (let i = 0; i < 5; i++) {
      for (const g of ['A', 'B']) {
        await producer.send({ topic, tag: 'F', messageGroup: g, body: Buffer.from(`${g}${i}`) });
      }
    }
    const seen = { A: [], B: [] };
    const end = Date.now() + 30000;
    while (seen.A.length + seen.B.length < 10 && Date.now() < end) {
      const batch = await consumer.receive(16, 3000);
      // While this batch is not acked, nothing more of its groups is handed out.
      const groups = new Set(batch.map(m => m.messageGroup));
      if (batch.length > 0) {
        const extra = await consumer.receive(16, 3000);
        for (const m of extra) {
          assert.ok(!groups.has(m.messageGroup),
            `${m.body} handed out while ${[...groups]} in flight`);
          seen[m.messageGroup].push(m.body.toString());
          await consumer.ack(m);
        }
      }
      for (const m of batch) {
        seen[m.messageGroup].push(m.body.toString());
        await consumer.ack(m);
      }
    }
    for (const g of ['A', 'B']) {
      assert.deepEqual(seen[g].sort(), [0, 1, 2, 3, 4].map(i => `${g}${i}`));
    }
  } finally {
    await consumer.shutdown().catch(() => {});
  }
}

// kill -9 with messages in flight: after a restart the acked never return, the unacked do.
async function killNine(broker, endpoints, producer) {
  console.log('kill -9 with messages in flight');
  const topic = 'GrpcKill';
  const group = 'G_KILL';
  let consumer = await simpleConsumer(endpoints, group, topic);
  await sendAll(producer, topic, 8, 'kill');
  const got = await receiveUntil(consumer, 8, 15000, 4000);
  assert.equal(got.length, 8);
  const acked = got.filter(g => Number(g.m.properties.get('idx')) < 4);
  for (const { m } of acked) await consumer.ack(m);
  await consumer.shutdown();
  // Clients with open Telemetry streams would see the broker vanish: none is left open.
  await producer.shutdown();
  await broker.kill9();
  broker.start();
  await broker.waitReady();
  consumer = await simpleConsumer(endpoints, group, topic);
  try {
    const back = await receiveUntil(consumer, 4, 20000, 10000);
    assert.deepEqual(back.map(bodyOf).sort(), ['kill-4', 'kill-5', 'kill-6', 'kill-7']);
    for (const g of back) assert.equal(g.m.deliveryAttempt, 2);
    for (const { m } of back) await consumer.ack(m);
    assert.equal((await receiveUntil(consumer, 1, 5000, 10000)).length, 0, 'an acked one returned');
  } finally {
    await consumer.shutdown().catch(() => {});
  }
}

// The client library leaves its Telemetry streams without an error listener: when kill -9
// resets them, the stream's UNAVAILABLE (14) would end the process. Only that is let pass.
process.on('uncaughtException', e => {
  if (e && e.code === 14) return;
  console.error(e);
  process.exit(1);
});

async function main() {
  const { broker, endpoints } = await startBroker(process.argv[2]);
  let producer;
  try {
    for (const t of ['GrpcPop', 'GrpcBatchAck', 'GrpcPush', 'GrpcKill', 'GrpcPoll']) {
      await createTopic(broker, t);
    }
    await createTopic(broker, 'GrpcFifo', '+message.type=FIFO');
    producer = await started(new Producer({ endpoints, logger: quiet, requestTimeout: 5000 }));
    await receiveAckExpire(broker, endpoints, producer);
    await batchAck(endpoints, producer);
    await remotingToGrpc(broker, endpoints);
    await pushRetryToDlq(broker, endpoints, producer);
    await fifoGroups(broker, endpoints, producer);
    await concurrentLongPolls(endpoints, producer);
    await killNine(broker, endpoints, producer);
    console.log('grpc_consumer: 8 cases passed');
  } catch (e) {
    console.error(`broker output:\n${broker.output}`);
    throw e;
  } finally {
    if (producer) await producer.shutdown().catch(() => {});
    await broker.stop();
  }
}

main().then(() => process.exit(0), e => {
  console.error(e);
  process.exit(1);
});
