'use strict';
// d. consumer retry and DLQ. A handler that throws makes ali-ons send the message back
// (CONSUMER_SEND_MSG_BACK, delayLevel 0): the broker re-stores it in %RETRY%<group> at level
// 3 + reconsumeTimes, and ali-ons delivers it again with reconsumeTimes + 1. With
// maxReconsumeTimes 2, a message that always fails is delivered 3 times (reconsumeTimes 0, 1, 2)
// and then lands in %DLQ%<group>, which the test reads with raw PULL_MESSAGE requests from every
// broker of its route (each shard is one broker; the copy stays on the broker it was sent to).

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { env, sleep } = require('./broker');
const C = require('./clients');
const { RawClient, pullAll } = require('./remoting');

C.finish();

const EARLY_SLACK_MS = 5;
const LATE_SLACK_MS = 3000;

test('failed messages are redelivered from %RETRY% with reconsumeTimes 1 after the level-3 delay',
  { timeout: 120000 }, async () => {
  const levels = env().delayLevels;
  const topic = await C.newTopic('T_retry');
  const group = C.uniqueName('CG_retry');
  const N = 8; // sent round-robin: every queue (and so every shard) holds some
  const prod = await C.producer();
  const got = new C.Collector();
  const cons = C.consumer({ group, options: { maxReconsumeTimes: 5 } });
  cons.subscribe(topic, '*', async msg => {
    const s = C.summary(msg);
    got.push(s);
    if (s.body.startsWith('fail-once') && s.reconsumeTimes === 0) {
      throw new Error('intentional failure');
    }
  });
  await cons.ready();
  const errorsBefore = C.clientErrors.length;
  for (let i = 0; i < N; i++) {
    const m = new C.Message(topic, 'retry', `fail-once ${i}`);
    m.keys = [`${topic}-once-${i}`];
    m.properties.custom = 'kept';
    const r = await prod.send(m);
    assert.equal(r.sendStatus, 'SEND_OK');
  }
  await got.waitCount(2 * N, 60000, 'the first deliveries and the retries');
  await sleep(1500);
  assert.equal(got.list.length, 2 * N, `extra deliveries: ${got.list.length - 2 * N}`);

  const delay = levels[2];
  const problems = [];
  const report = [];
  for (let i = 0; i < N; i++) {
    const key = `${topic}-once-${i}`;
    const ds = got.list.filter(m => m.keys === key);
    if (ds.length !== 2) { problems.push(`${key}: ${ds.length} deliveries`); continue; }
    const [d0, d1] = ds;
    const gap = d1.at - d0.at;
    const fallback = 'RECONSUME_TIME' in d1.properties; // ali-ons' own resend after a failed 36
    report.push(`#${i} queue ${d0.queueId} commitLogOffset ${d0.commitLogOffset}: ` +
      `redelivered after ${gap} ms` +
      (fallback ? ' via the ali-ons client-side fallback (CONSUMER_SEND_MSG_BACK failed)' : ''));
    const check = (ok, what) => {
      if (!ok) problems.push(`${key} (queue ${d0.queueId}, msgId ${d0.msgId}): ${what}`);
    };
    check(!fallback,
      'CONSUMER_SEND_MSG_BACK failed; ali-ons resent the message itself with DELAY=0 ' +
      `(properties ${JSON.stringify(d1.properties)})`);
    check(d0.reconsumeTimes === 0, `first reconsumeTimes ${d0.reconsumeTimes}`);
    check(d1.reconsumeTimes === 1, `redelivery reconsumeTimes ${d1.reconsumeTimes}`);
    check(d1.body === `fail-once ${i}`, `body ${d1.body}`);
    check(d1.topic === topic, `topic ${d1.topic} (ali-ons restores it from RETRY_TOPIC)`);
    check(d1.tags === 'retry', `tags ${d1.tags}`);
    check(d1.properties.custom === 'kept', 'user property lost');
    check(d1.properties.RETRY_TOPIC === topic, `RETRY_TOPIC ${d1.properties.RETRY_TOPIC}`);
    check(d1.properties.ORIGIN_MESSAGE_ID === d0.msgId,
      `ORIGIN_MESSAGE_ID ${d1.properties.ORIGIN_MESSAGE_ID} != original msgId ${d0.msgId}`);
    check(gap >= delay - EARLY_SLACK_MS, `redelivered after ${gap} ms < level-3 delay ${delay} ms`);
    check(gap < delay + LATE_SLACK_MS,
      `redelivered after ${gap} ms >= ${delay} + ${LATE_SLACK_MS} ms`);
  }
  console.log(report.join('\n'));
  const errors = C.clientErrors.slice(errorsBefore).map(e => e.message)
    .filter(m => !m.includes('intentional failure')).slice(0, 5);
  assert.deepEqual(problems, [], `ali-ons errors: ${JSON.stringify(errors)}`);
  await C.close(cons);
  await C.close(prod);
});

test('a message that always fails goes to %DLQ%<group> after maxReconsumeTimes',
  { timeout: 180000 }, async () => {
  const levels = env().delayLevels;
  const topic = await C.newTopic('T_dlq');
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
  const doomed = await prod.send(m);
  assert.equal(doomed.sendStatus, 'SEND_OK');
  assert.equal((await prod.send(ok)).sendStatus, 'SEND_OK');
  // Deliveries at reconsumeTimes 0, 1 (level 3), 2 (level 4); then the DLQ.
  const budget = levels[2] + levels[3] + 2 * LATE_SLACK_MS + 20000;
  await got.waitFor(
    l => l.filter(x => x.body === 'always-fail body').length >= maxReconsumeTimes + 1,
    budget, `${maxReconsumeTimes + 1} deliveries of the failing message`);

  const dlqTopic = `%DLQ%${group}`;
  // Every broker of the route, each read through its own address: { broker -> messages }.
  const pullEveryBroker = async () => {
    const raw = await RawClient.connect(env().brokerAddr);
    const first = await pullAll(raw, dlqTopic, `${group}_dlq_reader`);
    raw.destroy();
    const out = { route: first.route, routeResp: first.routeResp, messages: [], responses: [],
      brokers: {} };
    for (const b of (first.route ? first.route.brokerDatas : [])) {
      const c = await RawClient.connect(b.brokerAddrs['0']);
      const r = await pullAll(c, dlqTopic, `${group}_dlq_reader`);
      c.destroy();
      out.brokers[b.brokerName] = r.messages.length;
      out.messages.push(...r.messages);
      out.responses.push(...r.responses);
    }
    return out;
  };
  let dlq;
  const deadline = Date.now() + 15000;
  for (;;) {
    dlq = await pullEveryBroker();
    if (dlq.messages.length > 0 || Date.now() > deadline) break;
    await sleep(250);
  }
  await sleep(Math.max(levels[4], 1000) + 1500); // a (wrong) further redelivery would show up here

  const fails = got.list.filter(x => x.body === 'always-fail body');
  console.log(`failing message delivered ${fails.length} times ` +
    `(reconsumeTimes ${fails.map(f => f.reconsumeTimes).join(',')}); ` +
    `DLQ route ${JSON.stringify(dlq.route && dlq.route.queueDatas)}; ` +
    `DLQ pulls ${JSON.stringify(dlq.responses)}`);
  assert.deepEqual(fails.map(f => f.reconsumeTimes), [0, 1, 2],
    'deliveries of the failing message');
  assert.equal(got.list.filter(x => x.body === 'fine body').length, 1, 'the good message once');
  assert.ok(dlq.route, `route of ${dlqTopic}: code ${dlq.routeResp.code} ${dlq.routeResp.remark}`);
  assert.equal(dlq.messages.length, 1, `messages in ${dlqTopic}`);
  assert.deepEqual(Object.entries(dlq.brokers).filter(([, n]) => n > 0).map(([b]) => b),
    [doomed.messageQueue.brokerName], 'the DLQ copy is on the broker the message was sent to');
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
