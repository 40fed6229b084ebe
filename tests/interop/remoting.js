'use strict';
// A tiny RocketMQ remoting (4.x TCP protocol, JSON header) client written for the tests, plus a
// decoder for PULL_MESSAGE bodies (MessageExt, magic v1). Used where ali-ons cannot reach
// (pulling %DLQ% topics) and to send malformed frames.
//
// Frame: int32 totalLength (= 4 + headerLength + bodyLength) | int32 serializeType<<24 |
// headerLength | header JSON | body. All big-endian.

const net = require('node:net');
const zlib = require('node:zlib');

const Code = {
  SEND_MESSAGE_V2: 310, PULL_MESSAGE: 11, QUERY_CONSUMER_OFFSET: 14, GET_MAX_OFFSET: 30,
  GET_MIN_OFFSET: 31, GET_ROUTEINFO_BY_TOPIC: 105, HEART_BEAT: 34, UPDATE_AND_CREATE_TOPIC: 17,
};

function encodeFrame(header, body) {
  const h = Buffer.from(JSON.stringify(header));
  const b = body ? Buffer.from(body) : Buffer.alloc(0);
  const out = Buffer.alloc(8 + h.length + b.length);
  out.writeInt32BE(4 + h.length + b.length, 0);
  out.writeInt32BE(h.length, 4);
  h.copy(out, 8);
  b.copy(out, 8 + h.length);
  return out;
}

class RawClient {
  constructor(socket) {
    this.socket = socket;
    this.buf = Buffer.alloc(0);
    this.pending = new Map();
    this.frames = []; // every decoded frame, in arrival order
    this.closed = false;
    this.closeWaiters = [];
    this.opaque = 1000;
    socket.on('data', chunk => this._onData(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      for (const p of this.pending.values()) p.reject(new Error('connection closed'));
      this.pending.clear();
      for (const w of this.closeWaiters) w();
    });
  }

  static connect(addr, timeoutMs = 5000) {
    const [host, port] = addr.split(':');
    return new Promise((resolve, reject) => {
      const s = net.connect({ host, port: Number(port) });
      const timer = setTimeout(() => {
        s.destroy();
        reject(new Error(`connect ${addr} timed out`));
      }, timeoutMs);
      s.once('connect', () => {
        clearTimeout(timer);
        s.setNoDelay(true);
        resolve(new RawClient(s));
      });
      s.once('error', err => { clearTimeout(timer); reject(err); });
    });
  }

  _onData(chunk) {
    this.buf = Buffer.concat([this.buf, chunk]);
    while (this.buf.length >= 4) {
      const total = this.buf.readInt32BE(0);
      if (total < 4 || total > 64 << 20) {
        this.protocolError = `bad frame length ${total} from server`;
        this.socket.destroy();
        return;
      }
      if (this.buf.length < 4 + total) return;
      const frame = this.buf.subarray(4, 4 + total);
      this.buf = this.buf.subarray(4 + total);
      const word = frame.readUInt32BE(0);
      const serializeType = word >>> 24;
      const headerLength = word & 0xffffff;
      const headerText = frame.subarray(4, 4 + headerLength).toString();
      let header;
      try {
        header = JSON.parse(headerText);
      } catch (err) {
        this.protocolError = `bad JSON header from server: ${headerText.slice(0, 200)}`;
        this.socket.destroy();
        return;
      }
      const resp = Object.assign({ serializeType, rawHeader: headerText }, header, {
        body: Buffer.from(frame.subarray(4 + headerLength)),
      });
      this.frames.push(resp);
      const p = this.pending.get(resp.opaque);
      if (p && (resp.flag & 1)) {
        this.pending.delete(resp.opaque);
        clearTimeout(p.timer);
        p.resolve(resp);
      }
    }
  }

  // Sends a request and resolves with the response (header fields + body Buffer).
  request(code, extFields = {}, body = null, timeoutMs = 10000, opaque = ++this.opaque) {
    const ext = {};
    for (const [k, v] of Object.entries(extFields)) ext[k] = String(v);
    const header = { code, language: 'JAVA', version: 121, opaque, flag: 0, extFields: ext };
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error('connection closed'));
      const timer = setTimeout(() => {
        this.pending.delete(opaque);
        reject(new Error(`request code ${code} opaque ${opaque}: no response in ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(opaque, { resolve, reject, timer });
      this.socket.write(encodeFrame(header, body));
    });
  }

  write(bytes) {
    return new Promise(resolve => this.socket.write(bytes, () => resolve()));
  }

  // Resolves true once the server closed the connection, false after timeoutMs.
  waitClose(timeoutMs) {
    if (this.closed) return Promise.resolve(true);
    return new Promise(resolve => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.closeWaiters.push(() => { clearTimeout(timer); resolve(true); });
    });
  }

  end() { this.socket.end(); }
  destroy() { this.socket.destroy(); }
}

// Decodes a PULL_MESSAGE body: concatenated MessageExt records (magic v1, IPv4 hosts).
function decodeMessages(buf) {
  const out = [];
  let p = 0;
  while (p + 4 <= buf.length) {
    const start = p;
    const totalSize = buf.readInt32BE(p); p += 4;
    const m = { totalSize };
    m.magic = buf.readInt32BE(p); p += 4;
    m.bodyCRC = buf.readInt32BE(p); p += 4;
    m.queueId = buf.readInt32BE(p); p += 4;
    m.flag = buf.readInt32BE(p); p += 4;
    m.queueOffset = Number(buf.readBigInt64BE(p)); p += 8;
    m.physicalOffset = buf.readBigInt64BE(p); p += 8; // BigInt: may exceed 2^53
    m.sysFlag = buf.readInt32BE(p); p += 4;
    m.bornTimestamp = Number(buf.readBigInt64BE(p)); p += 8;
    m.bornHost = `${buf[p]}.${buf[p + 1]}.${buf[p + 2]}.${buf[p + 3]}:${buf.readInt32BE(p + 4)}`;
    p += 8;
    m.storeTimestamp = Number(buf.readBigInt64BE(p)); p += 8;
    m.storeHost = `${buf[p]}.${buf[p + 1]}.${buf[p + 2]}.${buf[p + 3]}:${buf.readInt32BE(p + 4)}`;
    p += 8;
    m.reconsumeTimes = buf.readInt32BE(p); p += 4;
    m.preparedTransactionOffset = Number(buf.readBigInt64BE(p)); p += 8;
    const bodyLen = buf.readInt32BE(p); p += 4;
    let body = buf.subarray(p, p + bodyLen); p += bodyLen;
    if (m.sysFlag & 1) body = zlib.inflateSync(body);
    m.body = Buffer.from(body);
    const topicLen = buf.readUInt8(p); p += 1;
    m.topic = buf.subarray(p, p + topicLen).toString(); p += topicLen;
    const propLen = buf.readInt16BE(p); p += 2;
    const props = buf.subarray(p, p + propLen).toString(); p += propLen;
    m.properties = {};
    for (const pair of props.split('\u0002')) {
      if (!pair) continue;
      const i = pair.indexOf('\u0001');
      if (i >= 0) m.properties[pair.slice(0, i)] = pair.slice(i + 1);
    }
    if (totalSize > 0 && start + totalSize !== p) {
      m.sizeMismatch = `TOTALSIZE ${totalSize} but record decoded to ${p - start} bytes`;
    }
    out.push(m);
  }
  return out;
}

// Pulls every message of every queue of `topic` (no long-poll). Returns { route, messages,
// responses } where responses records each PULL's code per queue for diagnostics.
async function pullAll(client, topic, group, { maxPerPull = 32, limit = 10000 } = {}) {
  const routeResp = await client.request(Code.GET_ROUTEINFO_BY_TOPIC, { topic });
  if (routeResp.code !== 0) {
    return { route: null, routeResp, messages: [], responses: [] };
  }
  const route = JSON.parse(routeResp.body.toString());
  const queueNums = Math.max(0, ...route.queueDatas.map(q => q.readQueueNums));
  const messages = [];
  const responses = [];
  for (let queueId = 0; queueId < queueNums; queueId++) {
    let offset = 0;
    for (let guard = 0; guard < 1000 && messages.length < limit; guard++) {
      const r = await client.request(Code.PULL_MESSAGE, {
        consumerGroup: group, topic, queueId, queueOffset: offset, maxMsgNums: maxPerPull,
        sysFlag: 0, commitOffset: 0, suspendTimeoutMillis: 0, subscription: '*', subVersion: 0,
      });
      responses.push({ queueId, offset, code: r.code, remark: r.remark, ext: r.extFields });
      if (r.code === 0) {
        const msgs = decodeMessages(r.body);
        messages.push(...msgs);
        const next = Number(r.extFields.nextBeginOffset);
        if (!(next > offset)) break;
        offset = next;
      } else if (r.code === 21 && Number(r.extFields && r.extFields.nextBeginOffset) > offset) {
        offset = Number(r.extFields.nextBeginOffset);
      } else {
        break; // 19 no new message, 20 nothing matched, or an error
      }
    }
  }
  return { route, routeResp, messages, responses };
}

module.exports = { Code, encodeFrame, RawClient, decodeMessages, pullAll };
