#!/usr/bin/env python3
"""Writes the seed corpus of the remoting_frame fuzz target (fuzz/corpus/remoting_frame/).

Run from anywhere; the files are committed, this script says how they were made.
Frames follow net/remoting/FORMAT.md: int32 totalLength, int32 (type << 24 | headerLength),
header, body.
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "remoting_frame")


def frame(header: bytes, body: bytes = b"", serialize_type: int = 0) -> bytes:
    return (struct.pack(">I", 4 + len(header) + len(body)) +
            struct.pack(">I", (serialize_type << 24) | len(header)) + header + body)


def binary_header(code, language, version, opaque, flag, remark, ext):
    out = struct.pack(">hBhii", code, language, version, opaque, flag)
    r = remark.encode() if remark else b""
    out += struct.pack(">i", len(r)) + r
    e = b""
    for k, v in ext:
        e += struct.pack(">h", len(k)) + k.encode() + struct.pack(">i", len(v)) + v.encode()
    return out + struct.pack(">i", len(e)) + e


SEND_310 = (b'{"code":310,"language":"JAVA","opaque":6,"flag":0,"version":121,'
            b'"extFields":{"a":"PG","b":"T","c":"TBW102","d":4,"e":0,"f":0,"g":1796009199894,'
            b'"h":0,"i":"TAGS\\u0001TagA\\u0002DELAY\\u00012\\u0002","j":0,"k":false}}')
HEARTBEAT_34 = b'{"code":34,"language":"JAVA","opaque":2,"flag":0,"version":121}'
HEARTBEAT_BODY = (b'{"clientID":"127.0.0.1@42","consumerDataSet":[{"groupName":"CG",'
                  b'"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",'
                  b'"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","unitMode":false,'
                  b'"subscriptionDataSet":[{"topic":"T","subString":"*","classFilterMode":false,'
                  b'"tagsSet":[],"codeSet":[],"subVersion":1796009199872}]}],'
                  b'"producerDataSet":[{"groupName":"PG"}]}')
PULL_11 = (b'{"code":11,"language":"JAVA","opaque":9,"flag":0,"version":121,"extFields":'
           b'{"consumerGroup":"CG","topic":"T","queueId":0,"queueOffset":0,"maxMsgNums":32,'
           b'"sysFlag":6,"commitOffset":0,"suspendTimeoutMillis":15000,"subscription":"*",'
           b'"subVersion":1796009199872}}')
RESPONSE = (b'{"code":0,"language":"JAVA","version":0,"opaque":6,"flag":1,'
            b'"remark":"ok \\ud83d\\ude00",'
            b'"extFields":{"msgId":"7F00000100002A9F0000000000000000","queueId":"0",'
            b'"queueOffset":"0"},"serializeTypeCurrentRPC":"JSON"}')

SEEDS = {
    "alions_send_310.bin": frame(SEND_310, b"hello"),
    "heartbeat_34.bin": frame(HEARTBEAT_34, HEARTBEAT_BODY),
    "pull_11.bin": frame(PULL_11),
    "response_310.bin": frame(RESPONSE),
    "binary_header.bin": frame(binary_header(34, 9, 121, 7, 0, "remark",
                                             [("topic", "T"), ("queueId", "3")]), b"xy", 1),
    "two_frames.bin": frame(PULL_11) + frame(HEARTBEAT_34, HEARTBEAT_BODY),
    "truncated_310.bin": frame(SEND_310, b"hello")[:60],
    "huge_length.bin": b"\xff\xff\xff\xff",
    "header_longer_than_frame.bin": struct.pack(">II", 10, 99),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(SEEDS)} files to {OUT}")


if __name__ == "__main__":
    main()
