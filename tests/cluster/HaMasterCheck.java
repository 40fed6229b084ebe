// Replication with a uringmq SYNC_MASTER and a Java 4.9.8 slave, checked with the official 4.9.8
// Java client (tests/cluster/stage2_master_test.sh runs one step per JVM; README.md beside it).
// Prints "CHECK ..." lines and "JAVA-CHECK OK", or "FAIL <why>" lines; exit 0 on OK.
// Steps:
//   send <ns> <topic> <ledger file>: 5,000 sends (every tenth with delay level 1 or 2), all
//     SEND_OK; the keys of the acknowledged ones go to the ledger.
//   consume <ns> <topic> <group> <count>: a push consumer takes at least <count> messages and
//     commits its offsets (shutdown persists them to the broker).
//   synced <master addr> <slave store dir> <topic> <group>: within 15 s the slave's
//     config/topics.json holds the topic, consumerOffset.json the master's offsets of
//     topic@group (GET_ALL_CONSUMER_OFFSET) and delayOffset.json its delay progress
//     (GET_ALL_DELAY_OFFSET).
//   readall <ns> <topic> <group> <ledger file>: a new group reads every ledger message.
//   expect <ns> <topic> <status> <min ms> <max ms>: one send answers <status> within the window
//     (SEND_OK is retried for 20 s while the status differs).

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.*;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyRemotingClient;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

public class HaMasterCheck {
  static int failures = 0;

  static void fail(String what) {
    System.out.println("FAIL " + what);
    failures++;
  }

  static DefaultMQProducer producer(String ns) throws Exception {
    DefaultMQProducer p = new DefaultMQProducer("ha_check_producer");
    p.setNamesrvAddr(ns);
    p.setSendMsgTimeout(15000);
    p.setRetryTimesWhenSendFailed(0);
    p.start();
    return p;
  }

  static void send(String ns, String topic, String ledger) throws Exception {
    DefaultMQProducer p = producer(ns);
    byte[] body = new byte[1200];
    Arrays.fill(body, (byte) 'x');
    List<String> keys = new ArrayList<>();
    Map<SendStatus, Integer> statuses = new TreeMap<>();
    long start = System.currentTimeMillis();
    for (int i = 0; i < 5000; i++) {
      Message m = new Message(topic, "t", "k" + i, body);
      if (i % 10 == 0) m.setDelayTimeLevel(1 + (i / 10) % 2);
      SendResult r = p.send(m);
      statuses.merge(r.getSendStatus(), 1, Integer::sum);
      if (r.getSendStatus() == SendStatus.SEND_OK) keys.add("k" + i);
    }
    long ms = System.currentTimeMillis() - start;
    p.shutdown();
    Files.write(Paths.get(ledger), keys);
    System.out.println("CHECK send: 5000 sends in " + ms + " ms: " + statuses);
    if (keys.size() != 5000) fail("sends not SEND_OK: " + statuses);
  }

  static DefaultMQPushConsumer consumer(String ns, String group, String topic, Set<String> got)
      throws Exception {
    DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
    c.setNamesrvAddr(ns);
    c.setInstanceName(group + "_" + System.nanoTime());
    c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
    c.subscribe(topic, "*");
    c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
      for (MessageExt m : msgs) got.add(m.getKeys());
      return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    });
    c.start();
    return c;
  }

  static void consume(String ns, String topic, String group, int count) throws Exception {
    Set<String> got = ConcurrentHashMap.newKeySet();
    DefaultMQPushConsumer c = consumer(ns, group, topic, got);
    long deadline = System.currentTimeMillis() + 60000;
    while (got.size() < count && System.currentTimeMillis() < deadline) Thread.sleep(100);
    Thread.sleep(6000);  // the client commits offsets every 5 s
    c.shutdown();
    System.out.println("CHECK consume: " + group + " took " + got.size() + " messages");
    if (got.size() < count) fail(group + " took " + got.size() + " of " + count);
  }

  static byte[] invoke(NettyRemotingClient client, String addr, int code) throws Exception {
    RemotingCommand response =
        client.invokeSync(addr, RemotingCommand.createRequestCommand(code, null), 5000);
    if (response.getCode() != 0) {
      throw new IllegalStateException("request " + code + " to " + addr + " answered "
          + response.getCode() + " " + response.getRemark());
    }
    return response.getBody();
  }

  static JSONObject file(Path path) {
    try {
      return JSON.parseObject(new String(Files.readAllBytes(path), StandardCharsets.UTF_8));
    } catch (Exception e) {
      return null;
    }
  }

  // The first difference between the master's answers and the slave's files; null when equal.
  static String syncDifference(NettyRemotingClient client, String master, Path config,
      String topic, String group) throws Exception {
    JSONObject topics = file(config.resolve("topics.json"));
    if (topics == null || !topics.getJSONObject("topicConfigTable").containsKey(topic)) {
      return "topics.json has no " + topic;
    }
    JSONObject offsets = JSON.parseObject(new String(invoke(client, master, 43),
        StandardCharsets.UTF_8));
    String key = topic + "@" + group;
    Object want = offsets.getJSONObject("offsetTable").get(key);
    if (want == null) return "the master has no offsets of " + key + ": " + offsets;
    JSONObject slaveOffsets = file(config.resolve("consumerOffset.json"));
    Object have = slaveOffsets == null ? null : slaveOffsets.getJSONObject("offsetTable").get(key);
    if (!String.valueOf(want).equals(String.valueOf(have))) {
      return "consumerOffset.json " + key + " is " + have + ", the master's " + want;
    }
    JSONObject delay = JSON.parseObject(new String(invoke(client, master, 45),
        StandardCharsets.UTF_8));
    JSONObject slaveDelay = file(config.resolve("delayOffset.json"));
    Object wantDelay = delay.get("offsetTable");
    Object haveDelay = slaveDelay == null ? null : slaveDelay.get("offsetTable");
    if (String.valueOf(wantDelay).equals("{}")) return "the master has no delay progress";
    if (!String.valueOf(wantDelay).equals(String.valueOf(haveDelay))) {
      return "delayOffset.json is " + haveDelay + ", the master's " + wantDelay;
    }
    System.out.println("CHECK synced: " + key + " " + want + "; delay levels " + wantDelay);
    return null;
  }

  static void synced(String master, String storeDir, String topic, String group)
      throws Exception {
    NettyRemotingClient client = new NettyRemotingClient(new NettyClientConfig());
    client.start();
    Path config = Paths.get(storeDir, "config");
    long start = System.currentTimeMillis();
    String diff = "not checked";
    while (System.currentTimeMillis() - start < 15000) {
      diff = syncDifference(client, master, config, topic, group);
      if (diff == null) break;
      Thread.sleep(500);
    }
    client.shutdown();
    if (diff != null) fail("after 15 s the slave's files differ: " + diff);
    else System.out.println("CHECK synced within " + (System.currentTimeMillis() - start) + " ms");
  }

  static void readAll(String ns, String topic, String group, String ledger) throws Exception {
    Set<String> want = new HashSet<>(Files.readAllLines(Paths.get(ledger)));
    Set<String> got = ConcurrentHashMap.newKeySet();
    DefaultMQPushConsumer c = consumer(ns, group, topic, got);
    long start = System.currentTimeMillis();
    while (!got.containsAll(want) && System.currentTimeMillis() - start < 90000) Thread.sleep(200);
    c.shutdown();
    Set<String> missing = new TreeSet<>(want);
    missing.removeAll(got);
    System.out.println("CHECK readall: " + group + " read " + got.size() + " of " + want.size()
        + " ledger messages from the slave in " + (System.currentTimeMillis() - start) + " ms");
    if (!missing.isEmpty()) {
      fail(missing.size() + " acknowledged messages not read from the slave, e.g. "
          + missing.iterator().next());
    }
  }

  static void expect(String ns, String topic, String status, long minMs, long maxMs)
      throws Exception {
    DefaultMQProducer p = producer(ns);
    p.fetchPublishMessageQueues(topic);  // the route first: the time measured is the send's
    long until = System.currentTimeMillis() + 20000;
    SendStatus got = null;
    long ms = 0;
    do {
      long start = System.currentTimeMillis();
      try {
        got = p.send(new Message(topic, "t", "probe", "probe".getBytes())).getSendStatus();
      } catch (Exception e) {
        System.out.println("CHECK expect: send failed: " + e);
      }
      ms = System.currentTimeMillis() - start;
      if (String.valueOf(got).equals(status)) break;
      Thread.sleep(500);
    } while (status.equals("SEND_OK") && System.currentTimeMillis() < until);
    p.shutdown();
    System.out.println("CHECK expect " + status + ": answered " + got + " in " + ms + " ms");
    if (!String.valueOf(got).equals(status)) fail("expected " + status + ", got " + got);
    else if (ms < minMs || ms > maxMs) {
      fail(status + " answered in " + ms + " ms, not within [" + minMs + ", " + maxMs + "]");
    }
  }

  public static void main(String[] a) throws Exception {
    switch (a[0]) {
      case "send": send(a[1], a[2], a[3]); break;
      case "consume": consume(a[1], a[2], a[3], Integer.parseInt(a[4])); break;
      case "synced": synced(a[1], a[2], a[3], a[4]); break;
      case "readall": readAll(a[1], a[2], a[3], a[4]); break;
      case "expect":
        expect(a[1], a[2], a[3], Long.parseLong(a[4]), Long.parseLong(a[5]));
        break;
      default: fail("unknown step " + a[0]);
    }
    if (failures == 0) System.out.println("JAVA-CHECK OK");
    System.exit(failures == 0 ? 0 : 1);
  }
}
