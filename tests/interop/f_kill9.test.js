'use strict';
// f. kill -9 with SYNC_FLUSH: every acknowledged send survives. Runs its own broker (fresh ports
// and store under URINGMQ_TMP). Batch 1 (500 messages, 16 sends in flight) is acknowledged in
// full; batch 2 is sent the same way and the broker is killed with SIGKILL once ~150 of it are
// acknowledged; after a restart on the same store every acknowledged message (both batches) must
// be consumable with its body intact. Unacknowledged messages may or may not be there.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { env, makeConf, startBroker, sleep } = require('./broker');
const C = require('./clients');

let broker;
C.finish(async () => {
  if (broker && broker.running) await broker.stop();
});

const N1 = 500;
const N2 = 500;
const KILL_AFTER_ACKS = 150;
const IN_FLIGHT = 16;

function bodyOf(key) {
  return `${key}:` + 'k9'.repeat(50 + (key.length * 13) % 200);
}

test('every message acknowledged under SYNC_FLUSH survives kill -9',
  { timeout: 300000 }, async () => {
  const dir = path.join(env().tmp, C.uniqueName('f_kill9'));
  const { file } = await makeConf(dir, { flushDiskType: 'SYNC_FLUSH' });
  broker = await startBroker({ confFile: file });
  const namesrv = broker.namesrv;
  const topic = await C.newTopic('T_kill9', broker.brokerAddr);

  const prod = await C.producer({
    namesrv, options: { sendMsgTimeout: 3000, retryTimesWhenSendFailed: 0 },
  });
  const send = async key => {
    const msg = new C.Message(topic, 'k9', bodyOf(key));
    msg.keys = [key];
    const r = await prod.send(msg);
    if (r.sendStatus !== 'SEND_OK') throw new Error(`status ${r.sendStatus}`);
    return r;
  };

  const keys1 = Array.from({ length: N1 }, (_, i) => `${topic}-a${i}`);
  const res1 = await C.mapLimit(keys1, IN_FLIGHT, send);
  const failed1 = res1.filter(r => !r.ok);
  assert.equal(failed1.length, 0,
    `batch 1 sends failed: ${failed1.slice(0, 3).map(r => r.error.message).join('; ')}`);

  const keys2 = Array.from({ length: N2 }, (_, i) => `${topic}-b${i}`);
  let acks2 = 0;
  let killed = null;
  const res2 = await C.mapLimit(keys2, IN_FLIGHT, async key => {
    if (killed) throw new Error('broker killed');
    const r = await send(key);
    if (++acks2 === KILL_AFTER_ACKS && !killed) killed = broker.kill9();
    return r;
  });
  assert.ok(killed, `broker was not killed (batch 2 acks: ${acks2})`);
  const exit = await killed;
  assert.equal(exit.signal, 'SIGKILL');
  await C.close(prod);

  const acked = [...keys1, ...keys2.filter((_, i) => res2[i].ok)];
  const unacked = keys2.filter((_, i) => !res2[i].ok);

  broker.start();
  await broker.waitReady(120000);

  const got = new C.Collector();
  const cons = C.consumer({ namesrv, options: { parallelConsumeLimit: 32 } });
  cons.subscribe(topic, '*', async msg => { got.push(C.summary(msg)); });
  await cons.ready();
  const ackedSet = new Set(acked);
  const seen = new Set();
  await got.waitFor(l => {
    for (const m of l) seen.add(m.keys);
    return acked.every(k => seen.has(k));
  }, 120000, `${acked.length} acknowledged messages`).catch(() => {});
  await sleep(2000);
  await C.close(cons);

  const counts = new Map();
  const badBodies = [];
  for (const m of got.list) {
    counts.set(m.keys, (counts.get(m.keys) || 0) + 1);
    if (m.body !== bodyOf(m.keys)) badBodies.push(m.keys);
  }
  const lost = acked.filter(k => !counts.has(k));
  const unackedStored = unacked.filter(k => counts.has(k)).length;
  const dups = [...counts].filter(([, n]) => n > 1).length;
  const foreign = [...counts.keys()].filter(k => !ackedSet.has(k) && !unacked.includes(k));
  console.log(`kill -9: batch 1 acked ${N1}/${N1}; batch 2 acked ${acked.length - N1}/${N2} ` +
    `(${unacked.length} unacknowledged, ${unackedStored} of those stored anyway); ` +
    `after restart received ${got.list.length} (${counts.size} distinct, ${dups} duplicated); ` +
    `lost acknowledged: ${lost.length}; corrupt bodies: ${badBodies.length}`);
  assert.deepEqual(lost.slice(0, 20), [], `${lost.length} acknowledged messages lost`);
  assert.deepEqual(badBodies.slice(0, 20), [], 'corrupt bodies');
  assert.deepEqual(foreign, [], 'messages nobody sent');

  const code = await broker.stop();
  assert.equal(code, 0, `broker exit status after SIGTERM: ${code}`);
});
