// The official RocketMQ 4.9.8 Java client against uringmq-broker (enablePropertyFilter=true):
// SQL92 property filters. A producer sends 20 messages with user properties a = 1..10 (twice)
// and color red/blue; a DefaultMQPushConsumer (the expression registered by its heartbeat, its
// pulls without it) and a DefaultLitePullConsumer (the expression in every pull) subscribed with
// MessageSelector.bySql("a > 5 AND color IN ('red')") must each receive exactly the 4 matching
// messages; a push consumer whose expression has a syntax error must fail to start
// (CHECK_CLIENT_CONFIG answers SUBSCRIPTION_PARSE_FAILED with the reason).
// Prints "FAIL <why>" lines and "JAVA-CHECK OK" or "JAVA-CHECK FAILED <n>"; exit 0 on OK.
// Usage: java -cp <client class path>:. SqlFilterCheck <nameserver host:port>

import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class SqlFilterCheck {
  static final String EXPRESSION = "a > 5 AND color IN ('red')";
  static int failures = 0;

  static void fail(String what) {
    System.out.println("FAIL " + what);
    failures++;
  }

  // Compares what a consumer received with the expected bodies (duplicates are failures too).
  static void expect(String who, List<String> got, Set<String> expected) {
    Set<String> seen = new TreeSet<>(got);
    if (seen.size() != got.size()) fail(who + " received duplicates: " + got);
    if (!seen.equals(expected)) fail(who + " received " + seen + ", expected " + expected);
    System.out.println("CHECK " + who + " received " + seen);
  }

  static List<String> pushConsume(String nameServer, String topic) throws Exception {
    ConcurrentLinkedQueue<String> got = new ConcurrentLinkedQueue<>();
    DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("JavaSqlPush");
    consumer.setInstanceName("push");
    consumer.setNamesrvAddr(nameServer);
    consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
    consumer.subscribe(topic, MessageSelector.bySql(EXPRESSION));
    consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
      for (MessageExt m : msgs) got.add(new String(m.getBody()));
      return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    });
    consumer.start();
    waitFor(got, 4);
    consumer.shutdown();
    return List.copyOf(got);
  }

  static List<String> litePull(String nameServer, String topic) throws Exception {
    ConcurrentLinkedQueue<String> got = new ConcurrentLinkedQueue<>();
    DefaultLitePullConsumer consumer = new DefaultLitePullConsumer("JavaSqlLite");
    consumer.setNamesrvAddr(nameServer);
    consumer.setInstanceName("lite");
    consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
    consumer.subscribe(topic, MessageSelector.bySql(EXPRESSION));
    consumer.start();
    long deadline = System.currentTimeMillis() + 30_000;
    long quietUntil = Long.MAX_VALUE;
    while (System.currentTimeMillis() < Math.min(deadline, quietUntil)) {
      for (MessageExt m : consumer.poll(500)) got.add(new String(m.getBody()));
      if (got.size() >= 4 && quietUntil == Long.MAX_VALUE) {
        quietUntil = System.currentTimeMillis() + 3_000;  // a little longer: nothing else may come
      }
    }
    consumer.shutdown();
    return List.copyOf(got);
  }

  // Waits up to 30 s for `count` messages, then 3 s more so that extra ones would show.
  static void waitFor(ConcurrentLinkedQueue<String> got, int count) throws InterruptedException {
    long deadline = System.currentTimeMillis() + 30_000;
    while (got.size() < count && System.currentTimeMillis() < deadline) Thread.sleep(100);
    Thread.sleep(3_000);
  }

  static void syntaxErrorRefused(String nameServer, String topic) throws Exception {
    DefaultMQPushConsumer bad = new DefaultMQPushConsumer("JavaSqlBad");
    bad.setNamesrvAddr(nameServer);
    bad.setInstanceName("bad");
    bad.subscribe(topic, MessageSelector.bySql("a > "));
    bad.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
      fail("the consumer with a bad expression received messages");
      return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    });
    try {
      bad.start();
      fail("a consumer subscribing with a syntax error started");
    } catch (MQClientException e) {
      String text = e.getErrorMessage() != null ? e.getErrorMessage() : e.getMessage();
      System.out.println("CHECK bad expression refused: code " + e.getResponseCode() + " " + text);
      if (e.getResponseCode() != 23) fail("refused with code " + e.getResponseCode() + ", not 23");
      if (text == null || !text.contains("Invalid MessageSelector")) fail("no reason: " + text);
    } finally {
      bad.shutdown();
    }
  }

  public static void main(String[] args) throws Exception {
    String nameServer = args[0];
    String topic = "JavaSql";
    DefaultMQProducer producer = new DefaultMQProducer("JavaSqlProducer");
    producer.setNamesrvAddr(nameServer);
    producer.start();
    Set<String> expected = new TreeSet<>();
    for (int i = 0; i < 20; i++) {
      int a = i % 10 + 1;
      String color = i % 2 == 0 ? "red" : "blue";
      Message m = new Message(topic, "TagA", ("m" + i).getBytes());
      m.putUserProperty("a", Integer.toString(a));
      m.putUserProperty("color", color);
      SendResult r = producer.send(m);
      if (r.getSendStatus() != SendStatus.SEND_OK) fail("send " + r);
      if (a > 5 && color.equals("red")) expected.add("m" + i);
    }
    producer.shutdown();

    try {
      expect("DefaultMQPushConsumer", pushConsume(nameServer, topic), expected);
    } catch (Exception e) {
      fail("DefaultMQPushConsumer: " + e);
    }
    try {
      expect("DefaultLitePullConsumer", litePull(nameServer, topic), expected);
    } catch (Exception e) {
      fail("DefaultLitePullConsumer: " + e);
    }
    syntaxErrorRefused(nameServer, topic);
    System.out.println(failures == 0 ? "JAVA-CHECK OK" : "JAVA-CHECK FAILED " + failures);
    System.exit(failures == 0 ? 0 : 1);
  }
}
