'use strict';
// a. produce and consume: 50 messages with tags and keys; a CONSUME_FROM_FIRST_OFFSET consumer
// receives each exactly once with its body, tags and keys; a 'TagA || TagB' subscription receives
// exactly the TagA and TagB messages.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { sleep } = require('./broker');
const C = require('./clients');

C.finish();

const TAGS = ['TagA', 'TagB', 'TagC'];
const N = 50;

test('50 messages with tags and keys are consumed exactly once, intact',
  { timeout: 120000 }, async () => {
  const topic = await C.newTopic('T_a');
  const prod = await C.producer();
  const sent = new Map(); // key -> { tag, body, result }
  for (let i = 0; i < N; i++) {
    const tag = TAGS[i % TAGS.length];
    const key = `${topic}-k${i}`;
    const body = `body ${i} of ${topic} \u00e9\u4e2d ${'x'.repeat(i * 7)}`;
    const msg = new C.Message(topic, tag, body);
    msg.keys = [key, `second-${i}`];
    const result = await prod.send(msg);
    assert.equal(result.sendStatus, 'SEND_OK', `send ${i}: ${JSON.stringify(result)}`);
    assert.equal(typeof result.msgId, 'string');
    sent.set(key, { tag, body, result });
  }
  // Sanity of the send results: queue offsets are unique per queue (a queue is brokerName and
  // queueId: each shard is one broker).
  const perQueue = new Map();
  for (const { result } of sent.values()) {
    const q = `${result.messageQueue.brokerName}:${result.messageQueue.queueId}`;
    const seen = perQueue.get(q) || new Set();
    assert.ok(!seen.has(result.queueOffset), `queue ${q} offset ${result.queueOffset} given twice`);
    seen.add(result.queueOffset);
    perQueue.set(q, seen);
  }

  const got = new C.Collector();
  const cons = C.consumer();
  cons.subscribe(topic, '*', async msg => { got.push(C.summary(msg)); });
  await cons.ready();
  await got.waitCount(N, 60000, `${N} messages on ${topic}`);
  await sleep(2000); // duplicates would arrive in this window
  const counts = new Map();
  const problems = [];
  const check = (ok, what) => { if (!ok) problems.push(what); };
  for (const m of got.list) {
    const key = m.keys.split(' ')[0];
    counts.set(key, (counts.get(key) || 0) + 1);
    const s = sent.get(key);
    assert.ok(s, `unexpected message keys=${m.keys} body=${m.body.slice(0, 60)}`);
    check(m.topic === topic, `${key}: topic ${m.topic}`);
    check(m.body === s.body, `${key}: body ${JSON.stringify(m.body.slice(0, 40))}`);
    check(m.tags === s.tag, `${key}: tags ${m.tags} (sent ${s.tag})`);
    check(m.keys === `${key} second-${key.split('-k')[1]}`, `${key}: keys ${m.keys}`);
    check(m.reconsumeTimes === 0, `${key}: reconsumeTimes ${m.reconsumeTimes}`);
    check(m.queueId === Number(s.result.messageQueue.queueId),
      `${key}: queueId ${m.queueId}, send result ${s.result.messageQueue.queueId}`);
    check(Number(m.queueOffset) === Number(s.result.queueOffset),
      `${key}: queueOffset ${m.queueOffset}, send result ${s.result.queueOffset}`);
    check(m.msgId === s.result.msgId,
      `${key}: consumed msgId ${m.msgId} != send result msgId ${s.result.msgId}`);
  }
  assert.deepEqual(problems, [], `${problems.length} mismatches`);
  const dups = [...counts].filter(([, n]) => n > 1);
  assert.deepEqual(dups, [], 'messages received more than once');
  assert.equal(counts.size, N, 'distinct messages received');
  await C.close(cons);
  await C.close(prod);
});

test("a 'TagA || TagB' subscription receives only TagA and TagB, all of them",
  { timeout: 120000 }, async () => {
  const topic = await C.newTopic('T_tag');
  const prod = await C.producer();
  const want = new Set();
  for (let i = 0; i < 30; i++) {
    const tag = TAGS[i % TAGS.length];
    const key = `${topic}-k${i}`;
    const msg = new C.Message(topic, tag, `tagged ${i}`);
    msg.keys = [key];
    const r = await prod.send(msg);
    assert.equal(r.sendStatus, 'SEND_OK');
    if (tag !== 'TagC') want.add(key);
  }
  const got = new C.Collector();
  const cons = C.consumer();
  cons.subscribe(topic, 'TagA || TagB', async msg => { got.push(C.summary(msg)); });
  await cons.ready();
  await got.waitCount(want.size, 60000, `${want.size} TagA/TagB messages`);
  await sleep(2000);
  const tags = got.list.map(m => m.tags);
  assert.ok(tags.every(t => t === 'TagA' || t === 'TagB'), `tags received: ${tags.join(',')}`);
  const keys = got.list.map(m => m.keys);
  assert.equal(new Set(keys).size, keys.length, 'duplicates');
  assert.deepEqual(new Set(keys), want);
  await C.close(cons);
  await C.close(prod);
});
