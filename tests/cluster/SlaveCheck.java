// The Java side of tests/cluster/stage2_slave_test.sh, with the official RocketMQ 4.9.8 client.
//   send NAMESRV TOPIC COUNT LEDGER strict|lenient
//     COUNT sends (every 10th with delay level 1 or 2); each stored one is written to LEDGER as
//     "key status". strict: every send must be SEND_OK. lenient (the slave is killed meanwhile):
//     SLAVE_NOT_AVAILABLE and FLUSH_SLAVE_TIMEOUT also mean stored on the master; a send that
//     throws is left out of the ledger (its outcome is unknown).
//   consume NAMESRV TOPIC LEDGER...
//     Pulls every queue of TOPIC from offset 0 (the route gives the slave, brokerId 1, once the
//     master is gone) and checks that every key of the ledgers was read.
// Prints "JAVA-CHECK OK ..." on success, "FAIL ..." and exits 1 otherwise.
import java.io.BufferedReader;
import java.io.FileReader;
import java.io.FileWriter;
import java.io.PrintWriter;
import java.util.HashSet;
import java.util.Set;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public class SlaveCheck {
  static void fail(String why) {
    System.out.println("FAIL " + why);
    System.exit(1);
  }

  public static void main(String[] args) throws Exception {
    if (args[0].equals("send")) {
      send(args[1], args[2], Integer.parseInt(args[3]), args[4], args[5].equals("strict"));
    } else {
      consume(args);
    }
    System.exit(0);
  }

  static void send(String namesrv, String topic, int count, String ledger, boolean strict)
      throws Exception {
    DefaultMQProducer producer = new DefaultMQProducer("slave_check_producer");
    producer.setNamesrvAddr(namesrv);
    producer.setSendMsgTimeout(10000);
    producer.setRetryTimesWhenSendFailed(0);
    producer.start();
    String run = Long.toString(System.nanoTime());
    StringBuilder pad = new StringBuilder();
    for (int i = 0; i < 1000; i++) pad.append((char) ('a' + i % 26));
    int ok = 0;
    int stored = 0;
    int unknown = 0;
    try (PrintWriter out = new PrintWriter(new FileWriter(ledger, true))) {
      for (int i = 0; i < count; i++) {
        String key = "k-" + run + "-" + i;
        Message m = new Message(topic, "tagA", key, (key + " " + pad).getBytes("UTF-8"));
        if (i % 10 == 0) m.setDelayTimeLevel(1 + (i / 10) % 2);
        SendResult r;
        try {
          r = producer.send(m);
        } catch (Exception e) {
          if (strict) fail("send " + i + " threw " + e);
          unknown++;
          continue;
        }
        SendStatus s = r.getSendStatus();
        if (s == SendStatus.SEND_OK) ok++;
        if (strict && s != SendStatus.SEND_OK) fail("send " + i + " answered " + s);
        if (s == SendStatus.SEND_OK || s == SendStatus.SLAVE_NOT_AVAILABLE
            || s == SendStatus.FLUSH_SLAVE_TIMEOUT) {
          out.println(key + " " + s);
          stored++;
        }
      }
    }
    producer.shutdown();
    System.out.println("JAVA-CHECK OK sent " + count + ": " + ok + " SEND_OK, " + stored
        + " stored, " + unknown + " unknown");
  }

  static void consume(String[] args) throws Exception {
    String namesrv = args[1];
    String topic = args[2];
    Set<String> want = new HashSet<>();
    for (int a = 3; a < args.length; a++) {
      try (BufferedReader in = new BufferedReader(new FileReader(args[a]))) {
        for (String line; (line = in.readLine()) != null; ) want.add(line.split(" ")[0]);
      }
    }
    DefaultMQPullConsumer consumer = new DefaultMQPullConsumer("slave_check_reader");
    consumer.setNamesrvAddr(namesrv);
    consumer.start();
    Set<String> seen = new HashSet<>();
    int fromSlave = 0;
    for (MessageQueue mq : consumer.fetchSubscribeMessageQueues(topic)) {
      long offset = 0;
      for (int empty = 0; empty < 3; ) {
        PullResult r = consumer.pull(mq, "*", offset, 32, 10000);
        if (r.getPullStatus() != PullStatus.FOUND) {
          empty++;
          continue;
        }
        for (MessageExt m : r.getMsgFoundList()) {
          seen.add(m.getKeys());
          fromSlave++;
        }
        offset = r.getNextBeginOffset();
      }
    }
    consumer.shutdown();
    int missing = 0;
    for (String k : want) {
      if (!seen.contains(k)) {
        if (missing < 5) System.out.println("missing " + k);
        missing++;
      }
    }
    if (missing > 0) fail(missing + " of " + want.size() + " acknowledged messages not readable");
    System.out.println("JAVA-CHECK OK read " + want.size() + " acknowledged messages ("
        + fromSlave + " records) from the slave");
  }
}
