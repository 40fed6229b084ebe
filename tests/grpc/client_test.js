'use strict';
// The broker's gRPC endpoint against the official RocketMQ 5 Node.js client
// (rocketmq-client-nodejs 1.0.8): a producer's sends read back through remoting with their tag,
// keys and properties; routes of a topic remoting wrote; a delayed message never early; a
// recalled one (over gRPC or remoting's RECALL_MESSAGE) never delivered; transactions
// committed, rolled back, and an orphan the broker's check (over Telemetry) resolves; garbage
// on the port; the plain ACL's signatures and topic permissions. Run by client_test.sh (CTest
// grpc_client_test).
//
//   node client_test.js <work-dir>     (URINGMQ_BROKER_BIN: the broker executable)

const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const { TransactionResolution } = require(
  'rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
const { Broker, makeConf, sleep } = require('../interop/broker.js');
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

async function withRaw(addr, fn) {
  const raw = await RawClient.connect(addr);
  try {
    return await fn(raw);
  } finally {
    raw.destroy();
  }
}

async function createTopic(broker, topic, attributes) {
  await withRaw(broker.brokerAddr, async raw => {
    const ext = {
      topic, readQueueNums: 4, writeQueueNums: 4, perm: 6, topicFilterType: 'SINGLE_TAG',
    };
    if (attributes) ext.attributes = attributes;
    const r = await raw.request(Code.UPDATE_AND_CREATE_TOPIC, ext);
    assert.equal(r.code, 0, `creating ${topic}: ${r.remark}`);
  });
}

// Every message of `topic` on every presented broker, through remoting pulls.
async function pullEverywhere(broker, topic) {
  const out = [];
  for (const addr of broker.brokerAddrs) {
    const pulled = await withRaw(addr, raw => pullAll(raw, topic, 'CG_GRPC_TEST'));
    out.push(...pulled.messages);
  }
  return out;
}

async function sendByRemoting(broker, topic, body) {
  return withRaw(broker.brokerAddr, async raw => {
    const r = await raw.request(Code.SEND_MESSAGE_V2, {
      a: 'PG_REMOTING', b: topic, c: 'TBW102', d: 4, e: 0, f: 0, g: Date.now(), h: 0,
      i: 'TAGS\u0001r\u0002', j: 0, k: false,
    }, Buffer.from(body));
    assert.equal(r.code, 0, `remoting send: ${r.remark}`);
  });
}

async function startProducer(endpoints, topic, checker) {
  const producer = new Producer({ endpoints, topic, logger: quiet, checker, requestTimeout: 5000 });
  await producer.startup();
  return producer;
}

async function sendAndReadBack(broker, endpoints) {
  const topic = 'GrpcNormal';
  await createTopic(broker, topic);
  const producer = await startProducer(endpoints, topic);
  try {
    const receipt = await producer.send({
      topic, tag: 'tagA', keys: ['k1', 'k2'], body: Buffer.from('hello grpc'),
      properties: new Map([['color', 'blue']]),
    });
    assert.ok(receipt.messageId, 'a message id');
    const messages = await pullEverywhere(broker, topic);
    const m = messages.find(x => x.body.toString() === 'hello grpc');
    assert.ok(m, 'the message read back through remoting');
    assert.equal(m.properties.TAGS, 'tagA');
    assert.equal(m.properties.KEYS, 'k1 k2');
    assert.equal(m.properties.color, 'blue');
    assert.equal(m.properties.UNIQ_KEY, receipt.messageId);
  } finally {
    await producer.shutdown();
  }
  console.log('ok: send with tag, keys and properties, read back through remoting');
}

async function routeOfRemotingTopic(broker, endpoints) {
  const topic = 'GrpcFromRemoting';
  await createTopic(broker, topic);
  await sendByRemoting(broker, topic, 'from remoting');
  // The producer's startup queries the route: a topic remoting wrote is routed over gRPC.
  const producer = await startProducer(endpoints, topic);
  await producer.send({ topic, body: Buffer.from('from grpc') });
  await producer.shutdown();
  const bodies = (await pullEverywhere(broker, topic)).map(m => m.body.toString()).sort();
  assert.deepEqual(bodies, ['from grpc', 'from remoting']);
  console.log('ok: QueryRoute routes a topic written through remoting');
}

async function delayedAndRecalled(broker, endpoints) {
  const topic = 'GrpcDelay';
  await createTopic(broker, topic, '+message.type=DELAY');
  const producer = await startProducer(endpoints, topic);
  try {
    const due = Date.now() + 2000;
    await producer.send({ topic, body: Buffer.from('delayed'), deliveryTimestamp: new Date(due) });
    const recalled = await producer.send({
      topic, body: Buffer.from('recalled'), deliveryTimestamp: new Date(due),
    });
    assert.ok(recalled.recallHandle, 'a delayed message has a recall handle');
    await producer.recallMessage(topic, recalled.recallHandle);
    // The same recall through remoting (RECALL_MESSAGE, 370) on a handle issued over gRPC.
    const viaRemoting = await producer.send({
      topic, body: Buffer.from('recalled by remoting'), deliveryTimestamp: new Date(due),
    });
    // A recall goes to the broker its handle names (RocketMQ's "v1 topic brokerName ..." form).
    const named = Buffer.from(viaRemoting.recallHandle, 'base64url').toString().split(' ')[2];
    const at = broker.brokerAddrs.length === 1 ? 0 : Number(named.split('-').pop());
    await withRaw(broker.brokerAddrs[at], async raw => {
      const r = await raw.request(370, {
        producerGroup: 'PG_REMOTING', topic, recallHandle: viaRemoting.recallHandle,
      });
      assert.equal(r.code, 0, `RECALL_MESSAGE: ${r.remark}`);
      assert.equal(r.extFields.msgId, viaRemoting.messageId);
    });
    for (;;) {
      const bodies = (await pullEverywhere(broker, topic)).map(m => m.body.toString());
      assert.ok(!bodies.some(b => b.startsWith('recalled')), 'a recalled message is delivered');
      if (bodies.includes('delayed')) {
        assert.ok(Date.now() >= due - 50, 'the delayed message was visible early');
        break;
      }
      assert.ok(Date.now() < due + 15000, 'the delayed message never came');
      await sleep(200);
    }
    await sleep(1500);
    const bodies = (await pullEverywhere(broker, topic)).map(m => m.body.toString());
    assert.ok(!bodies.some(b => b.startsWith('recalled')), 'a recalled message is delivered');
  } finally {
    await producer.shutdown();
  }
  console.log('ok: a delayed message is never early; a recalled one never delivered');
}

async function transactions(broker, endpoints) {
  const topic = 'GrpcTxn';
  await createTopic(broker, topic, '+message.type=TRANSACTION');
  let checked = 0;
  const checker = {
    async check(view) {
      checked++;
      return view.body.toString() === 'orphan' ? TransactionResolution.COMMIT
        : TransactionResolution.ROLLBACK;
    },
  };
  const producer = await startProducer(endpoints, topic, checker);
  try {
    const commit = producer.beginTransaction();
    await producer.send({ topic, body: Buffer.from('committed') }, commit);
    await commit.commit();
    const rollback = producer.beginTransaction();
    await producer.send({ topic, body: Buffer.from('rolled back') }, rollback);
    await rollback.rollback();
    await producer.send({ topic, body: Buffer.from('orphan') }, producer.beginTransaction());
    const deadline = Date.now() + 30000;
    for (;;) {
      const bodies = (await pullEverywhere(broker, topic)).map(m => m.body.toString());
      assert.ok(!bodies.includes('rolled back'), 'a rolled back message is never visible');
      if (bodies.includes('committed') && bodies.includes('orphan')) break;
      assert.ok(Date.now() < deadline, `commits not visible: ${JSON.stringify(bodies)}`);
      await sleep(300);
    }
    assert.ok(checked >= 1, 'the orphan was checked over Telemetry');
  } finally {
    await producer.shutdown();
  }
  console.log('ok: transactions committed, rolled back, and an orphan resolved by a check');
}

// The plain ACL on the gRPC port: signed requests of a known account pass, a wrong secret is
// refused, a topic the account may not publish to refuses the send, and a consumer needs SUB
// on its topic and its group.
async function acl(broker, endpoints) {
  const good = { accessKey: 'grpcUser', accessSecret: 'grpcSecret1' };
  const producer = new Producer({
    endpoints, topic: 'GrpcNormal', logger: quiet, sessionCredentials: good,
    requestTimeout: 5000,
  });
  await producer.startup();
  try {
    const receipt = await producer.send({ topic: 'GrpcNormal', body: Buffer.from('signed') });
    assert.ok(receipt.messageId, 'the signed send was stored');
    await assert.rejects(producer.send({ topic: 'GrpcFromRemoting', body: Buffer.from('denied') }),
      /No permission for topic:GrpcFromRemoting/);
  } finally {
    await producer.shutdown();
  }
  // Consumers need SUB on the topic and on the group: a denied topic, a denied group refused.
  const consume = async (topic, group) => {
    const consumer = new SimpleConsumer({
      endpoints, consumerGroup: group, subscriptions: new Map([[topic, '*']]), awaitDuration: 1000,
      logger: quiet, requestTimeout: 5000, sessionCredentials: good,
    });
    await consumer.startup();
    try {
      return await consumer.receive(32, 30000);
    } finally {
      await consumer.shutdown().catch(() => {});
    }
  };
  const got = await consume('GrpcNormal', 'G_ACL_OK');
  assert.ok(Array.isArray(got), 'the permitted consumer is answered');  // messages or none
  await assert.rejects(consume('GrpcFromRemoting', 'G_ACL_OK'),
    /No permission for topic:GrpcFromRemoting/);
  await assert.rejects(consume('GrpcNormal', 'G_ACL_DENIED'),
    /No permission for group:G_ACL_DENIED/);
  const wrong = new Producer({
    endpoints, topic: 'GrpcNormal', logger: quiet, requestTimeout: 3000,
    sessionCredentials: { accessKey: 'grpcUser', accessSecret: 'wrong' },
  });
  await assert.rejects(wrong.startup());
  await wrong.shutdown().catch(() => {});
  console.log('ok: ACL: signed requests pass; a wrong secret, a denied topic or group refused');
}

// A SYNC_MASTER answers a gRPC send once a slave has it; with no slave, HA_NOT_AVAILABLE as
// the Proxy answers remoting's SLAVE_NOT_AVAILABLE (not OK: the message is not replicated).
async function syncMasterWithoutSlave(endpoints) {
  const producer = new Producer({ endpoints, logger: quiet, requestTimeout: 5000, maxAttempts: 1 });
  await producer.startup();
  try {
    await assert.rejects(producer.send({ topic: 'GrpcNormal', body: Buffer.from('unreplicated') }),
      /no slave is available/);
  } finally {
    await producer.shutdown();
  }
  console.log('ok: a SYNC_MASTER without a slave answers HA_NOT_AVAILABLE');
}

// Garbage on the gRPC port closes that connection with a WARN naming the cause; the port
// goes on serving.
async function garbage(broker, port, endpoints) {
  await new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => s.write('GET / HTTP/1.1\r\n\r\n'));
    s.on('data', () => {});
    s.once('error', reject);
    s.once('close', resolve);
    s.setTimeout(5000, () => reject(new Error('the connection was not closed')));
  });
  assert.match(broker.output, /WARN closing the gRPC connection from .*HTTP\/2 client preface/);
  const producer = await startProducer(endpoints, 'GrpcNormal');
  await producer.send({ topic: 'GrpcNormal', body: Buffer.from('after garbage') });
  await producer.shutdown();
  console.log('ok: a bad preface closes only its connection, with a WARN naming it');
}

async function main() {
  const work = process.argv[2];
  const grpcServerPort = await freePort();
  const { file } = await makeConf(path.join(work, 'broker'));
  // Orphaned halves are checked within about a second.
  fs.appendFileSync(file, `grpcServerPort=${grpcServerPort}\ntransactionTimeOut=1000\n` +
    'transactionCheckInterval=1000\n');
  const broker = new Broker({ confFile: file });
  broker.start();
  try {
    await broker.waitReady();
    const endpoints = `127.0.0.1:${grpcServerPort}`;
    await sendAndReadBack(broker, endpoints);
    await routeOfRemotingTopic(broker, endpoints);
    await delayedAndRecalled(broker, endpoints);
    await transactions(broker, endpoints);
    await garbage(broker, grpcServerPort, endpoints);
    // Again with aclEnable (the topics stay).
    await broker.stop();
    fs.writeFileSync(path.join(work, 'broker', 'plain_acl.yml'), [
      'globalWhiteRemoteAddresses:', '  - 10.254.254.*', 'accounts:',
      '  - accessKey: grpcUser', '    secretKey: grpcSecret1', '    admin: false',
      '    defaultTopicPerm: DENY', '    defaultGroupPerm: SUB', '    topicPerms:',
      '      - GrpcNormal=PUB|SUB', '    groupPerms:', '      - G_ACL_DENIED=DENY', '',
    ].join('\n'));
    fs.appendFileSync(file, 'aclEnable=true\n');
    broker.start();
    await broker.waitReady();
    await acl(broker, endpoints);
    // Again as a SYNC_MASTER without a slave, ACL off.
    await broker.stop();
    const conf = fs.readFileSync(file, 'utf8').split('\n')
      .filter(line => !/^(aclEnable|brokerRole)=/.test(line));
    fs.writeFileSync(file, conf.join('\n') + '\nbrokerRole=SYNC_MASTER\n');
    broker.start();
    await broker.waitReady();
    await syncMasterWithoutSlave(endpoints);
  } catch (e) {
    console.error(`broker output:\n${broker.output}`);
    throw e;
  } finally {
    await broker.stop();
  }
}

main().then(() => process.exit(0), e => {
  console.error(e);
  process.exit(1);
});
