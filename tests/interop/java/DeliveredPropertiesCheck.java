// The official RocketMQ 4.9.8 Java client against uringmq-broker: a plain, a delay-level and a
// timed message (TIMER_DELAY_MS) are sent with DefaultMQProducer and received by a
// DefaultMQPushConsumer. Every received message must decode, keep its user properties, and carry
// none of the store's internal properties (__UMQ_*, __CRC32#, TIMER_OUT_MS); a delivered delayed
// message keeps REAL_TOPIC and REAL_QID and loses DELAY, as RocketMQ's own broker delivers it.
// Prints one line per message and "JAVA-CHECK OK" or "JAVA-CHECK FAILED <n>"; exit 0 on OK.
// Usage: java -cp <client class path>:. DeliveredPropertiesCheck <nameserver host:port>

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class DeliveredPropertiesCheck {
  static int failures = 0;

  static void fail(String what) {
    System.out.println("FAIL " + what);
    failures++;
  }

  public static void main(String[] args) throws Exception {
    String nameServer = args[0];
    String topic = "JavaProps";
    DefaultMQProducer producer = new DefaultMQProducer("JavaPropsProducer");
    producer.setNamesrvAddr(nameServer);
    producer.start();
    Message plain = new Message(topic, "TagA", "key-plain", "plain".getBytes("UTF-8"));
    plain.putUserProperty("myProp", "v1");
    Message delayed = new Message(topic, "TagB", "key-delayed", "delayed".getBytes("UTF-8"));
    delayed.setDelayTimeLevel(1);
    Message timed = new Message(topic, "TagC", "key-timed", "timed".getBytes("UTF-8"));
    timed.putUserProperty("TIMER_DELAY_MS", "300");
    for (Message m : new Message[] {plain, delayed, timed}) {
      SendResult r = producer.send(m);
      if (r.getSendStatus() != SendStatus.SEND_OK) fail("send " + r);
    }

    BlockingQueue<MessageExt> received = new LinkedBlockingQueue<>();
    DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("JavaPropsConsumer");
    consumer.setNamesrvAddr(nameServer);
    consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
    consumer.subscribe(topic, "*");
    consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
      received.addAll(msgs);
      return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    });
    consumer.start();

    Map<String, MessageExt> byBody = new HashMap<>();
    long deadline = System.currentTimeMillis() + 60_000;
    while (byBody.size() < 3 && System.currentTimeMillis() < deadline) {
      MessageExt m = received.poll(1, TimeUnit.SECONDS);
      if (m != null) byBody.put(new String(m.getBody(), "UTF-8"), m);
    }
    consumer.shutdown();
    producer.shutdown();

    for (String body : new String[] {"plain", "delayed", "timed"}) {
      MessageExt m = byBody.get(body);
      if (m == null) {
        fail(body + " not received within 60 s");
        continue;
      }
      Map<String, String> props = m.getProperties();
      System.out.println(body + " storeSize=" + m.getStoreSize() + " properties=" + props);
      for (String name : props.keySet()) {
        if (name.startsWith("__UMQ_") || name.equals("__CRC32#") || name.equals("TIMER_OUT_MS")) {
          fail(body + " carries the internal property " + name);
        }
      }
      if (props.containsKey("DELAY")) fail(body + " still carries DELAY");
    }
    MessageExt p = byBody.get("plain");
    if (p != null && !"v1".equals(p.getUserProperty("myProp"))) fail("plain lost myProp");
    for (String body : new String[] {"delayed", "timed"}) {
      MessageExt m = byBody.get(body);
      if (m != null && !topic.equals(m.getProperty("REAL_TOPIC"))) fail(body + " lost REAL_TOPIC");
      if (m != null && m.getProperty("REAL_QID") == null) fail(body + " lost REAL_QID");
    }
    System.out.println(failures == 0 ? "JAVA-CHECK OK" : "JAVA-CHECK FAILED " + failures);
    System.exit(failures == 0 ? 0 : 1);
  }
}
