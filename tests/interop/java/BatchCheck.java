// The official RocketMQ 4.9.8 Java client against uringmq-broker: batch send
// (DefaultMQProducer.send(Collection<Message>), SEND_BATCH_MESSAGE 320). A batch of 32 keyed
// messages with their own properties is sent and must come back as 32 messages, each with its
// keys, properties and UNIQ_KEY, all in the acknowledged queue at consecutive queue offsets
// starting at the acknowledged one; the reply's msgId lists the 32 offset msgIds. A delayed
// batch is refused: by the client (generateFromList), and by the broker (13 MESSAGE_ILLEGAL)
// when it is built by hand, with the delay on the batch or on one message.
// Prints "JAVA-CHECK OK" or "FAIL <why>" lines; exit 0 on OK.
// Usage: java -cp <client class path>:. BatchCheck <nameserver host:port>

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageBatch;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageExt;

public class BatchCheck {
  static int failures = 0;

  static void fail(String what) {
    System.out.println("FAIL " + what);
    failures++;
  }

  static List<Message> batch(String topic, int n, String prefix) throws Exception {
    List<Message> list = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Message m = new Message(topic, "TagB", prefix + "-key-" + i, (prefix + "-" + i).getBytes("UTF-8"));
      m.putUserProperty("seq", Integer.toString(i));
      m.putUserProperty("color", i % 2 == 0 ? "red" : "blue");
      list.add(m);
    }
    return list;
  }

  // A batch the client would refuse, built by hand and sent as it is: the broker must refuse it.
  static void expectBrokerRefusal(DefaultMQProducer producer, String topic, boolean onBatch)
      throws Exception {
    List<Message> list = batch(topic, 4, onBatch ? "bd" : "md");
    MessageBatch b = MessageBatch.generateFromList(list);
    for (Message m : b) MessageClientIDSetter.setUniqID(m);
    if (!onBatch) list.get(2).setDelayTimeLevel(2);
    b.setBody(b.encode());
    if (onBatch) b.setDelayTimeLevel(2);
    try {
      SendResult r = producer.getDefaultMQProducerImpl().send(b);
      fail("a delayed batch (delay on the " + (onBatch ? "batch" : "message") + ") was stored: " + r);
    } catch (MQBrokerException e) {
      if (e.getResponseCode() != 13) fail("delayed batch refused with " + e.getResponseCode() + " " + e.getErrorMessage());
      System.out.println("CHECK delayed batch refused by the broker: " + e.getResponseCode() + " " + e.getErrorMessage());
    }
  }

  public static void main(String[] args) throws Exception {
    String nameServer = args[0];
    String topic = "JavaBatch";
    DefaultMQProducer producer = new DefaultMQProducer("JavaBatchProducer");
    producer.setNamesrvAddr(nameServer);
    producer.start();
    List<Message> sent = batch(topic, 32, "b");
    SendResult r = producer.send(sent);
    if (r.getSendStatus() != SendStatus.SEND_OK) fail("batch send " + r);
    String[] offsetIds = r.getOffsetMsgId() == null ? new String[0] : r.getOffsetMsgId().split(",");
    if (offsetIds.length != 32) fail("the reply lists " + offsetIds.length + " offset msgIds, not 32");
    String[] uniqIds = r.getMsgId().split(",");
    Map<String, Integer> seqOfUniq = new HashMap<>();
    for (int i = 0; i < uniqIds.length; i++) seqOfUniq.put(uniqIds[i], i);
    int queueId = r.getMessageQueue().getQueueId();
    long firstOffset = r.getQueueOffset();
    System.out.println("CHECK batch of 32 acknowledged: queue " + queueId + " offset " + firstOffset);

    try {
      List<Message> delayed = batch(topic, 3, "cd");
      delayed.get(1).setDelayTimeLevel(2);
      producer.send(delayed);
      fail("the client sent a delayed batch");
    } catch (MQClientException e) {
      System.out.println("CHECK delayed batch refused by the client: " + e.getMessage().split("\n")[0]);
    }
    expectBrokerRefusal(producer, topic, true);
    expectBrokerRefusal(producer, topic, false);

    BlockingQueue<MessageExt> received = new LinkedBlockingQueue<>();
    DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("JavaBatchConsumer");
    consumer.setNamesrvAddr(nameServer);
    consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
    consumer.subscribe(topic, "*");
    consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
      received.addAll(msgs);
      return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    });
    consumer.start();

    Map<Integer, MessageExt> bySeq = new HashMap<>();
    long deadline = System.currentTimeMillis() + 30000;
    while (bySeq.size() < 32 && System.currentTimeMillis() < deadline) {
      MessageExt m = received.poll(500, TimeUnit.MILLISECONDS);
      if (m == null) continue;
      String body = new String(m.getBody(), "UTF-8");
      if (!body.startsWith("b-")) {
        fail("a refused batch's message arrived: " + body);
        continue;
      }
      bySeq.put(Integer.parseInt(m.getProperty("seq")), m);
    }
    if (bySeq.size() != 32) fail("received " + bySeq.size() + " of the batch's 32 messages");
    for (Map.Entry<Integer, MessageExt> e : bySeq.entrySet()) {
      int i = e.getKey();
      MessageExt m = e.getValue();
      if (!("b-" + i).equals(new String(m.getBody(), "UTF-8"))) fail("message " + i + " body");
      if (!("b-key-" + i).equals(m.getKeys())) fail("message " + i + " keys " + m.getKeys());
      if (!"TagB".equals(m.getTags())) fail("message " + i + " tags " + m.getTags());
      if (!(i % 2 == 0 ? "red" : "blue").equals(m.getProperty("color"))) fail("message " + i + " color");
      if (m.getQueueId() != queueId) fail("message " + i + " in queue " + m.getQueueId());
      if (m.getQueueOffset() != firstOffset + i) {
        fail("message " + i + " at queue offset " + m.getQueueOffset() + ", not " + (firstOffset + i));
      }
      Integer uniqSeq = seqOfUniq.get(m.getMsgId());
      if (uniqSeq == null || uniqSeq != i) fail("message " + i + " msgId " + m.getMsgId());
      String offsetId = m instanceof MessageClientExt ? ((MessageClientExt) m).getOffsetMsgId() : null;
      if (offsetIds.length == 32 && !offsetIds[i].equals(offsetId)) {
        fail("message " + i + " offsetMsgId " + offsetId + " vs reply " + offsetIds[i]);
      }
      for (String name : m.getProperties().keySet()) {
        if (name.startsWith("__UMQ") || name.equals("__CRC32#") || name.equals("DELAY")) {
          fail("message " + i + " carries " + name);
        }
      }
    }
    System.out.println("CHECK received " + bySeq.size() + " batch messages with their properties");
    consumer.shutdown();
    producer.shutdown();
    System.out.println(failures == 0 ? "JAVA-CHECK OK" : "JAVA-CHECK FAILED " + failures);
    System.exit(failures == 0 ? 0 : 1);
  }
}
