'use strict';
// b. delay levels with the short table run.sh configures (URINGMQ_DELAY_LEVELS): each delayed
// message is received no earlier than send time + its level's delay (5 ms slack for clock
// granularity) and less than 3 s after that; a level above the table's maximum behaves as the
// maximum.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { env, sleep } = require('./broker');
const C = require('./clients');

C.finish();

const EARLY_SLACK_MS = 5;
const LATE_SLACK_MS = 3000;

test('delay levels 1, 2, 3, max and above max are honoured', { timeout: 120000 }, async () => {
  const table = env().delayLevels;
  const maxLevel = table.length;
  const levels = [1, 2, 3, maxLevel, maxLevel + 12];
  const delayOf = level => table[Math.min(level, maxLevel) - 1];

  const topic = await C.newTopic('T_delay');
  const prod = await C.producer();
  const { got, cons } = await C.readyConsumer(topic, prod);

  const sent = new Map();
  await Promise.all(levels.map(async (level, i) => {
    const key = `${topic}-L${level}-${i}`;
    const msg = new C.Message(topic, 'delayed', `delayed level ${level}`);
    msg.keys = [key];
    msg.delayTimeLevel = level;
    const sendAt = Date.now();
    const r = await prod.send(msg);
    assert.equal(r.sendStatus, 'SEND_OK', `send level ${level}: ${JSON.stringify(r)}`);
    sent.set(key, {
      dueAt: sendAt + delayOf(level),
      body: `delayed level ${level}`,
      check: m => [
        ...(m.tags !== 'delayed' ? [`tags ${m.tags}`] : []),
        ...('DELAY' in m.properties
          ? [`DELAY property still present (${m.properties.DELAY})`] : []),
        // As RocketMQ's messageTimeup: the real queue stays named, uringmq's markers do not.
        ...(m.properties.REAL_TOPIC !== topic ? [`REAL_TOPIC ${m.properties.REAL_TOPIC}`] : []),
        ...C.internalProperties(m.properties),
      ],
    });
  }));
  await C.expectDeferred(got, sent, topic, EARLY_SLACK_MS, LATE_SLACK_MS);
  await C.close(cons);
  await C.close(prod);
});

test('messages without a delay are not held back', { timeout: 60000 }, async () => {
  const topic = await C.newTopic('T_nodelay');
  const prod = await C.producer();
  const got = new C.Collector();
  const cons = C.consumer();
  cons.subscribe(topic, '*', async msg => { got.push(C.summary(msg)); });
  await cons.ready();
  await prod.send(new C.Message(topic, 'probe', 'probe'));
  await got.waitCount(1, 60000, 'the probe message');
  await sleep(500);
  const sendAt = Date.now();
  const msg = new C.Message(topic, 'now', 'now');
  msg.delayTimeLevel = 0;
  await prod.send(msg);
  await got.waitCount(2, 10000, 'the level-0 message');
  const elapsed = got.list[1].at - sendAt;
  console.log(`level 0: received after ${elapsed} ms`);
  assert.ok(elapsed < 1000,
    `level 0 message took ${elapsed} ms (a held pull must wake on new messages)`);
  await C.close(cons);
  await C.close(prod);
});
