'use strict';
// c. per-queue order. ali-ons 3.12.0 has no selector argument on send(); it picks the queue from
// `msg.shardingKey` (TopicPublishInfo#selectOneMessageQueue: md5(shardingKey).readUInt32BE() %
// number of distinct writable queue ids). That cannot select queue 0 (`queueIds[i] || ''` turns
// id 0 into "no constraint"), so queue 0 is sent to with producer.sendKernelImpl(msg, queue), the
// method send() itself ends in. The test sends each queue's messages one after the other (the
// queues concurrently), each carrying its per-queue sequence number, and checks that the consumer
// sees every queue's sequence in order.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { sleep } = require('./broker');
const C = require('./clients');

C.finish();

const PER_QUEUE = 40;

function queueIndexOf(key, n) {
  return crypto.createHash('md5').update(key).digest().readUInt32BE() % n;
}

test('messages sent to chosen queues are consumed in per-queue order',
  { timeout: 180000 }, async () => {
  const topic = C.uniqueName('T_order');
  const prod = await C.producer();
  // Create the topic and learn its writable queues.
  const first = await prod.send(new C.Message(topic, 'init', 'init'));
  assert.equal(first.sendStatus, 'SEND_OK');
  const info = prod._topicPublishInfoTable.get(topic);
  const queueIds = [...new Set(info.messageQueueList.map(q => q.queueId))];
  assert.ok(queueIds.length >= 2, `topic has ${queueIds.length} writable queues; need >= 2`);

  // One sharding key per queue id (none for queue 0, see above).
  const keyFor = new Map();
  for (let i = 0; keyFor.size < queueIds.length && i < 100000; i++) {
    const key = `shard-${i}`;
    const q = queueIds[queueIndexOf(key, queueIds.length)];
    if (!keyFor.has(q)) keyFor.set(q, key);
  }
  assert.equal(keyFor.size, queueIds.length);
  const queueObj = q => info.messageQueueList.find(mq => mq.queueId === q);

  await Promise.all(queueIds.map(async q => {
    for (let seq = 0; seq < PER_QUEUE; seq++) {
      const msg = new C.Message(topic, 'ordered', JSON.stringify({ q, seq }));
      msg.keys = [`${topic}-q${q}-s${seq}`];
      let r;
      if (q === 0) {
        r = await prod.sendKernelImpl(msg, queueObj(0));
      } else {
        msg.shardingKey = keyFor.get(q);
        r = await prod.send(msg);
      }
      assert.equal(r.sendStatus, 'SEND_OK');
      assert.equal(Number(r.messageQueue.queueId), q,
        'ali-ons sent to the queue the sharding key selects');
    }
  }));

  const got = new C.Collector();
  const cons = C.consumer();
  cons.subscribe(topic, 'ordered', async msg => { got.push(C.summary(msg)); });
  await cons.ready();
  const total = PER_QUEUE * queueIds.length;
  await got.waitCount(total, 90000, `${total} ordered messages`);
  await sleep(1500);

  const problems = [];
  const lastSeq = new Map();
  const lastOffset = new Map();
  for (const m of got.list) {
    const { q, seq } = JSON.parse(m.body);
    if (m.queueId !== q) {
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
  for (const q of queueIds) {
    if (lastSeq.get(q) !== PER_QUEUE - 1) problems.push(`queue ${q}: last seq ${lastSeq.get(q)}`);
  }
  assert.equal(got.list.length, total, 'message count (duplicates?)');
  assert.deepEqual(problems.slice(0, 20), []);
  await C.close(cons);
  await C.close(prod);
});
