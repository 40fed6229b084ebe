#!/usr/bin/env python3
"""Writes the seed corpora of the record_decode, properties, consume_queue_unit, checkpoint and
broker_conf fuzz targets (fuzz/corpus/<name>/). The remoting_frame corpus has its own script.

Run from anywhere; the files are committed, this script says how they were made. Layouts follow
engine/FORMAT.md: the V1 CommitLog record with the trailing __CRC32# property (CRC-32 IEEE of
every record byte before its 10 digits), the 64-byte checkpoint (crc32c), 20-byte ConsumeQueue
units, and the input layout of fuzz/consume_queue_unit_fuzz.cc.
"""
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def write(target, name, data):
    d = os.path.join(HERE, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- record_decode ----
MAGIC_V1 = 0xDAA320A7
MAGIC_BLANK = 0xCBD43194


def ipv4(a, b, c, d, port):
    return bytes([a, b, c, d]) + struct.pack(">i", port)


def record(topic=b"TopicTest", body=b"hello", props=b"TAGS\x01TagA\x02KEYS\x01k1", queue_id=0,
           queue_offset=0, physical_offset=0, born=ipv4(127, 0, 0, 1, 50000),
           store=ipv4(127, 0, 0, 1, 10911), sys_flag=0, with_crc=True, bad_crc=False):
    if len(born) == 20:
        sys_flag |= 0x10
    if len(store) == 20:
        sys_flag |= 0x20
    stored_props = props
    if with_crc:
        stored_props = props + (b"\x02" if props else b"") + b"__CRC32#\x01" + b"0" * 10
    head = (struct.pack(">I", MAGIC_V1) + struct.pack(">I", zlib.crc32(body) & 0x7FFFFFFF) +
            struct.pack(">iiqqiq", queue_id, 0, queue_offset, physical_offset, sys_flag,
                        1764460800000) + born + struct.pack(">q", 1764460800123) + store +
            struct.pack(">iq", 0, 0) + struct.pack(">i", len(body)) + body +
            struct.pack(">B", len(topic)) + topic + struct.pack(">h", len(stored_props)) +
            stored_props)
    rec = struct.pack(">I", 4 + len(head)) + head
    if with_crc:
        crc = zlib.crc32(rec[:-10])
        if bad_crc:
            crc ^= 1
        rec = rec[:-10] + b"%010d" % crc
    return rec


def blank(remaining):
    return struct.pack(">II", remaining, MAGIC_BLANK)


def record_decode():
    t = "record_decode"
    write(t, "simple.bin", record())
    write(t, "no_user_properties.bin", record(props=b""))
    v6 = bytes(range(16))
    write(t, "ipv6_hosts.bin",
          record(born=v6 + struct.pack(">i", 1), store=v6 + struct.pack(">i", 2)))
    write(t, "body_300.bin", record(body=bytes(i % 251 for i in range(300))))
    first = record(queue_offset=0, physical_offset=0)
    second = record(queue_offset=1, physical_offset=len(first), body=b"second")
    write(t, "two_records_then_blank.bin", first + second + blank(64) + b"\x00" * 56)
    write(t, "rocketmq_no_crc.bin", record(with_crc=False))
    write(t, "bad_record_crc.bin", record(bad_crc=True))
    write(t, "blank.bin", blank(4096))
    write(t, "zeros.bin", b"\x00" * 16)
    write(t, "truncated.bin", record()[:60])
    write(t, "multi_tags.bin", record(sys_flag=0x2, props=b"TAGS\x01a||b\x02DELAY\x013"))


# ---- properties ----
def properties():
    t = "properties"
    write(t, "two.txt", b"TAGS\x01TagA\x02KEYS\x01k1")
    write(t, "with_crc.txt", b"TAGS\x01TagA\x02__CRC32#\x010123456789")
    write(t, "malformed.txt", b"\x01x\x02y\x01\x02\x02a\x01b\x01c\x02TAGS\x01t")
    write(t, "query_name.txt", b"KEYS\x00TAGS\x01a\x02KEYS\x01first\x02KEYS\x01second")
    write(t, "empty_entries.txt", b"\x02\x02A\x01B\x02")
    write(t, "delay.txt", b"DELAY\x013\x02WAIT\x01true\x02UNIQ_KEY\x01AC1100010000")


# ---- checkpoint ----
def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def checkpoint(durable, ts, segment, version=1, flags=0, reserved=b"\x00" * 20, crc_xor=0):
    body = b"UMQCKPT1" + struct.pack(">IIQqQ", version, flags, durable, ts, segment) + reserved
    assert len(body) == 60
    return body + struct.pack(">I", crc32c(body) ^ crc_xor)


def checkpoint_corpus():
    t = "checkpoint"
    write(t, "valid.bin", checkpoint(1 << 20, 1764460800123, 1 << 30))
    write(t, "zero.bin", checkpoint(0, 0, 1 << 30))
    write(t, "bad_crc.bin", checkpoint(4096, 1, 1 << 30, crc_xor=0x10))
    write(t, "version_2.bin", checkpoint(4096, 1, 1 << 30, version=2))
    write(t, "flags_set.bin", checkpoint(4096, 1, 1 << 30, flags=1, reserved=b"\x01" * 20))
    write(t, "short.bin", checkpoint(4096, 1, 1 << 30)[:40])
    write(t, "long.bin", checkpoint(4096, 1, 1 << 30) + b"\x00")


# ---- consume_queue_unit ----
def unit(log_offset, size, tags=0):
    return struct.pack(">QIq", log_offset, size, tags)


def cq_input(mode, log_end, units):
    return bytes([mode]) + struct.pack(">Q", log_end) + b"".join(units)


def consume_queue_unit():
    t = "consume_queue_unit"
    seq = [unit(100 * i, 100, i * 7919) for i in range(20)]
    write(t, "one_file.bin", cq_input(0, 1000, seq[:10]))
    write(t, "two_files.bin", cq_input(1, 2000, seq))
    write(t, "beyond_log_end.bin", cq_input(1, 1050, seq))
    write(t, "fillers_first.bin", cq_input(0, 1000, [unit(0, 0x7FFFFFFF)] * 3 + seq[:5]))
    write(t, "gap.bin", cq_input(2 | 4, 10**6, seq + seq))
    write(t, "out_of_order.bin", cq_input(0, 10**6, [seq[3], seq[1], seq[2]]))
    write(t, "short_file.bin", cq_input(8, 1000, seq[:2]))
    write(t, "tags_text.bin", "TagA||中文\xff".encode("utf-8", "surrogateescape"))


# ---- broker_conf ----
def broker_conf():
    t = "broker_conf"
    with open(os.path.join(REPO, "tools", "broker.conf"), "rb") as f:
        write(t, "tools_broker.conf", f.read())
    write(t, "minimal.conf", b"brokerName=b1\nlistenPort=10911\n")
    write(t, "comments.conf", b"# c\n! d\n\n  brokerClusterName = C1  \nflushDiskType=SYNC_FLUSH\n")
    write(t, "ignored_keys.conf", b"brokerId=0\nbrokerRole=ASYNC_MASTER\ndeleteWhen=04\n")
    write(t, "delay_levels.conf", b"messageDelayLevel=1s 5s 10s 30s 1m 2h\nshardCount=2\n")
    write(t, "bad.conf", b"listenPort=99999\nlistenPrt=1\nnoequals\n")
    write(t, "numbers.conf", b"maxMessageSize=4194304\nmappedFileSizeCommitLog=1073741824\n"
                             b"mappedFileSizeConsumeQueue=6000000\ndiskMaxUsedSpaceRatio=75\n"
                             b"bindAddress=0.0.0.0\nbrokerIP1=10.0.0.1\nlogLevel=debug\n")
    write(t, "tls.conf", b"tls.server.mode=enforcing\n"
                         b"tls.server.certPath=/etc/uringmq/tls/server.pem\n"
                         b"tls.server.keyPath=/etc/uringmq/tls/server.key\n"
                         b"tls.server.keyPassword=secret\ntls.server.need.client.auth=require\n"
                         b"tls.server.authClient=true\n"
                         b"tls.server.trustCertPath=/etc/uringmq/tls/ca.pem\n")


if __name__ == "__main__":
    record_decode()
    properties()
    checkpoint_corpus()
    consume_queue_unit()
    broker_conf()
