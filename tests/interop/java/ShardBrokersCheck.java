// The official RocketMQ 4.9.8 Java client against a uringmq-broker of 2 shards: each shard is
// one RocketMQ broker (broker-a-0, broker-a-1). The route lists both with 4 queues each (8
// queues); a push consumer group of 2 members splits the 8 queues (both brokers' queues, each
// queue owned by one member; the check waits for that before sending, since a rebalance may
// deliver a queue's messages twice); a producer spreads 200 messages over both brokers; every
// message arrives exactly once (by msgId) while the group stands, each from the broker it was
// sent to. Deliveries once the members start shutting down are reported, not counted: the
// member that leaves first commits its offsets oneway and then unregisters, one broker
// connection after another, and the client does not order its writes across connections (its
// encoders run on a pool of threads). The broker has seen the unregister on one connection
// before commits written earlier on another, the other member took the queues over at the
// offset of the last pull, and consumed the last batch again: at-least-once, as RocketMQ
// promises, whichever broker serves it.
// Prints "JAVA-CHECK OK" or "FAIL <why>" lines; exit 0 on OK.
// Usage: java -cp <client class path>:. ShardBrokersCheck <nameserver host:port>

import java.util.HashMap;
import java.util.HashSet;
import java.util.Set;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public class ShardBrokersCheck {
  static int failures = 0;
  static final long startMs = System.currentTimeMillis();
  // Which part of the check a delivery came in (for the report of a duplicate).
  static volatile String phase = "";

  static void fail(String what) {
    System.out.println("FAIL " + what);
    failures++;
  }

  static DefaultMQPushConsumer consumer(String ns, String topic, String name,
      Map<String, String> brokerOf, Map<String, List<String>> deliveries) throws Exception {
    DefaultMQPushConsumer c = new DefaultMQPushConsumer("ShardBrokersGroup");
    c.setNamesrvAddr(ns);
    c.setInstanceName(name);
    c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
    c.subscribe(topic, "*");
    c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
      for (MessageExt m : msgs) {
        brokerOf.put(m.getMsgId(), ctx.getMessageQueue().getBrokerName() + " "
            + m.getStoreHost());
        deliveries.computeIfAbsent(m.getMsgId(), k -> new CopyOnWriteArrayList<>())
            .add(name + " " + ctx.getMessageQueue() + " offset " + m.getQueueOffset() + " at "
                + (System.currentTimeMillis() - startMs) + " ms" + phase);
      }
      return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    });
    c.start();
    return c;
  }

  // The queues of `topic` the member owns (not its %RETRY% topic's).
  static Set<MessageQueue> owned(DefaultMQPushConsumer c, String topic) {
    Set<MessageQueue> out = new HashSet<>();
    for (MessageQueue q :
        c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().keySet()) {
      if (q.getTopic().equals(topic)) out.add(q);
    }
    return out;
  }

  public static void main(String[] args) throws Exception {
    String ns = args[0];
    String topic = "ShardBrokers";
    int total = 200;
    Topics.create(ns, 4, topic);
    DefaultMQProducer producer = new DefaultMQProducer("ShardBrokersProducer");
    producer.setNamesrvAddr(ns);
    producer.start();
    List<MessageQueue> queues = producer.fetchPublishMessageQueues(topic);
    Map<String, Integer> queuesPerBroker = new HashMap<>();
    for (MessageQueue q : queues) queuesPerBroker.merge(q.getBrokerName(), 1, Integer::sum);
    System.out.println("CHECK route queues per broker: " + queuesPerBroker);
    if (queues.size() != 8 || queuesPerBroker.getOrDefault("broker-a-0", 0) != 4
        || queuesPerBroker.getOrDefault("broker-a-1", 0) != 4) {
      fail("the route should show broker-a-0 and broker-a-1 with 4 queues each: " + queuesPerBroker);
    }
    // Every delivery of each msgId: member, queue, offset, time (its count is the check).
    Map<String, String> brokerOf = new ConcurrentHashMap<>();
    Map<String, List<String>> deliveries = new ConcurrentHashMap<>();
    DefaultMQPushConsumer c1 = consumer(ns, topic, "shard-brokers-1", brokerOf, deliveries);
    DefaultMQPushConsumer c2 = consumer(ns, topic, "shard-brokers-2", brokerOf, deliveries);
    long settle = System.currentTimeMillis() + 60_000;
    Set<MessageQueue> q1 = owned(c1, topic);
    Set<MessageQueue> q2 = owned(c2, topic);
    while (System.currentTimeMillis() < settle) {
      q1 = owned(c1, topic);
      q2 = owned(c2, topic);
      Set<MessageQueue> both = new HashSet<>(q1);
      both.retainAll(q2);
      if (q1.size() == 4 && q2.size() == 4 && both.isEmpty()) break;
      Thread.sleep(200);
    }
    System.out.println("CHECK the members own " + q1.size() + " and " + q2.size() + " queues");
    if (q1.size() + q2.size() != 8) fail("the group of 2 should split the 8 queues: " + q1 + " " + q2);
    Map<String, Integer> sentPerBroker = new HashMap<>();
    Map<String, String> sentIds = new HashMap<>();
    for (int i = 0; i < total; i++) {
      Message m = new Message(topic, "T", ("shard-brokers-" + i).getBytes("UTF-8"));
      SendResult r = producer.send(m);
      if (r.getSendStatus() != SendStatus.SEND_OK) fail("send " + i + ": " + r);
      sentPerBroker.merge(r.getMessageQueue().getBrokerName(), 1, Integer::sum);
      sentIds.put(r.getMsgId(), r.getMessageQueue().getBrokerName());
    }
    System.out.println("CHECK sent per broker: " + sentPerBroker);
    for (String b : new String[] {"broker-a-0", "broker-a-1"}) {
      if (sentPerBroker.getOrDefault(b, 0) < total / 4) {
        fail("the producer should spread over both brokers: " + sentPerBroker);
      }
    }

    long deadline = System.currentTimeMillis() + 60_000;
    while (System.currentTimeMillis() < deadline && !deliveries.keySet().containsAll(sentIds.keySet())) {
      Thread.sleep(200);
    }
    Thread.sleep(2000);  // duplicates would arrive meanwhile
    Map<String, Integer> stood = new HashMap<>();
    for (Map.Entry<String, List<String>> e : deliveries.entrySet()) {
      stood.put(e.getKey(), e.getValue().size());
    }
    phase = " (while the members shut down)";
    c1.shutdown();
    c2.shutdown();
    producer.shutdown();

    int missing = 0;
    int duplicated = 0;
    int handedOver = 0;
    for (String id : sentIds.keySet()) {
      Integer n = stood.get(id);
      if (n == null) {
        missing++;
      } else if (n != 1) {
        duplicated++;
        System.out.println("CHECK " + id + " delivered " + deliveries.get(id));
      } else if (deliveries.get(id).size() != 1) {
        handedOver++;
        System.out.println("CHECK " + id + " delivered again at shutdown " + deliveries.get(id));
      }
    }
    System.out.println("CHECK delivered again while the members shut down: " + handedOver);
    System.out.println("CHECK received " + stood.size() + " of " + total + ", missing " + missing
        + ", received more than once " + duplicated);
    if (missing > 0) fail(missing + " messages never arrived");
    if (duplicated > 0) fail(duplicated + " messages arrived more than once");
    // Each message came from the broker it was sent to, its offset msgId naming that broker's
    // address (its STOREHOST).
    int wrong = 0;
    for (Map.Entry<String, String> e : sentIds.entrySet()) {
      String got = brokerOf.get(e.getKey());
      if (got != null && !got.startsWith(e.getValue() + " ")) wrong++;
    }
    if (wrong > 0) fail(wrong + " messages came from another broker than they were sent to");
    if (failures == 0) {
      System.out.println("JAVA-CHECK OK");
      System.exit(0);
    }
    System.exit(1);
  }
}
