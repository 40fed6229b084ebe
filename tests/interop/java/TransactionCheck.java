// The official RocketMQ 4.9.8 Java client against uringmq-broker: transactional messages
// (TransactionMQProducer, END_TRANSACTION 37, CHECK_TRANSACTION_STATE 39). One producer sends
// 8 messages it commits, 8 it rolls back, 4 it answers UNKNOW and then commits when checked, 4
// UNKNOW then rolled back when checked. A second producer group sends 3 UNKNOW messages and
// shuts down at once; a new producer of that group starts later and is checked: it commits them.
// A push consumer must see exactly the committed messages (8 + 4 + 3 + the new producer's own
// 1), each once, and none of the rolled-back ones; the checks must have happened.
// Run with transactionTimeOut=1000 and transactionCheckInterval=1000 (CMake does).
// Prints "JAVA-CHECK OK" or "FAIL <why>" lines; exit 0 on OK.
// Usage: java -cp <client class path>:. TransactionCheck <nameserver host:port>

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class TransactionCheck {
  static int failures = 0;
  static final AtomicInteger checks = new AtomicInteger();

  static void fail(String what) {
    System.out.println("FAIL " + what);
    failures++;
  }

  // execute: what the local transaction answers first; check: what a check answers.
  static class Listener implements TransactionListener {
    final boolean answerChecks;

    Listener(boolean answerChecks) {
      this.answerChecks = answerChecks;
    }

    public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
      String mode = msg.getUserProperty("mode");
      if (mode.equals("commit")) return LocalTransactionState.COMMIT_MESSAGE;
      if (mode.equals("rollback")) return LocalTransactionState.ROLLBACK_MESSAGE;
      return LocalTransactionState.UNKNOW;
    }

    public LocalTransactionState checkLocalTransaction(MessageExt msg) {
      checks.incrementAndGet();
      if (!answerChecks) return LocalTransactionState.UNKNOW;
      String mode = msg.getUserProperty("mode");
      if (mode == null) {
        fail("a check's message has no mode property: " + msg);
        return LocalTransactionState.UNKNOW;
      }
      return mode.endsWith("rollback") ? LocalTransactionState.ROLLBACK_MESSAGE
                                       : LocalTransactionState.COMMIT_MESSAGE;
    }
  }

  static TransactionMQProducer producer(String nameServer, String group, boolean answerChecks)
      throws Exception {
    TransactionMQProducer p = new TransactionMQProducer(group);
    p.setNamesrvAddr(nameServer);
    p.setHeartbeatBrokerInterval(500);
    p.setInstanceName(group + "-" + System.nanoTime());
    p.setTransactionListener(new Listener(answerChecks));
    p.start();
    return p;
  }

  static void send(TransactionMQProducer p, String topic, String mode, String body)
      throws Exception {
    Message m = new Message(topic, "TagT", body, body.getBytes("UTF-8"));
    m.putUserProperty("mode", mode);
    TransactionSendResult r = p.sendMessageInTransaction(m, null);
    if (r.getSendStatus() != SendStatus.SEND_OK) fail("send " + body + ": " + r);
  }

  public static void main(String[] args) throws Exception {
    String nameServer = args[0];
    String topic = "JavaTxn";
    Map<String, Integer> seen = new ConcurrentHashMap<>();
    Topics.create(nameServer, 4, topic);
    DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("JavaTxnConsumer");
    consumer.setNamesrvAddr(nameServer);
    consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
    consumer.subscribe(topic, "*");
    consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
      for (MessageExt m : msgs) {
        String body = new String(m.getBody());
        seen.merge(body, 1, Integer::sum);
        if (m.getProperty("TRAN_MSG") != null) fail("a consumed message keeps TRAN_MSG: " + body);
      }
      return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    });
    consumer.start();

    Set<String> expected = new HashSet<>();
    TransactionMQProducer main = producer(nameServer, "JavaTxnProducer", true);
    for (int i = 0; i < 8; i++) {
      send(main, topic, "commit", "commit-" + i);
      expected.add("commit-" + i);
      send(main, topic, "rollback", "rollback-" + i);
    }
    for (int i = 0; i < 4; i++) {
      send(main, topic, "unknown-commit", "unknown-commit-" + i);
      expected.add("unknown-commit-" + i);
      send(main, topic, "unknown-rollback", "unknown-rollback-" + i);
    }
    // A producer that goes away with its transactions unknown, and a new one of its group.
    TransactionMQProducer gone = producer(nameServer, "JavaTxnProducerB", false);
    for (int i = 0; i < 3; i++) {
      send(gone, topic, "later-commit", "later-commit-" + i);
      expected.add("later-commit-" + i);
    }
    gone.shutdown();
    Thread.sleep(1500);
    TransactionMQProducer back = producer(nameServer, "JavaTxnProducerB", true);
    send(back, topic, "commit", "back-commit");
    expected.add("back-commit");

    long deadline = System.currentTimeMillis() + 60_000;
    while (System.currentTimeMillis() < deadline && !seen.keySet().containsAll(expected)) {
      Thread.sleep(200);
    }
    Thread.sleep(3000);  // anything extra (a duplicate, a rolled-back one) would arrive by now
    for (String body : expected) {
      Integer n = seen.get(body);
      if (n == null) fail("committed message " + body + " never consumed");
      else if (n != 1) fail("committed message " + body + " consumed " + n + " times");
    }
    for (String body : seen.keySet()) {
      if (!expected.contains(body)) fail("consumed " + body + ", which was not committed");
    }
    if (checks.get() == 0) fail("no CHECK_TRANSACTION_STATE reached a producer");
    System.out.println("CHECK consumed " + seen.size() + " of " + expected.size()
        + " committed, checks answered " + checks.get());
    main.shutdown();
    back.shutdown();
    consumer.shutdown();
    if (failures == 0) System.out.println("JAVA-CHECK OK");
    System.exit(failures == 0 ? 0 : 1);
  }
}
