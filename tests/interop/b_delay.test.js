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

  const topic = C.uniqueName('T_delay');
  const prod = await C.producer();
  const got = new C.Collector();
  const cons = C.consumer();
  cons.subscribe(topic, '*', async msg => { got.push(C.summary(msg)); });
  await cons.ready();

  // Warm up: the consumer owns its queues and is long-polling before the timed sends.
  const probe = new C.Message(topic, 'probe', 'probe');
  probe.keys = [`${topic}-probe`];
  await prod.send(probe);
  await got.waitFor(l => l.some(m => m.keys === `${topic}-probe`), 60000, 'the probe message');
  await sleep(500);

  const sent = new Map();
  await Promise.all(levels.map(async (level, i) => {
    const key = `${topic}-L${level}-${i}`;
    const msg = new C.Message(topic, 'delayed', `delayed level ${level}`);
    msg.keys = [key];
    msg.delayTimeLevel = level;
    const sendAt = Date.now();
    const r = await prod.send(msg);
    assert.equal(r.sendStatus, 'SEND_OK', `send level ${level}: ${JSON.stringify(r)}`);
    sent.set(key, { level, sendAt, delay: delayOf(level) });
  }));
  const longest = Math.max(...levels.map(delayOf));
  await got.waitFor(l => [...sent.keys()].every(k => l.some(m => m.keys === k)),
    longest + LATE_SLACK_MS + 10000, 'all delayed messages');
  await sleep(1000);

  const report = [];
  const problems = [];
  for (const [key, s] of sent) {
    const recv = got.list.filter(m => m.keys === key);
    if (recv.length !== 1) problems.push(`${key}: received ${recv.length} times`);
    const m = recv[0];
    const elapsed = m.at - s.sendAt;
    report.push(`level ${s.level} (delay ${s.delay} ms): received after ${elapsed} ms`);
    if (elapsed < s.delay - EARLY_SLACK_MS) problems.push(`level ${s.level}: ${elapsed} ms < delay ${s.delay} ms (early)`);
    if (elapsed >= s.delay + LATE_SLACK_MS) problems.push(`level ${s.level}: ${elapsed} ms >= delay ${s.delay} + ${LATE_SLACK_MS} ms (late)`);
    if (m.topic !== topic) problems.push(`level ${s.level}: topic ${m.topic}`);
    if (m.body !== `delayed level ${s.level}`) problems.push(`level ${s.level}: body ${m.body}`);
    if (m.tags !== 'delayed') problems.push(`level ${s.level}: tags ${m.tags}`);
    if ('DELAY' in m.properties) problems.push(`level ${s.level}: DELAY property still present on delivery (${m.properties.DELAY})`);
  }
  console.log(report.join('\n'));
  assert.deepEqual(problems, [], report.join('; '));
  await C.close(cons);
  await C.close(prod);
});

test('messages without a delay are not held back', { timeout: 60000 }, async () => {
  const topic = C.uniqueName('T_nodelay');
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
  assert.ok(elapsed < 1000, `level 0 message took ${elapsed} ms (a held pull must wake on new messages)`);
  await C.close(cons);
  await C.close(prod);
});
