'use strict';
// ali-ons helpers for the interop tests: producers and consumers with test-friendly options and a
// quiet logger, a message collector with bounded waits, and `finish()` for each test file's
// after() hook (closes every client, then exits: ali-ons keeps timers alive after close).

const { after } = require('node:test');
const assert = require('node:assert/strict');
const { Producer, Consumer, Message } = require('ali-ons');
const { env, sleep } = require('./broker');
const { Code, RawClient } = require('./remoting');

const verbose = !!process.env.URINGMQ_INTEROP_VERBOSE;
const quietLogger = {
  info: verbose ? (...a) => console.error('[ons info]', ...a) : () => {},
  debug: () => {},
  warn: verbose ? (...a) => console.error('[ons warn]', ...a) : () => {},
  error: verbose ? (...a) => console.error('[ons error]', ...a) : () => {},
};

const clients = new Set();
let instanceSeq = 0;
// A unique suffix per test file run, so that topic/group names never repeat across runs on a
// reused store.
const runId = `${process.pid}${Date.now().toString(36)}`;

function uniqueName(prefix) {
  return `${prefix}_${runId}_${++instanceSeq}`;
}

// Creates `topic` (UPDATE_AND_CREATE_TOPIC, the interop brokers' 4 queues) on the broker at
// `brokerAddr` before clients use it, as operators do: uringmq's NameServer, like Java's, has no
// route for a topic no one created, and ali-ons, unlike the Java client, does not then send a
// new topic through TBW102's route.
async function createTopic(topic, brokerAddr = env().brokerAddr, queues = 4) {
  const raw = await RawClient.connect(brokerAddr);
  try {
    const r = await raw.request(Code.UPDATE_AND_CREATE_TOPIC, {
      topic, readQueueNums: queues, writeQueueNums: queues, perm: 6, topicFilterType: 'SINGLE_TAG',
    });
    if (r.code !== 0) throw new Error(`creating topic ${topic}: code ${r.code} ${r.remark}`);
  } finally {
    raw.destroy();
  }
  return topic;
}

// A fresh topic name (uniqueName), created on the broker.
async function newTopic(prefix, brokerAddr) {
  return createTopic(uniqueName(prefix), brokerAddr);
}

// Errors ali-ons reports through 'error' events (kept for diagnostics; tests that expect handler
// errors ignore them).
const clientErrors = [];

function commonOptions(namesrv) {
  return {
    nameSrv: namesrv || env().namesrv,
    httpclient: {},
    logger: quietLogger,
    clientIP: '127.0.0.1',
    // Each client gets its own MQClient (ali-ons shares one per clientIP@instanceName).
    instanceName: `i${++instanceSeq}`,
    pollNameServerInteval: 2000,
    heartbeatBrokerInterval: 2000,
    rebalanceInterval: 1000,
    persistConsumerOffsetInterval: 1000,
  };
}

async function producer(opts = {}) {
  const p = new Producer(Object.assign(commonOptions(opts.namesrv), {
    producerGroup: opts.group || uniqueName('PG'),
  }, opts.options || {}));
  p.on('error', err => clientErrors.push(err));
  clients.add(p);
  await p.ready();
  quietDefaultProducer();
  return p;
}

function consumer(opts = {}) {
  const c = new Consumer(Object.assign(commonOptions(opts.namesrv), {
    consumerGroup: opts.group || uniqueName('CG'),
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
  }, opts.options || {}));
  c.on('error', err => clientErrors.push(err));
  clients.add(c);
  c.ready().then(quietDefaultProducer, () => {});
  return c;
}

// ali-ons' internal producer (group CLIENT_INNER_PRODUCER, created with the options of the first
// client of the process) has no 'error' listener of ours; its errors (e.g. while a test restarts
// its broker) would be printed by sdk-base's default handler.
function quietDefaultProducer() {
  const d = Producer.defaultProducer;
  if (d && !d.__quiet) {
    d.__quiet = true;
    d.on('error', err => clientErrors.push(err));
  }
}

async function close(client) {
  if (!clients.has(client)) return;
  clients.delete(client);
  await withTimeout(client.close(), 10000, 'client close').catch(err => {
    if (verbose) console.error('close failed:', err.message);
  });
  // close() removes every listener of the client and of its MQClient, but requests already in
  // flight (a held pull, a heartbeat) can still open a channel afterwards; its connection error
  // would then be an uncaught 'error' event (seen when the broker is stopped right after).
  const sink = err => clientErrors.push(err);
  client.on('error', sink);
  if (client._mqClient) client._mqClient.on('error', sink);
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

// Collects received messages; waitFor(pred, ms) resolves when pred(list) holds, rejects after ms
// with a description of what arrived.
class Collector {
  constructor() {
    this.list = [];
    this.waiters = [];
  }
  push(item) {
    this.list.push(item);
    for (const w of [...this.waiters]) {
      if (w.pred(this.list)) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        clearTimeout(w.timer);
        w.resolve(this.list);
      }
    }
  }
  waitFor(pred, ms, what = 'messages') {
    if (pred(this.list)) return Promise.resolve(this.list);
    return new Promise((resolve, reject) => {
      const w = { pred, resolve };
      w.timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        reject(new Error(`timed out after ${ms} ms waiting for ${what}; got ${this.list.length}`));
      }, ms);
      this.waiters.push(w);
    });
  }
  waitCount(n, ms, what) {
    return this.waitFor(l => l.length >= n, ms, what || `${n} messages`);
  }
}

// What a test keeps of a received ali-ons message.
// uringmq's own properties (engine/log/properties.h), which consumers must never receive.
function internalProperties(properties) {
  return Object.keys(properties)
    .filter(k => k.startsWith('__UMQ_') || k === '__CRC32#' || k === 'TIMER_OUT_MS')
    .map(k => `internal property ${k} delivered`);
}

function summary(msg) {
  return {
    at: Date.now(),
    topic: msg.topic,
    tags: msg.tags,
    keys: msg.keys,
    body: msg.body ? msg.body.toString() : '',
    queueId: msg.queueId,
    queueOffset: msg.queueOffset,
    reconsumeTimes: msg.reconsumeTimes,
    msgId: msg.msgId,
    commitLogOffset: msg.commitLogOffset,
    properties: Object.assign({}, msg.properties),
  };
}

// A consumer of `topic` that owns its queues and is long-polling, proven by a probe sent through
// `prod`: a deferred message sent before that could only be seen late. Returns { got, cons }.
async function readyConsumer(topic, prod) {
  const got = new Collector();
  const cons = consumer();
  cons.subscribe(topic, '*', async msg => { got.push(summary(msg)); });
  await cons.ready();
  const probe = new Message(topic, 'probe', 'probe');
  probe.keys = [`${topic}-probe`];
  await prod.send(probe);
  await got.waitFor(l => l.some(m => m.keys === `${topic}-probe`), 60000, 'the probe message');
  await sleep(500);
  return { got, cons };
}

// Holds deferred messages (delay levels, timers) to their due times. `sent` maps each key to
// { dueAt, body, check(m) -> problems }. Waits for every key (until the last is lateSlackMs +
// 10 s overdue), then 1 s for copies; each must have been received exactly once on `topic` with
// its body, no earlier than dueAt - earlySlackMs and before dueAt + lateSlackMs. Logs a line per
// key and asserts no problem.
async function expectDeferred(got, sent, topic, earlySlackMs, lateSlackMs) {
  const last = Math.max(...[...sent.values()].map(s => s.dueAt));
  await got.waitFor(l => [...sent.keys()].every(k => l.some(m => m.keys === k)),
    Math.max(0, last - Date.now()) + lateSlackMs + 10000, 'all deferred messages');
  await sleep(1000);
  const report = [];
  const problems = [];
  for (const [key, s] of sent) {
    const recv = got.list.filter(m => m.keys === key);
    if (recv.length !== 1) problems.push(`${key}: received ${recv.length} times`);
    const m = recv[0];
    if (!m) continue;
    const late = m.at - s.dueAt;
    report.push(`${key}: received ${late} ms after its due time`);
    if (late < -earlySlackMs) problems.push(`${key}: ${-late} ms early`);
    if (late >= lateSlackMs) problems.push(`${key}: ${late} ms late`);
    if (m.topic !== topic) problems.push(`${key}: topic ${m.topic}`);
    if (m.body !== s.body) problems.push(`${key}: body ${m.body}`);
    problems.push(...s.check(m).map(p => `${key}: ${p}`));
  }
  console.log(report.join('\n'));
  assert.deepEqual(problems, [], report.join('; '));
}

// Runs fn over items with at most `limit` in flight; returns results in order ({ok, value|error}).
async function mapLimit(items, limit, fn) {
  const results = new Array(items.length);
  let next = 0;
  async function worker() {
    while (next < items.length) {
      const i = next++;
      try {
        results[i] = { ok: true, value: await fn(items[i], i) };
      } catch (error) {
        results[i] = { ok: false, error };
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

// Registers the after() hook every test file needs: close all clients, then exit with the test
// runner's exit code (ali-ons keeps timers running after close).
function finish(extra) {
  after(async () => {
    if (extra) {
      try {
        await extra();
      } catch (err) {
        console.error('after hook:', err);
        process.exitCode = 1;
      }
    }
    await Promise.all([...clients].map(close));
    // process.exit() keeps the exit code the runner set for failed tests.
    setTimeout(() => process.exit(), 200);
  });
}

module.exports = {
  Producer, Consumer, Message, quietLogger, uniqueName, createTopic, newTopic, producer, consumer,
  close, withTimeout,
  Collector, summary, mapLimit, finish, clientErrors, runId, readyConsumer, expectDeferred,
  internalProperties,
};
