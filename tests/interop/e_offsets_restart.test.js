'use strict';
// e. committed consumer offsets survive a clean broker restart. Runs its own broker (fresh ports
// and store under URINGMQ_TMP) so that restarting it does not disturb the shared one.
// A consumer reads batch 1 and commits (persistConsumerOffsetInterval 1 s, and close()); the
// broker is stopped with SIGTERM (exit code 0) and restarted on the same store; batch 2 is
// produced; a new consumer of the same group with the default CONSUME_FROM_LAST_OFFSET must get
// all of batch 2 and nothing of batch 1.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { env, makeConf, startBroker, sleep } = require('./broker');
const C = require('./clients');

let broker;
C.finish(async () => {
  if (broker && broker.running) await broker.stop();
});

async function produce(namesrv, topic, tag, n) {
  const prod = await C.producer({ namesrv });
  const keys = [];
  for (let i = 0; i < n; i++) {
    const key = `${topic}-${tag}-${i}`;
    const msg = new C.Message(topic, tag, `${tag} ${i}`);
    msg.keys = [key];
    const r = await prod.send(msg);
    assert.equal(r.sendStatus, 'SEND_OK');
    keys.push(key);
  }
  await C.close(prod);
  return keys;
}

test('committed offsets survive SIGTERM and restart', { timeout: 240000 }, async () => {
  const dir = path.join(env().tmp, C.uniqueName('e_restart'));
  const { file } = await makeConf(dir, { flushDiskType: 'ASYNC_FLUSH' });
  broker = await startBroker({ confFile: file });
  const namesrv = broker.namesrv;
  const topic = await C.newTopic('T_restart', broker.brokerAddr);
  const group = C.uniqueName('CG_restart');

  const batch1 = await produce(namesrv, topic, 'b1', 24);
  const got1 = new C.Collector();
  const c1 = C.consumer({ namesrv, group, options: { persistConsumerOffsetInterval: 1000 } });
  c1.subscribe(topic, '*', async msg => { got1.push(C.summary(msg)); });
  await c1.ready();
  await got1.waitCount(batch1.length, 60000, 'batch 1');
  await sleep(2500); // two persist rounds
  await C.close(c1); // close() persists once more
  assert.deepEqual(new Set(got1.list.map(m => m.keys)), new Set(batch1));

  const code = await broker.stop();
  assert.equal(code, 0, `broker exit status after SIGTERM: ${code}; output:\n${broker.output}`);
  broker.start();
  await broker.waitReady();

  const batch2 = await produce(namesrv, topic, 'b2', 24);
  const got2 = new C.Collector();
  const c2 = C.consumer({
    namesrv, group, options: { consumeFromWhere: 'CONSUME_FROM_LAST_OFFSET' },
  });
  c2.subscribe(topic, '*', async msg => { got2.push(C.summary(msg)); });
  await c2.ready();
  await got2.waitFor(l => batch2.every(k => l.some(m => m.keys === k)), 60000, 'batch 2')
    .catch(err => {
      err.message += `; received: ${got2.list.map(m => m.keys).join(' ')}`;
      throw err;
    });
  await sleep(2500);
  await C.close(c2);
  const keys = got2.list.map(m => m.keys);
  const old = keys.filter(k => batch1.includes(k));
  console.log(`after restart: ${keys.length} received, ${old.length} of them from batch 1`);
  assert.deepEqual(old, [], 'already-consumed messages delivered again after restart');
  assert.equal(keys.length, batch2.length, 'duplicates in batch 2');

  const stopCode = await broker.stop();
  assert.equal(stopCode, 0, `broker exit status after the second SIGTERM: ${stopCode}`);
});
