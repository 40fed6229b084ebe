'use strict';
// c. per-queue order. A queue is (brokerName, queueId), and each shard of the broker is one
// broker, so the topic's queues are spread over several brokers with the same queue ids.
// ali-ons 3.12.0 has no selector argument on send(), and its `msg.shardingKey` picks a queue id
// (md5(shardingKey) % number of distinct queue ids) on any broker, so it cannot pin a queue: the
// test sends each queue's messages with producer.sendKernelImpl(msg, queue), the method send()
// itself ends in, one after the other (the queues concurrently), each carrying its queue and its
// per-queue sequence number, and checks that the consumer sees every queue's sequence in order.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { sleep } = require('./broker');
const C = require('./clients');

C.finish();

const PER_QUEUE = 40;

test('messages sent to chosen queues are consumed in per-queue order',
  { timeout: 180000 }, async () => {
  const topic = await C.newTopic('T_order');
  const prod = await C.producer();
  // Create the topic and learn its writable queues.
  const first = await prod.send(new C.Message(topic, 'init', 'init'));
  assert.equal(first.sendStatus, 'SEND_OK');
  const info = prod._topicPublishInfoTable.get(topic);
  const queues = info.messageQueueList;
  const brokers = new Set(queues.map(mq => mq.brokerName));
  assert.ok(queues.length >= 2, `topic has ${queues.length} writable queues; need >= 2`);
  assert.ok(brokers.size >= 2, `topic is on ${brokers.size} broker(s); the broker has 2 shards`);
  const nameOf = mq => `${mq.brokerName}:${mq.queueId}`;

  await Promise.all(queues.map(async mq => {
    const q = nameOf(mq);
    for (let seq = 0; seq < PER_QUEUE; seq++) {
      const msg = new C.Message(topic, 'ordered', JSON.stringify({ q, id: mq.queueId, seq }));
      msg.keys = [`${topic}-q${q}-s${seq}`];
      const r = await prod.sendKernelImpl(msg, mq);
      assert.equal(r.sendStatus, 'SEND_OK');
      assert.equal(nameOf(r.messageQueue), q, 'sent to the chosen queue');
    }
  }));

  const got = new C.Collector();
  const cons = C.consumer();
  cons.subscribe(topic, 'ordered', async msg => { got.push(C.summary(msg)); });
  await cons.ready();
  const total = PER_QUEUE * queues.length;
  await got.waitCount(total, 90000, `${total} ordered messages`);
  await sleep(1500);

  const problems = [];
  const lastSeq = new Map();
  const lastOffset = new Map();
  for (const m of got.list) {
    const { q, id, seq } = JSON.parse(m.body);
    if (m.queueId !== id) {
      problems.push(`seq ${seq} of queue ${q} arrived with queueId ${m.queueId}`);
    }
    const prev = lastSeq.has(q) ? lastSeq.get(q) : -1;
    if (seq !== prev + 1) problems.push(`queue ${q}: seq ${seq} after ${prev}`);
    lastSeq.set(q, seq);
    const prevOff = lastOffset.has(q) ? lastOffset.get(q) : -1;
    if (!(m.queueOffset > prevOff)) {
      problems.push(`queue ${q}: offset ${m.queueOffset} after ${prevOff}`);
    }
    lastOffset.set(q, m.queueOffset);
  }
  for (const q of queues.map(nameOf)) {
    if (lastSeq.get(q) !== PER_QUEUE - 1) problems.push(`queue ${q}: last seq ${lastSeq.get(q)}`);
  }
  assert.equal(got.list.length, total, 'message count (duplicates?)');
  assert.deepEqual(problems.slice(0, 20), []);
  await C.close(cons);
  await C.close(prod);
});
