'use strict';
// h. timed messages through ali-ons, which passes message properties untouched:
// RocketMQ 5's TIMER_DELIVER_MS (set in msg.properties) and Aliyun's __STARTDELIVERTIME (set
// with msg.setStartDeliverTime) with deliver times 1.5 s to 4 s ahead at odd milliseconds. Each
// is received exactly once, no earlier than its deliver time (5 ms slack for the two clocks'
// granularity: client and broker share this machine's clock) and less than 3 s after it.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const C = require('./clients');

C.finish();

const EARLY_SLACK_MS = 5;
const LATE_SLACK_MS = 3000;

test('TIMER_DELIVER_MS and __STARTDELIVERTIME are delivered on time',
  { timeout: 120000 }, async () => {
  const topic = await C.newTopic('T_timer');
  const prod = await C.producer();
  const { got, cons } = await C.readyConsumer(topic, prod);

  const sent = new Map();
  const cases = [];
  for (let i = 0; i < 6; i++) {
    const how = i % 2 === 0 ? 'TIMER_DELIVER_MS' : '__STARTDELIVERTIME';
    cases.push({ how, aheadMs: 1500 + i * 503 });
  }
  await Promise.all(cases.map(async (c, i) => {
    const key = `${topic}-${c.how}-${i}`;
    const msg = new C.Message(topic, 'timed', `timed ${i}`);
    msg.keys = [key];
    const deliverAt = Date.now() + c.aheadMs;
    if (c.how === 'TIMER_DELIVER_MS') {
      msg.properties.TIMER_DELIVER_MS = String(deliverAt);
    } else {
      msg.setStartDeliverTime(deliverAt);
    }
    const r = await prod.send(msg);
    assert.equal(r.sendStatus, 'SEND_OK', `send ${key}: ${JSON.stringify(r)}`);
    sent.set(key, {
      dueAt: deliverAt,
      body: `timed ${i}`,
      check: m => [
        ...('TIMER_DELIVER_MS' in m.properties ? ['TIMER_DELIVER_MS still present'] : []),
        ...C.internalProperties(m.properties),
      ],
    });
  }));
  await C.expectDeferred(got, sent, topic, EARLY_SLACK_MS, LATE_SLACK_MS);
  await C.close(cons);
  await C.close(prod);
});

test('a deliver time beyond timerMaxDelaySec is refused', { timeout: 60000 }, async () => {
  const topic = await C.newTopic('T_timer_far');
  const prod = await C.producer();
  const msg = new C.Message(topic, 'timed', 'too far');
  msg.properties.TIMER_DELIVER_MS = String(Date.now() + 40 * 86400 * 1000);
  await assert.rejects(prod.send(msg));
  await C.close(prod);
});
