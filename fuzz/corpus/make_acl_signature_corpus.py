#!/usr/bin/env python3
"""Writes fuzz/corpus/acl_signature/: seeds for fuzz/acl_signature_fuzz.cc.
Each seed is plain_acl.yml \\0 "code\\nkey=value..." \\0 body \\0 peer address."""
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "acl_signature")

RULES = """globalWhiteRemoteAddresses:
  - 10.10.*.*
  - 192.168.0.{1,2}
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.1-100
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - TopicA=PUB|SUB
      - "TopicB=PUB"
    groupPerms: [groupD=DENY, 'groupE=SUB']
  - accessKey: rocketmq2
    secretKey: abcdefgh
    admin: true
"""

SEEDS = {
    "send_v2.bin": (RULES, "310\na=pg\nb=TopicA\nAccessKey=RocketMQ\nSignature=x", "hello",
                    "127.0.0.1"),
    "send_denied.bin": (RULES, "10\ngroup=pg\ntopic=TopicC\nAccessKey=RocketMQ", "", "127.0.0.1"),
    "pull.bin": (RULES, "11\nconsumerGroup=groupD\ntopic=TopicA\nqueueId=0", "", "10.10.1.1"),
    "heartbeat.bin": (RULES, "34\nAccessKey=RocketMQ",
                      '{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet"'
                      ':[{"topic":"TopicA"},{"topic":"%RETRY%g"}]}]}', "127.0.0.1"),
    "admin.bin": (RULES, "17\ntopic=T\nAccessKey=rocketmq2", "", "192.168.1.50"),
    "unique_key.bin": (RULES, "12\ntopic=TopicA\nkey=k\n_UNIQUE_KEY_QUERY=true", "", "1.2.3.4"),
    "duplicates.bin": (RULES, "310\nb=TopicA\nb=TopicC\nAccessKey=RocketMQ\nAccessKey=rocketmq2",
                       "x", "127.0.0.1"),
    "empty_rules.bin": ("# nothing\n", "310\nb=TopicA", "", "127.0.0.1"),
    "bad_rules.bin": ("accounts:\n  - accessKey: short\n\tsecretKey: x\n", "310", "", ""),
    "quoted.bin": ('accounts:\n  - accessKey: "Rocket\\"MQ"\n    secretKey: \'12\'\'345678\'\n'
                   '    topicPerms:\n    - T=SUB\n', "11\ntopic=T\nconsumerGroup=g", "", "::1"),
}

os.makedirs(HERE, exist_ok=True)
for name, parts in SEEDS.items():
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(b"\0".join(p.encode() for p in parts))
