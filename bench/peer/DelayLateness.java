// Delay-level lateness as a Java application sees it, run by bench/peer.sh against the RocketMQ
// 4.9.8 broker and against uringmq with the official 4.9.8 client.
//   DelayLateness <namesrv> <topic> <count> <rate per s>
// A push consumer subscribes first; a producer then sends <count> 128-byte messages at <rate>
// per second, alternating delay levels 1 (1 s) and 2 (5 s), each body carrying its level and the
// time the send began. Lateness of a message = the time the listener got it - (send begin +
// the level's delay), in ms; negative = delivered early. Prints one JSON line: sent, received,
// early, p50/p99/max lateness (ms), and exits once every acknowledged message arrived or 60 s
// after the last send. With LATENESS_DUMP=<file> set, it also writes one line a message there:
// the send index, its level, the time its send began (ms since the epoch) and its lateness (ms).

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class DelayLateness {
  static final long[] LEVEL_MS = {0, 1000, 5000};

  public static void main(String[] args) throws Exception {
    String ns = args[0];
    String topic = args[1];
    int count = Integer.parseInt(args[2]);
    int rate = Integer.parseInt(args[3]);
    ConcurrentLinkedQueue<Long> lateness = new ConcurrentLinkedQueue<>();
    ConcurrentLinkedQueue<String> dump = new ConcurrentLinkedQueue<>();
    String dumpPath = System.getenv("LATENESS_DUMP");
    AtomicInteger received = new AtomicInteger();

    DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("peer_lateness_" + topic);
    consumer.setNamesrvAddr(ns);
    consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
    consumer.subscribe(topic, "*");
    consumer.registerMessageListener(
        (MessageListenerConcurrently) (msgs, ctx) -> {
          long now = System.currentTimeMillis();
          for (MessageExt m : msgs) {
            String[] f = new String(m.getBody(), StandardCharsets.US_ASCII).split(" ");
            int level = Integer.parseInt(f[0]);
            long due = Long.parseLong(f[1]) + LEVEL_MS[level];
            lateness.add(now - due);
            if (dumpPath != null) dump.add(f[2] + " " + level + " " + f[1] + " " + (now - due));
            received.incrementAndGet();
          }
          return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
    consumer.start();
    Thread.sleep(3000);  // the rebalance assigns the queues before the first delivery is due

    DefaultMQProducer producer = new DefaultMQProducer("peer_lateness_producer");
    producer.setNamesrvAddr(ns);
    producer.setSendMsgTimeout(10000);
    producer.start();
    int sent = 0;
    long start = System.nanoTime();
    for (int i = 0; i < count; i++) {
      long due = start + (long) i * 1_000_000_000L / rate;
      long wait = due - System.nanoTime();
      if (wait > 0) Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
      int level = 1 + (i % 2);
      String text = level + " " + System.currentTimeMillis() + " " + i + " ";
      byte[] body = new byte[128];
      java.util.Arrays.fill(body, (byte) 'x');
      byte[] head = text.getBytes(StandardCharsets.US_ASCII);
      System.arraycopy(head, 0, body, 0, head.length);
      Message msg = new Message(topic, body);
      msg.setDelayTimeLevel(level);
      SendResult r = producer.send(msg);
      if (r.getSendStatus() == SendStatus.SEND_OK) sent++;
    }
    producer.shutdown();
    long deadline = System.currentTimeMillis() + 60_000;
    while (received.get() < sent && System.currentTimeMillis() < deadline) Thread.sleep(100);
    consumer.shutdown();

    if (dumpPath != null) {
      try (java.io.PrintWriter w = new java.io.PrintWriter(dumpPath)) {
        for (String line : dump) w.println(line);
      }
    }
    List<Long> all = new ArrayList<>(lateness);
    Collections.sort(all);
    long early = all.stream().filter(v -> v < 0).count();
    System.out.printf(
        "{\"sent\":%d,\"received\":%d,\"early\":%d,\"p50_ms\":%d,\"p99_ms\":%d,\"max_ms\":%d}%n",
        sent, all.size(), early, pick(all, 0.50), pick(all, 0.99),
        all.isEmpty() ? -1 : all.get(all.size() - 1));
    System.exit(0);
  }

  static long pick(List<Long> sorted, double fraction) {
    if (sorted.isEmpty()) return -1;
    int rank = (int) Math.ceil(fraction * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(rank, sorted.size() - 1)));
  }
}
