'use strict';
// Broker process control for the interop tests: free loopback ports, broker.conf writing, and a
// Broker class (start / waitReady / stop (SIGTERM) / kill9) that tests use to restart or crash a
// uringmq-broker on the same store. run.sh starts the shared broker with the same logic (through
// `node broker.js ...`, see the CLI at the bottom).

const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');

// Short delay levels: level 1 = 500 ms (checks the ms unit), 2 = 2 s, 3 = 1 s (the first
// consumer-retry level), 4..17 = 1 s (later retries), 18 = 3 s (the maximum, which levels above
// 18 clamp to). Tests read the table from URINGMQ_DELAY_LEVELS so that they agree with the conf.
const DEFAULT_DELAY_LEVELS =
  '500ms 2s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 3s';

function parseDelayLevels(text) {
  const units = { ms: 1, s: 1000, m: 60000, h: 3600000, d: 86400000 };
  return text.trim().split(/\s+/).map(tok => {
    const m = /^(\d+)(ms|s|m|h|d)$/.exec(tok);
    if (!m) throw new Error(`bad delay level ${tok}`);
    return Number(m[1]) * units[m[2]];
  });
}

// Distinct free TCP ports on 127.0.0.1 (all listeners are held open together so that they differ).
async function freePorts(n) {
  const servers = [];
  try {
    for (let i = 0; i < n; i++) {
      const s = net.createServer();
      await new Promise((resolve, reject) => {
        s.once('error', reject);
        s.listen(0, '127.0.0.1', resolve);
      });
      servers.push(s);
    }
    return servers.map(s => s.address().port);
  } finally {
    await Promise.all(servers.map(s => new Promise(r => s.close(r))));
  }
}

function canListen(port) {
  return new Promise(resolve => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

// The ports a broker of `shards` shards listens on from `listenPort`: each shard is one broker on
// listenPort + i * stride, with its VIP port 2 below and its HA port 1 above
// (net/core/presented_broker.h).
function brokerPorts(listenPort, shards, stride = 10) {
  const ports = [];
  for (let i = 0; i < shards; i++) {
    const port = listenPort + i * stride;
    ports.push(port, port - 2, port + 1);
  }
  return ports;
}

// A listenPort whose every presented broker's main and VIP port is free, and a distinct free
// NameServer port.
async function freeBrokerPorts(shards) {
  for (let attempt = 0; attempt < 200; attempt++) {
    // listenPort below the kernel's ephemeral range (32768 up): a port drawn from that range
    // could be taken by a test's client socket before the broker binds it or its HA ports
    // (bound after the store opens).
    const [namesrvListenPort] = await freePorts(1);
    const listenPort = 10000 + Math.floor(Math.random() * (32000 - 10000 - 10 * shards));
    const wanted = brokerPorts(listenPort, shards);
    if (wanted.some(p => p === namesrvListenPort)) continue;
    let free = true;
    for (const p of wanted) free = free && await canListen(p);
    if (free) return { listenPort, namesrvListenPort };
  }
  throw new Error(`no free ports for a broker of ${shards} shards`);
}

function confText(c) {
  const lines = [
    `storePathRootDir=${c.storePathRootDir}`,
    `listenPort=${c.listenPort}`,
    `namesrvListenPort=${c.namesrvListenPort}`,
    `bindAddress=${c.bindAddress || '127.0.0.1'}`,
    `flushDiskType=${c.flushDiskType || 'SYNC_FLUSH'}`,
    `messageDelayLevel=${c.messageDelayLevel || DEFAULT_DELAY_LEVELS}`,
    `defaultTopicQueueNums=${c.defaultTopicQueueNums || 4}`,
    `shardCount=${c.shardCount || 2}`,
    `mappedFileSizeCommitLog=${c.mappedFileSizeCommitLog || 67108864}`,
    `logLevel=${c.logLevel || 'info'}`,
    // The test machines' shared disk may be fuller than the default refusal ratio (90%).
    `diskSpaceWarningLevelRatio=${c.diskSpaceWarningLevelRatio || 100}`,
  ];
  return lines.join('\n') + '\n';
}

// Reads a broker.conf into an object (key=value lines, '#' comments).
function readConf(file) {
  const conf = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const t = line.trim();
    if (!t || t.startsWith('#') || t.startsWith('!')) continue;
    const i = t.indexOf('=');
    if (i > 0) conf[t.slice(0, i).trim()] = t.slice(i + 1).trim();
  }
  return conf;
}

// Creates <dir>/broker.conf (and <dir>/store) with fresh ports; `overrides` replaces any key.
async function makeConf(dir, overrides = {}) {
  fs.mkdirSync(dir, { recursive: true });
  const shards = Number(overrides.shardCount || 2);
  const { listenPort, namesrvListenPort } = await freeBrokerPorts(shards);
  const conf = Object.assign({
    storePathRootDir: path.join(dir, 'store'),
    listenPort,
    namesrvListenPort,
    messageDelayLevel: process.env.URINGMQ_DELAY_LEVELS || DEFAULT_DELAY_LEVELS,
  }, overrides);
  const file = path.join(dir, 'broker.conf');
  fs.writeFileSync(file, confText(conf));
  return { file, conf };
}

function sleep(ms) {
  return new Promise(r => setTimeout(r, ms));
}

function canConnect(port, host = '127.0.0.1') {
  return new Promise(resolve => {
    const s = net.connect({ port, host });
    const done = ok => { s.destroy(); resolve(ok); };
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
    s.setTimeout(1000, () => done(false));
  });
}

class Broker {
  // bin: the uringmq-broker executable; confFile: its broker.conf; logFile: stderr+stdout go
  // there (appended, so restarts keep the earlier runs' output).
  constructor({ bin, confFile, logFile }) {
    this.bin = bin || process.env.URINGMQ_BROKER_BIN;
    this.confFile = confFile;
    this.conf = readConf(confFile);
    this.logFile = logFile || path.join(path.dirname(confFile), 'broker.log');
    this.child = null;
    this.exited = null; // promise of { code, signal }
    this.output = '';   // output of the current run
  }

  get namesrv() { return `127.0.0.1:${this.conf.namesrvListenPort}`; }
  get brokerAddr() { return `127.0.0.1:${this.conf.listenPort}`; }
  // Every presented broker's address, one per shard (brokerName-i on listenPort + i * 10).
  get brokerAddrs() {
    const shards = Number(this.conf.shardCount || 1);
    const out = [];
    for (let i = 0; i < shards; i++) out.push(`127.0.0.1:${Number(this.conf.listenPort) + i * 10}`);
    return out;
  }
  get pid() { return this.child && this.child.pid; }
  get running() {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  start() {
    if (this.running) throw new Error('broker already running');
    const log = fs.openSync(this.logFile, 'a');
    fs.writeSync(log, `---- ${new Date().toISOString()} start ${this.bin} -c ${this.confFile}\n`);
    this.output = '';
    const child = spawn(this.bin, ['-c', this.confFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    const onData = chunk => {
      fs.writeSync(log, chunk);
      if (this.output.length < 1 << 20) this.output += chunk.toString();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    this.exited = new Promise(resolve => {
      child.once('exit', (code, signal) => {
        // Drain what is left of the pipes before closing the log.
        setTimeout(() => {
          try { fs.writeSync(log, `---- exit code=${code} signal=${signal}\n`); } catch {}
          try { fs.closeSync(log); } catch {}
          resolve({ code, signal });
        }, 50);
      });
      child.once('error', err => {
        this.output += `spawn error: ${err.message}\n`;
      });
    });
    return this;
  }

  // Resolves once the broker printed a line containing `ready` and both ports accept connections;
  // rejects (with the broker's output) on timeout or early exit.
  async waitReady(timeoutMs = 60000) {
    const deadline = Date.now() + timeoutMs;
    let exited = false;
    this.exited.then(() => { exited = true; });
    while (Date.now() < deadline) {
      if (exited || !this.running) {
        const r = await this.exited;
        throw new Error(`broker exited before ready (code=${r.code} signal=${r.signal}); ` +
          `output:\n${this.output}`);
      }
      if (/\bready\b/i.test(this.output) &&
          await canConnect(Number(this.conf.listenPort)) &&
          (Number(this.conf.namesrvListenPort) === 0 ||
           await canConnect(Number(this.conf.namesrvListenPort)))) {
        return;
      }
      await sleep(50);
    }
    throw new Error(`broker not ready after ${timeoutMs} ms; output:\n${this.output}`);
  }

  // SIGTERM; resolves to the exit code (null if it died from a signal). Escalates to SIGKILL after
  // timeoutMs and throws then.
  async stop(timeoutMs = 30000) {
    if (!this.child) return 0;
    if (this.running) this.child.kill('SIGTERM');
    const timer = sleep(timeoutMs).then(() => 'timeout');
    const r = await Promise.race([this.exited, timer]);
    if (r === 'timeout') {
      this.child.kill('SIGKILL');
      await this.exited;
      throw new Error(
        `broker did not stop within ${timeoutMs} ms of SIGTERM; output:\n${this.output}`);
    }
    return r.signal ? `signal ${r.signal}` : r.code;
  }

  async kill9() {
    if (!this.running) throw new Error('broker not running');
    this.child.kill('SIGKILL');
    return this.exited;
  }
}

// Starts a broker and waits for readiness (one call for tests).
async function startBroker(opts, timeoutMs) {
  const b = new Broker(opts).start();
  await b.waitReady(timeoutMs);
  return b;
}

// The shared broker's settings, passed by run.sh.
function env() {
  return {
    namesrv: process.env.URINGMQ_NAMESRV,
    brokerAddr: process.env.URINGMQ_BROKER,
    bin: process.env.URINGMQ_BROKER_BIN,
    conf: process.env.URINGMQ_CONF,
    store: process.env.URINGMQ_STORE,
    tmp: process.env.URINGMQ_TMP || os.tmpdir(),
    brokerPid: Number(process.env.URINGMQ_BROKER_PID || 0),
    delayLevels: parseDelayLevels(process.env.URINGMQ_DELAY_LEVELS || DEFAULT_DELAY_LEVELS),
  };
}

module.exports = {
  DEFAULT_DELAY_LEVELS, parseDelayLevels, freePorts, freeBrokerPorts, brokerPorts, confText,
  readConf, makeConf, canConnect,
  sleep, Broker, startBroker, env,
};

// CLI for run.sh: `node broker.js conf <dir>` writes <dir>/broker.conf with fresh ports and prints
// shell assignments (NAMESRV_PORT, BROKER_PORT, CONF, STORE).
if (require.main === module) {
  (async () => {
    const [cmd, dir] = process.argv.slice(2);
    if (cmd !== 'conf' || !dir) {
      console.error('usage: node broker.js conf <dir>');
      process.exit(2);
    }
    const { file, conf } = await makeConf(dir);
    console.log(`NAMESRV_PORT=${conf.namesrvListenPort}`);
    console.log(`BROKER_PORT=${conf.listenPort}`);
    console.log(`CONF=${file}`);
    console.log(`STORE=${conf.storePathRootDir}`);
  })().catch(err => { console.error(err); process.exit(1); });
}
