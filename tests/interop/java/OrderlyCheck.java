// The official RocketMQ 4.9.8 Java client's orderly consumers against uringmq-broker.
// Keyed sequences (8 keys) are sent with a MessageQueueSelector (hash of the key, so each key
// stays in one queue) and consumed with MessageListenerOrderly in clustering mode; for every
// key the messages must arrive in sequence (a message may come again after a rebalance, never
// one ahead of the next expected), and all must arrive:
//   1. one member alone;
//   2. a second member joins: the queues split half and half (timed: "CHECK join-rebalance-ms";
//      4 queues on each of the broker's presented brokers, one per shard), and both
//      members consume the next messages;
//   3. the second member shuts down while messages are being sent: the first takes every queue
//      back (timed: "CHECK leave-rebalance-ms"), nothing is lost;
//   4. a listener that answers SUSPEND_CURRENT_QUEUE_A_MOMENT once gets the same message again
//      before the ones after it in its queue;
//   5. a message suspended past maxReconsumeTimes (1) goes to the group's %DLQ% (the client
//      sends it back; the broker dead-letters it) and the queue moves on;
//   6. a broadcasting orderly consumer gets every message in order.
// Rebalances must finish within MAX_REBALANCE_MS: the broker's NOTIFY_CONSUMER_IDS_CHANGED
// makes them follow a member change at once instead of at the clients' next 20 s rebalance.
// Prints "JAVA-CHECK OK", or a "FAIL <why>" line per failure; exit 0 on OK.
// Usage: java -cp <client class path>:. OrderlyCheck <nameserver host:port>

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;

public class OrderlyCheck {
  static final int KEYS = 8;
  static final long MAX_REBALANCE_MS = 5_000;
  static final long WAIT_MS = 30_000;
  static final MessageQueueSelector BY_KEY =
      (mqs, msg, key) -> mqs.get(Math.abs(key.hashCode() % mqs.size()));
  static String nameServer;
  static int failures = 0;

  static synchronized void fail(String what) {
    System.out.println("FAIL " + what);
    failures++;
  }

  // Order per key: the next expected sequence number per key, duplicates and per-member counts.
  static class OrderChecker {
    final Map<String, Integer> next = new ConcurrentHashMap<>();
    final Map<String, AtomicInteger> perMember = new ConcurrentHashMap<>();
    final AtomicInteger duplicates = new AtomicInteger();
    final AtomicInteger received = new AtomicInteger();

    synchronized void consumed(String member, MessageExt m) {
      String[] parts = new String(m.getBody(), StandardCharsets.UTF_8).split(":");
      String key = parts[0];
      int seq = Integer.parseInt(parts[1]);
      int expected = next.getOrDefault(key, 0);
      if (seq > expected) {
        fail(member + " got " + key + ":" + seq + " before " + key + ":" + expected);
        next.put(key, seq + 1);
      } else if (seq < expected) {
        duplicates.incrementAndGet();  // a replay after a rebalance, in order
      } else {
        next.put(key, seq + 1);
      }
      received.incrementAndGet();
      perMember.computeIfAbsent(member, k -> new AtomicInteger()).incrementAndGet();
    }

    boolean allUpTo(int seqs) {
      for (int k = 0; k < KEYS; k++) {
        if (next.getOrDefault("K" + k, 0) < seqs) return false;
      }
      return true;
    }

    boolean waitUpTo(int seqs, long timeoutMs) throws InterruptedException {
      long deadline = System.currentTimeMillis() + timeoutMs;
      while (!allUpTo(seqs) && System.currentTimeMillis() < deadline) Thread.sleep(20);
      return allUpTo(seqs);
    }
  }

  static DefaultMQProducer producer() throws Exception {
    DefaultMQProducer p = new DefaultMQProducer("OrderlyCheckProducer");
    p.setNamesrvAddr(nameServer);
    p.start();
    return p;
  }

  static void sendKeyed(DefaultMQProducer p, String topic, int from, int to, long pauseMs)
      throws Exception {
    for (int seq = from; seq < to; seq++) {
      for (int k = 0; k < KEYS; k++) {
        String key = "K" + k;
        Message m = new Message(topic, "T", key, (key + ":" + seq).getBytes(StandardCharsets.UTF_8));
        SendResult r = p.send(m, BY_KEY, key);
        if (r.getSendStatus() != SendStatus.SEND_OK) fail("send " + r);
      }
      if (pauseMs > 0) Thread.sleep(pauseMs);
    }
  }

  static DefaultMQPushConsumer orderly(String group, String topic, String name,
      MessageModel model, MessageListenerOrderly listener) throws Exception {
    DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
    c.setNamesrvAddr(nameServer);
    c.setInstanceName(name);
    c.setMessageModel(model);
    c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
    c.subscribe(topic, "*");
    c.registerMessageListener(listener);
    c.start();
    return c;
  }

  static MessageListenerOrderly recording(OrderChecker checker, String member) {
    return (msgs, context) -> {
      for (MessageExt m : msgs) checker.consumed(member, m);
      return ConsumeOrderlyStatus.SUCCESS;
    };
  }

  static int queuesHeld(DefaultMQPushConsumer c, String topic) {
    int n = 0;
    for (MessageQueue mq :
        c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().keySet()) {
      if (mq.getTopic().equals(topic)) n++;
    }
    return n;
  }

  // Milliseconds until `a` holds wantA queues of topic and `b` (when not null) wantB; -1 if not
  // within WAIT_MS.
  static long waitForSplit(DefaultMQPushConsumer a, int wantA, DefaultMQPushConsumer b, int wantB,
      String topic, long startMs) throws InterruptedException {
    long deadline = startMs + WAIT_MS + 20_000;
    while (System.currentTimeMillis() < deadline) {
      if (queuesHeld(a, topic) == wantA && (b == null || queuesHeld(b, topic) == wantB)) {
        return System.currentTimeMillis() - startMs;
      }
      Thread.sleep(5);
    }
    return -1;
  }

  static void clustering(DefaultMQProducer p) throws Exception {
    String topic = "OrderlyKeyed";
    OrderChecker checker = new OrderChecker();
    DefaultMQPushConsumer c1 = orderly("OrderlyCheckGroup", topic, "member1",
        MessageModel.CLUSTERING, recording(checker, "member1"));
    sendKeyed(p, topic, 0, 10, 0);
    if (!checker.waitUpTo(10, WAIT_MS)) fail("one member: not all of 80 messages in 30 s");

    // The topic's queues over every broker of its route (4 on each presented broker).
    int queues = p.fetchPublishMessageQueues(topic).size();
    System.out.println("CHECK queues " + queues);
    if (queues < 2 || queues % 2 != 0) fail("the topic has " + queues + " queues");
    long joinStart = System.currentTimeMillis();
    DefaultMQPushConsumer c2 = orderly("OrderlyCheckGroup", topic, "member2",
        MessageModel.CLUSTERING, recording(checker, "member2"));
    long join = waitForSplit(c1, queues / 2, c2, queues / 2, topic, joinStart);
    System.out.println("CHECK join-rebalance-ms " + join);
    if (join < 0 || join > MAX_REBALANCE_MS) fail("join rebalance took " + join + " ms");
    sendKeyed(p, topic, 10, 20, 0);
    if (!checker.waitUpTo(20, WAIT_MS)) fail("two members: not all messages in 30 s");
    if (checker.perMember.getOrDefault("member2", new AtomicInteger()).get() == 0) {
      fail("the second member consumed nothing");
    }

    Thread sender = new Thread(() -> {
      try {
        sendKeyed(p, topic, 20, 60, 10);
      } catch (Exception e) {
        fail("sending while a member leaves: " + e);
      }
    });
    sender.start();
    Thread.sleep(150);
    long leaveStart = System.currentTimeMillis();
    c2.shutdown();
    long leave = waitForSplit(c1, queues, null, 0, topic, leaveStart);
    System.out.println("CHECK leave-rebalance-ms " + leave);
    if (leave < 0 || leave > MAX_REBALANCE_MS) fail("leave rebalance took " + leave + " ms");
    sender.join();
    if (!checker.waitUpTo(60, WAIT_MS)) fail("after a member left: not all messages in 30 s");
    System.out.println("CHECK clustering received=" + checker.received.get() + " duplicates="
        + checker.duplicates.get() + " perMember=" + checker.perMember);
    c1.shutdown();
  }

  // SUSPEND_CURRENT_QUEUE_A_MOMENT once for s0: s0 again, then s1..s4, in that order.
  static void suspendOnce(DefaultMQProducer p) throws Exception {
    String topic = "OrderlySuspend";
    List<String> seen = Collections.synchronizedList(new ArrayList<>());
    AtomicInteger suspended = new AtomicInteger();
    DefaultMQPushConsumer c = orderly("OrderlySuspendGroup", topic, "suspend",
        MessageModel.CLUSTERING, (msgs, context) -> {
          String body = new String(msgs.get(0).getBody(), StandardCharsets.UTF_8);
          seen.add(body);
          if (body.equals("s0") && suspended.getAndIncrement() == 0) {
            context.setSuspendCurrentQueueTimeMillis(200);
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
          }
          return ConsumeOrderlyStatus.SUCCESS;
        });
    for (int i = 0; i < 5; i++) {
      Message m = new Message(topic, ("s" + i).getBytes(StandardCharsets.UTF_8));
      p.send(m, (mqs, msg, arg) -> mqs.get(0), null);
    }
    long deadline = System.currentTimeMillis() + WAIT_MS;
    while (seen.size() < 6 && System.currentTimeMillis() < deadline) Thread.sleep(20);
    c.shutdown();
    System.out.println("CHECK suspend seen=" + seen);
    if (!seen.equals(List.of("s0", "s0", "s1", "s2", "s3", "s4"))) {
      fail("suspend once: expected [s0, s0, s1, s2, s3, s4], got " + seen);
    }
  }

  // Suspended past maxReconsumeTimes: the client sends d0 back, the broker puts it in %DLQ%.
  static void deadLetter(DefaultMQProducer p) throws Exception {
    String topic = "OrderlyDead";
    String group = "OrderlyDeadGroup";
    List<String> seen = Collections.synchronizedList(new ArrayList<>());
    DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
    c.setNamesrvAddr(nameServer);
    c.setInstanceName("dead");
    c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
    c.setMaxReconsumeTimes(1);
    c.setSuspendCurrentQueueTimeMillis(100);
    c.subscribe(topic, "*");
    c.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
      String body = new String(msgs.get(0).getBody(), StandardCharsets.UTF_8);
      seen.add(body);
      return body.equals("d0") ? ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                               : ConsumeOrderlyStatus.SUCCESS;
    });
    c.start();
    for (int i = 0; i < 2; i++) {
      p.send(new Message(topic, ("d" + i).getBytes(StandardCharsets.UTF_8)),
          (mqs, msg, arg) -> mqs.get(0), null);
    }
    long deadline = System.currentTimeMillis() + WAIT_MS;
    while (!seen.contains("d1") && System.currentTimeMillis() < deadline) Thread.sleep(20);
    c.shutdown();
    System.out.println("CHECK dead-letter seen=" + seen);
    if (!seen.contains("d1")) fail("dead letter: d1 never consumed after d0 was given up");

    DefaultMQPullConsumer puller = new DefaultMQPullConsumer("OrderlyDeadReader");
    puller.setNamesrvAddr(nameServer);
    puller.start();
    String dlq = "%DLQ%" + group;
    String found = null;
    deadline = System.currentTimeMillis() + WAIT_MS;
    while (found == null && System.currentTimeMillis() < deadline) {
      for (MessageQueue mq : puller.fetchSubscribeMessageQueues(dlq)) {
        PullResult r = puller.pull(mq, "*", 0, 32);
        if (r.getPullStatus() != PullStatus.FOUND) continue;
        for (MessageExt m : r.getMsgFoundList()) {
          found = new String(m.getBody(), StandardCharsets.UTF_8) + " reconsumeTimes="
              + m.getReconsumeTimes() + " RETRY_TOPIC=" + m.getProperty("RETRY_TOPIC");
        }
      }
      if (found == null) Thread.sleep(100);
    }
    puller.shutdown();
    System.out.println("CHECK dead-letter dlq=" + found);
    if (found == null || !found.startsWith("d0 ")) fail("d0 not in " + dlq + ": " + found);
  }

  static void broadcasting(DefaultMQProducer p) throws Exception {
    String topic = "OrderlyBroadcast";
    OrderChecker checker = new OrderChecker();
    DefaultMQPushConsumer c = orderly("OrderlyBroadcastGroup", topic, "broadcast",
        MessageModel.BROADCASTING, recording(checker, "broadcast"));
    sendKeyed(p, topic, 0, 10, 0);
    if (!checker.waitUpTo(10, WAIT_MS)) fail("broadcasting: not all of 80 messages in 30 s");
    c.shutdown();
  }

  public static void main(String[] args) throws Exception {
    nameServer = args[0];
    // A broadcasting consumer keeps its offsets in a local file (under ~/.rocketmq_offsets by
    // default): a fresh folder per run, so that a previous run's offsets do not apply to this
    // run's fresh broker.
    Path offsets = Files.createTempDirectory("orderly-check-offsets");
    System.setProperty("rocketmq.client.localOffsetStoreDir", offsets.toString());
    Topics.create(nameServer, 4, "OrderlyKeyed", "OrderlySuspend", "OrderlyDead",
                  "OrderlyBroadcast");
    DefaultMQProducer p = producer();
    clustering(p);
    suspendOnce(p);
    deadLetter(p);
    broadcasting(p);
    p.shutdown();
    try (Stream<Path> files = Files.walk(offsets)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    }
    System.out.println(failures == 0 ? "JAVA-CHECK OK" : "JAVA-CHECK FAILED " + failures);
    System.exit(failures == 0 ? 0 : 1);
  }
}
