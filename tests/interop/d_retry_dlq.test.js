'use strict';
// d. consumer retry and DLQ. A handler that throws makes ali-ons send the message back
// (CONSUMER_SEND_MSG_BACK, delayLevel 0): the broker re-stores it in %RETRY%<group> at level
// 3 + reconsumeTimes, and ali-ons delivers it again with reconsumeTimes + 1. With
// maxReconsumeTimes 2, a message that always fails is delivered 3 times (reconsumeTimes 0, 1, 2)
// and then lands in %DLQ%<group>, which the test reads with raw PULL_MESSAGE requests.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { env, sleep } = require('./broker');
const C = require('./clients');
const { RawClient, pullAll } = require('./remoting');

C.finish();

const EARLY_SLACK_MS = 5;
const LATE_SLACK_MS = 3000;

test('a failed message is redelivered from %RETRY% with reconsumeTimes 1 after the level-3 delay', { timeout: 120000 }, async () => {
  const levels = env().delayLevels;
  const topic = C.uniqueName('T_retry');
  const group = C.uniqueName('CG_retry');
  const prod = await C.producer();
  const got = new C.Collector();
  const cons = C.consumer({ group, options: { maxReconsumeTimes: 5 } });
  cons.subscribe(topic, '*', async msg => {
    const s = C.summary(msg);
    got.push(s);
    if (s.body === 'fail-once' && s.reconsumeTimes === 0) throw new Error('intentional failure');
  });
  await cons.ready();
  const m1 = new C.Message(topic, 'retry', 'fail-once');
  m1.keys = [`${topic}-once`];
  m1.properties.custom = 'kept';
  const r = await prod.send(m1);
  assert.equal(r.sendStatus, 'SEND_OK');
  await got.waitCount(2, 60000, 'the first delivery and the retry');
  await sleep(1500);
  const [d0, d1, ...more] = got.list;
  assert.equal(more.length, 0, `extra deliveries: ${JSON.stringify(more)}`);
  assert.equal(d0.reconsumeTimes, 0);
  assert.equal(d1.reconsumeTimes, 1, 'reconsumeTimes of the redelivery');
  assert.equal(d1.body, 'fail-once');
  assert.equal(d1.topic, topic, 'ali-ons restores the topic from RETRY_TOPIC');
  assert.equal(d1.tags, 'retry');
  assert.equal(d1.keys, `${topic}-once`);
  assert.equal(d1.properties.custom, 'kept');
  assert.equal(d1.properties.RETRY_TOPIC, topic);
  assert.ok(d1.properties.ORIGIN_MESSAGE_ID, 'ORIGIN_MESSAGE_ID set on the retry copy');
  assert.equal(d1.properties.ORIGIN_MESSAGE_ID, d0.msgId, 'ORIGIN_MESSAGE_ID = the original msgId');
  const delay = levels[2];
  const gap = d1.at - d0.at;
  console.log(`retry redelivered ${gap} ms after the failure (level 3 = ${delay} ms)`);
  assert.ok(gap >= delay - EARLY_SLACK_MS, `redelivered after ${gap} ms < level-3 delay ${delay} ms`);
  assert.ok(gap < delay + LATE_SLACK_MS, `redelivered after ${gap} ms >= ${delay} + ${LATE_SLACK_MS} ms`);
  await C.close(cons);
  await C.close(prod);
});

test('a message that always fails goes to %DLQ%<group> after maxReconsumeTimes', { timeout: 180000 }, async () => {
  const levels = env().delayLevels;
  const topic = C.uniqueName('T_dlq');
  const group = C.uniqueName('CG_dlq');
  const maxReconsumeTimes = 2;
  const prod = await C.producer();
  const got = new C.Collector();
  const cons = C.consumer({ group, options: { maxReconsumeTimes } });
  cons.subscribe(topic, '*', async msg => {
    const s = C.summary(msg);
    got.push(s);
    if (s.body.startsWith('always-fail')) throw new Error('intentional failure');
  });
  await cons.ready();
  const m = new C.Message(topic, 'doomed', 'always-fail body');
  m.keys = [`${topic}-doomed`];
  const ok = new C.Message(topic, 'fine', 'fine body');
  ok.keys = [`${topic}-fine`];
  assert.equal((await prod.send(m)).sendStatus, 'SEND_OK');
  assert.equal((await prod.send(ok)).sendStatus, 'SEND_OK');
  // Deliveries at reconsumeTimes 0, 1 (level 3), 2 (level 4); then the DLQ.
  const budget = levels[2] + levels[3] + 2 * LATE_SLACK_MS + 20000;
  await got.waitFor(l => l.filter(x => x.body === 'always-fail body').length >= maxReconsumeTimes + 1,
    budget, `${maxReconsumeTimes + 1} deliveries of the failing message`);

  const dlqTopic = `%DLQ%${group}`;
  const raw = await RawClient.connect(env().brokerAddr);
  let dlq;
  const deadline = Date.now() + 15000;
  for (;;) {
    dlq = await pullAll(raw, dlqTopic, `${group}_dlq_reader`);
    if (dlq.messages.length > 0 || Date.now() > deadline) break;
    await sleep(250);
  }
  await sleep(Math.max(levels[4], 1000) + 1500); // a (wrong) further redelivery would show up here
  raw.destroy();

  const fails = got.list.filter(x => x.body === 'always-fail body');
  console.log(`failing message delivered ${fails.length} times (reconsumeTimes ${fails.map(f => f.reconsumeTimes).join(',')}); ` +
    `DLQ route ${JSON.stringify(dlq.route && dlq.route.queueDatas)}; DLQ pulls ${JSON.stringify(dlq.responses)}`);
  assert.deepEqual(fails.map(f => f.reconsumeTimes), [0, 1, 2], 'deliveries of the failing message');
  assert.equal(got.list.filter(x => x.body === 'fine body').length, 1, 'the good message once');
  assert.ok(dlq.route, `route of ${dlqTopic}: code ${dlq.routeResp.code} ${dlq.routeResp.remark}`);
  assert.equal(dlq.messages.length, 1, `messages in ${dlqTopic}`);
  const d = dlq.messages[0];
  assert.equal(d.body.toString(), 'always-fail body');
  assert.equal(d.topic, dlqTopic, 'stored topic of the DLQ message');
  assert.equal(d.properties.RETRY_TOPIC, topic);
  assert.equal(d.properties.KEYS, `${topic}-doomed`);
  assert.equal(d.properties.TAGS, 'doomed');
  assert.equal(d.reconsumeTimes, maxReconsumeTimes + 1, 'reconsumeTimes of the DLQ copy');
  assert.equal(d.sizeMismatch, undefined);
  await C.close(cons);
  await C.close(prod);
});
