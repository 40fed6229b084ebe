// The official RocketMQ 4.9.8 Java client over TLS against uringmq-broker in
// tls.server.mode=enforcing: run with -Dtls.enable=true (TlsSystemConfig; tls.test.mode.enable
// stays at its default, true, so the client accepts the broker's test certificate). A producer
// sends 20 messages and a push consumer receives them all, both over TLS to the NameServer and
// the broker ports; a producer with useTLS=false gets nothing through (the broker closes a plain
// connection without an answer, as RocketMQ's own broker does in enforcing mode).
// Prints "FAIL <why>" per failed check and "JAVA-CHECK OK" or "JAVA-CHECK FAILED <n>".
// Usage: java -Dtls.enable=true -cp <client class path>:. TlsCheck <nameserver host:port>

import java.util.HashSet;
import java.util.Set;
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

public class TlsCheck {
  static int failures = 0;

  static void fail(String what) {
    System.out.println("FAIL " + what);
    failures++;
  }

  public static void main(String[] args) throws Exception {
    try {
      run(args[0]);
    } catch (Exception e) {
      fail("exception " + e);
    }
    System.out.println(failures == 0 ? "JAVA-CHECK OK" : "JAVA-CHECK FAILED " + failures);
    System.exit(failures == 0 ? 0 : 1);
  }

  static void run(String nameServer) throws Exception {
    if (!Boolean.getBoolean("tls.enable")) fail("run with -Dtls.enable=true");
    String topic = "JavaTls";
    DefaultMQProducer producer = new DefaultMQProducer("JavaTlsProducer");
    producer.setNamesrvAddr(nameServer);
    // The first send pays two TLS handshakes (NameServer, broker) and the JIT: on a loaded
    // machine it overran the default 3 s.
    producer.setSendMsgTimeout(20000);
    producer.start();
    int n = 20;
    for (int i = 0; i < n; i++) {
      SendResult r = producer.send(new Message(topic, "TagT", ("tls-" + i).getBytes("UTF-8")));
      if (r.getSendStatus() != SendStatus.SEND_OK) fail("send " + i + ": " + r);
    }
    System.out.println("CHECK sent " + n + " messages over TLS");

    BlockingQueue<MessageExt> received = new LinkedBlockingQueue<>();
    DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("JavaTlsConsumer");
    consumer.setNamesrvAddr(nameServer);
    consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
    consumer.subscribe(topic, "*");
    consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
      received.addAll(msgs);
      return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    });
    consumer.start();
    Set<String> bodies = new HashSet<>();
    long deadline = System.currentTimeMillis() + 30000;
    while (bodies.size() < n && System.currentTimeMillis() < deadline) {
      MessageExt m = received.poll(500, TimeUnit.MILLISECONDS);
      if (m != null) bodies.add(new String(m.getBody(), "UTF-8"));
    }
    if (bodies.size() != n) fail("received " + bodies.size() + " of " + n + " messages");
    System.out.println("CHECK received " + bodies.size() + " messages over TLS");
    consumer.shutdown();

    // A plain client: its own instance, so that it does not share the TLS one's connections.
    DefaultMQProducer plain = new DefaultMQProducer("JavaPlainProducer");
    plain.setNamesrvAddr(nameServer);
    plain.setInstanceName("plain");
    plain.setUseTLS(false);
    plain.setSendMsgTimeout(3000);
    plain.start();
    try {
      SendResult r = plain.send(new Message(topic, "TagT", "plain".getBytes("UTF-8")));
      fail("a plain producer sent through an enforcing broker: " + r);
    } catch (Exception e) {
      System.out.println("CHECK plain producer refused: " + e);
    }
    plain.shutdown();
    producer.shutdown();
  }
}
