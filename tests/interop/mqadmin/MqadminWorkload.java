// The clients behind the mqadmin scenario (tests/interop/mqadmin_test.sh): against one broker
// (a NameServer address), sends 8 messages with keys to a topic, lets a push consumer group
// consume them and commit, and stays online (producer and consumer) so that the connection
// lists have members, until its standard input closes; later consumption is printed as
// "WORKLOAD consumed=N". Prints "WORKLOAD msgId=<offsetMsgId>
// key=<key> uniq=<msgId>" for the first message, then "WORKLOAD READY" once the group consumed
// and committed all of them.
// Usage: java -cp <client class path>:. MqadminWorkload <nameserver host:port> <topic> <group>

import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;

public class MqadminWorkload {
  public static void main(String[] args) throws Exception {
    String nameServer = args[0];
    String topic = args[1];
    String group = args[2];
    int count = 8;
    DefaultMQProducer producer = new DefaultMQProducer(group + "_producer");
    producer.setNamesrvAddr(nameServer);
    producer.setSendMsgTimeout(20000);  // a loaded machine: JIT and first connections are slow
    producer.start();
    for (int i = 0; i < count; i++) {
      Message m = new Message(topic, "TagA", "key-" + i, ("body " + i).getBytes("UTF-8"));
      SendResult r = producer.send(m);
      if (i == 0) {
        System.out.println("WORKLOAD msgId=" + r.getOffsetMsgId() + " key=key-0 uniq="
            + r.getMsgId());
      }
    }
    AtomicInteger consumed = new AtomicInteger();
    DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
    consumer.setNamesrvAddr(nameServer);
    consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
    consumer.setPersistConsumerOffsetInterval(500);
    consumer.subscribe(topic, "*");
    consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
      consumed.addAndGet(msgs.size());
      return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    });
    consumer.start();
    long deadline = System.currentTimeMillis() + 60_000;
    while (consumed.get() < count && System.currentTimeMillis() < deadline) Thread.sleep(50);
    // Every queue's offset committed now, not at the next periodic persist.
    Thread.sleep(300);
    consumer.getDefaultMQPushConsumerImpl().persistConsumerOffset();
    Thread.sleep(1000);
    consumer.getDefaultMQPushConsumerImpl().persistConsumerOffset();
    Thread.sleep(500);
    System.out.println("WORKLOAD READY consumed=" + consumed.get());
    System.out.flush();
    // Later consumption (a reset of the group's offsets re-delivers) is printed as it happens.
    Thread report = new Thread(() -> {
      int seen = consumed.get();
      while (true) {
        try {
          Thread.sleep(200);
        } catch (InterruptedException e) {
          return;
        }
        if (consumed.get() != seen) {
          seen = consumed.get();
          System.out.println("WORKLOAD consumed=" + seen);
          System.out.flush();
        }
      }
    });
    report.setDaemon(true);
    report.start();
    while (System.in.read() >= 0) {
    }
    consumer.shutdown();
    producer.shutdown();
  }
}
