'use strict';
// What the gRPC client tests share: a broker with a gRPC port on free loopback ports, topics and
// subscription groups made over remoting, and remoting reads and writes of the same topics.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { Broker, makeConf } = require('../interop/broker.js');
const { Code, RawClient, pullAll } = require('../interop/remoting.js');

const quiet = { info() {}, debug() {}, warn() {}, error() {}, trace() {} };

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// A started broker (2 shards: 2 presented brokers) with a gRPC port and `extra` broker.conf
// lines; { broker, endpoints }. The ports are free when drawn, but a test running beside this
// one may bind one of them before the broker does: a start refused with "Address already in
// use" is tried again on fresh ports and a fresh store, up to three times.
async function startBroker(work, extra = '') {
  for (let attempt = 1; ; attempt++) {
    const grpcServerPort = await freePort();
    fs.rmSync(path.join(work, 'broker'), { recursive: true, force: true });
    const { file } = await makeConf(path.join(work, 'broker'));
    fs.appendFileSync(file, `grpcServerPort=${grpcServerPort}\n${extra}`);
    const broker = new Broker({ confFile: file });
    broker.start();
    try {
      await broker.waitReady();
      return { broker, endpoints: `127.0.0.1:${grpcServerPort}` };
    } catch (err) {
      if (attempt >= 3 || !/Address already in use/.test(err.message)) throw err;
      await broker.stop().catch(() => {});
    }
  }
}

async function withRaw(addr, fn) {
  const raw = await RawClient.connect(addr);
  try {
    return await fn(raw);
  } finally {
    raw.destroy();
  }
}

// Creates `topic` (4 queues) on every presented broker, with RocketMQ 5 `attributes` if given.
async function createTopic(broker, topic, attributes) {
  for (const addr of broker.brokerAddrs) {
    await withRaw(addr, async raw => {
      const ext = {
        topic, readQueueNums: 4, writeQueueNums: 4, perm: 6, topicFilterType: 'SINGLE_TAG',
      };
      if (attributes) ext.attributes = attributes;
      const r = await raw.request(Code.UPDATE_AND_CREATE_TOPIC, ext);
      assert.equal(r.code, 0, `creating ${topic}: ${r.remark}`);
    });
  }
}

// Creates subscription group `group` (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) on every broker.
async function createGroup(broker, group, fields) {
  const body = Buffer.from(JSON.stringify(Object.assign({
    groupName: group, consumeEnable: true, consumeFromMinEnable: true,
    consumeBroadcastEnable: false, retryQueueNums: 1, retryMaxTimes: 16, brokerId: 0,
    whichBrokerWhenConsumeSlowly: 1, notifyConsumerIdsChangedEnable: true,
  }, fields)));
  for (const addr of broker.brokerAddrs) {
    await withRaw(addr, async raw => {
      const r = await raw.request(200, {}, body);
      assert.equal(r.code, 0, `creating group ${group}: ${r.remark}`);
    });
  }
}

// Every message of `topic` on every presented broker, through remoting pulls.
async function pullEverywhere(broker, topic, group = 'CG_GRPC_TEST') {
  const out = [];
  for (const addr of broker.brokerAddrs) {
    out.push(...await withRaw(addr, async raw => (await pullAll(raw, topic, group)).messages));
  }
  return out;
}

async function sendByRemoting(broker, topic, body, tag = 'r') {
  return withRaw(broker.brokerAddr, async raw => {
    const r = await raw.request(Code.SEND_MESSAGE_V2, {
      a: 'PG_REMOTING', b: topic, c: 'TBW102', d: 4, e: 0, f: 0, g: Date.now(), h: 0,
      i: `TAGS\u0001${tag}\u0002`, j: 0, k: false,
    }, Buffer.from(body));
    assert.equal(r.code, 0, `remoting send: ${r.remark}`);
  });
}

module.exports = {
  quiet, freePort, startBroker, withRaw, createTopic, createGroup, pullEverywhere, sendByRemoting,
};
