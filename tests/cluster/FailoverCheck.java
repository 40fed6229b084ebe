// The producer side of the failover runbook test (tests/cluster/failover_test.sh), with the
// official 4.9.8 Java client. Prints "CHECK ..." lines and "JAVA-CHECK OK", or "FAIL <why>".
// Steps:
//   load <ns> <topic> <ledger file> <stop file> <prefix>: four threads send (unique keys
//     <prefix><n>, 1 KiB bodies, two retries on another broker, routes polled every second)
//     until the stop file exists; every answer is appended to the ledger as
//     "<key> <brokerName> <epoch ms> <status>" (status SEND_OK, FLUSH_SLAVE_TIMEOUT,
//     SLAVE_NOT_AVAILABLE, or EXCEPTION when the send failed after its retries).
// The consumer side is HaMasterCheck's readall.

import java.io.FileWriter;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

public class FailoverCheck {
  static void load(String ns, String topic, String ledger, String stop, String prefix)
      throws Exception {
    DefaultMQProducer p = new DefaultMQProducer("failover_check_producer");
    p.setNamesrvAddr(ns);
    p.setInstanceName(prefix + System.nanoTime());
    p.setSendMsgTimeout(5000);  // above slaveTimeout (3 s): a 12 is seen, not a timeout
    p.setRetryTimesWhenSendFailed(2);
    p.setPollNameServerInterval(1000);
    p.start();
    byte[] body = new byte[1024];
    Arrays.fill(body, (byte) 'f');
    AtomicLong next = new AtomicLong();
    Map<String, Integer> statuses = new TreeMap<>();
    try (PrintWriter out = new PrintWriter(new FileWriter(ledger, true))) {
      Thread[] threads = new Thread[4];
      for (int t = 0; t < threads.length; t++) {
        threads[t] = new Thread(() -> {
          while (!Files.exists(Paths.get(stop))) {
            String key = prefix + next.getAndIncrement();
            String line;
            String status;
            try {
              SendResult r = p.send(new Message(topic, "t", key, body));
              status = r.getSendStatus().toString();
              line = key + " " + r.getMessageQueue().getBrokerName() + " "
                  + System.currentTimeMillis() + " " + status;
            } catch (Exception e) {
              status = "EXCEPTION";
              line = key + " - " + System.currentTimeMillis() + " EXCEPTION";
            }
            synchronized (out) {
              out.println(line);
              out.flush();
              statuses.merge(status, 1, Integer::sum);
            }
          }
        });
        threads[t].start();
      }
      for (Thread t : threads) t.join();
    }
    p.shutdown();
    System.out.println("CHECK load: " + statuses);
  }

  public static void main(String[] a) throws Exception {
    if (!a[0].equals("load")) {
      System.out.println("FAIL unknown step " + a[0]);
      System.exit(1);
    }
    load(a[1], a[2], a[3], a[4], a[5]);
    System.out.println("JAVA-CHECK OK");
    System.exit(0);
  }
}
