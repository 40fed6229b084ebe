// A RocketMQ cluster with uringmq brokers, checked with the official 4.9.8 Java client and admin:
// every NameServer lists every broker group; a producer (all NameServers) spreads a new topic
// over every group; two consumers in one group receive every message; kill -9 of one uringmq
// broker drops it from the routes at once (its registration connection closes), sends go on
// with no failure after retry, and restarted it is listed again and its unconsumed messages are
// delivered; SIGTERM of another broker removes it at once (UNREGISTER_BROKER).
// Prints "CHECK ..." lines and "JAVA-CHECK OK", or "FAIL <why>" lines; exit 0 on OK.
// Usage: java ClusterCheck <ns1;ns2> <groups a,b,...> <killed group> <restart command file>
//        <pid file of the killed> <stopped group> <pid file of the stopped>
// The restart command file holds one shell command that starts the killed broker again and
// writes its pid file.

import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.*;
import java.util.concurrent.ConcurrentHashMap;
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
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class ClusterCheck {
  static int failures = 0;
  static final Set<String> received = ConcurrentHashMap.newKeySet();

  static void fail(String what) {
    System.out.println("FAIL " + what);
    failures++;
  }

  static Set<String> listed(DefaultMQAdminExt admin) {
    try {
      ClusterInfo info = admin.examineBrokerClusterInfo();
      Set<String> names = new TreeSet<>();
      info.getBrokerAddrTable().forEach((name, data) -> {
        if (data.getBrokerAddrs().containsKey(0L)) names.add(name);
      });
      return names;
    } catch (Exception e) {
      return Collections.emptySet();
    }
  }

  // Waits until every NameServer's listing satisfies `ok`; the milliseconds it took, or -1.
  static long waitListing(List<DefaultMQAdminExt> admins, java.util.function.Predicate<Set<String>> ok,
      long limitMs) throws InterruptedException {
    long start = System.currentTimeMillis();
    while (System.currentTimeMillis() - start < limitMs) {
      boolean all = true;
      for (DefaultMQAdminExt a : admins) all &= ok.test(listed(a));
      if (all) return System.currentTimeMillis() - start;
      Thread.sleep(50);
    }
    return -1;
  }

  static DefaultMQPushConsumer consumer(String ns, String group, String topic, String name)
      throws Exception {
    DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
    c.setNamesrvAddr(ns);
    c.setInstanceName(name);
    c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
    c.subscribe(topic, "*");
    c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
      for (MessageExt m : msgs) received.add(m.getKeys());
      return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    });
    c.start();
    return c;
  }

  static Set<MessageQueue> owned(DefaultMQPushConsumer c) {
    return new TreeSet<>(
        c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().keySet());
  }

  // Sends n messages keyed prefix+i; counts per broker; a send that fails after the client's
  // retries is a failure.
  static Map<String, Integer> send(DefaultMQProducer p, String topic, String prefix, int n,
      List<String> ledger) {
    Map<String, Integer> per = new TreeMap<>();
    int failed = 0;
    String firstError = null;
    for (int i = 0; i < n; i++) {
      Message m = new Message(topic, ("body " + prefix + i).getBytes());
      m.setKeys(prefix + i);
      try {
        SendResult r = p.send(m);
        if (r.getSendStatus() != SendStatus.SEND_OK) throw new Exception(r.toString());
        per.merge(r.getMessageQueue().getBrokerName(), 1, Integer::sum);
        ledger.add(prefix + i);
      } catch (Exception e) {
        failed++;
        if (firstError == null) firstError = e.toString().split("\n")[0];
      }
    }
    if (failed > 0) fail(failed + " of " + n + " sends failed after retry, first: " + firstError);
    return per;
  }

  static boolean waitReceived(Collection<String> keys, long limitMs) throws InterruptedException {
    long start = System.currentTimeMillis();
    while (System.currentTimeMillis() - start < limitMs) {
      if (received.containsAll(keys)) return true;
      Thread.sleep(100);
    }
    return false;
  }

  static long pidOf(String file) throws Exception {
    return Long.parseLong(new String(Files.readAllBytes(Paths.get(file))).trim());
  }

  static void signal(String sig, long pid) throws Exception {
    new ProcessBuilder("kill", sig, Long.toString(pid)).inheritIO().start().waitFor();
  }

  public static void main(String[] args) throws Exception {
    String ns = args[0];
    List<String> groups = Arrays.asList(args[1].split(","));
    String killed = args[2], restartFile = args[3], killedPid = args[4];
    String stopped = args[5], stoppedPid = args[6];
    List<DefaultMQAdminExt> admins = new ArrayList<>();
    for (String one : ns.split(";")) {
      DefaultMQAdminExt a = new DefaultMQAdminExt();
      a.setNamesrvAddr(one);
      a.setInstanceName("admin-" + one);
      a.start();
      admins.add(a);
    }
    // 1. Every NameServer lists every group.
    long took = waitListing(admins, s -> s.containsAll(groups), 5000);
    if (took < 0) {
      for (DefaultMQAdminExt a : admins) fail("a NameServer lists " + listed(a) + ", not all of " + groups);
    }
    System.out.println("CHECK every NameServer lists " + groups + " (" + took + " ms)");

    // 2. 2,000 messages to a new topic through TBW102's route: all SEND_OK, spread over groups.
    String topic = "ClusterTopic" + System.currentTimeMillis() % 100000;
    DefaultMQProducer p = new DefaultMQProducer("ClusterProducer");
    p.setNamesrvAddr(ns);
    p.setRetryTimesWhenSendFailed(2);
    p.setSendMsgTimeout(3000);
    p.start();
    List<String> ledger = new ArrayList<>();
    Map<String, Integer> per = send(p, topic, "a", 2000, ledger);
    System.out.println("CHECK 2000 sends per broker " + per);
    for (String g : groups) {
      if (per.getOrDefault(g, 0) < 300) fail(g + " holds " + per.getOrDefault(g, 0) + " of 2000 (< 15%)");
    }

    // 3. Two consumers in one group receive every message, their queues split across brokers.
    DefaultMQPushConsumer c1 = consumer(ns, "ClusterGroup", topic, "c1");
    DefaultMQPushConsumer c2 = consumer(ns, "ClusterGroup", topic, "c2");
    if (!waitReceived(ledger, 90000)) fail("received " + received.size() + " of " + ledger.size());
    Set<String> b1 = new TreeSet<>(), b2 = new TreeSet<>();
    for (MessageQueue q : owned(c1)) b1.add(q.getBrokerName());
    for (MessageQueue q : owned(c2)) b2.add(q.getBrokerName());
    System.out.println("CHECK both consumers received all " + ledger.size() + "; c1 reads " + b1
        + ", c2 reads " + b2);
    if (owned(c1).isEmpty() || owned(c2).isEmpty()) fail("a consumer owns no queue");
    Set<String> both = new TreeSet<>(b1);
    both.addAll(b2);
    if (!both.containsAll(groups)) fail("the consumers read " + both + ", not every group");
    c1.shutdown();
    c2.shutdown();

    // 4. Messages left unconsumed, then kill -9 of a broker: gone from every NameServer at once.
    List<String> backlog = new ArrayList<>();
    per = send(p, topic, "b", 300, backlog);
    System.out.println("CHECK 300 unconsumed sends per broker " + per);
    signal("-9", pidOf(killedPid));
    took = waitListing(admins, s -> !s.contains(killed), 2000);
    if (took < 0) fail(killed + " still listed 2 s after kill -9");
    System.out.println("CHECK kill -9 " + killed + ": left every NameServer in " + took + " ms");
    per = send(p, topic, "c", 300, backlog);
    System.out.println("CHECK 300 sends while " + killed + " is down, per broker " + per);

    // 5. Restarted: listed again at once, and its unconsumed messages are delivered.
    long restart = System.currentTimeMillis();
    new ProcessBuilder("bash", restartFile).inheritIO().start().waitFor();
    took = waitListing(admins, s -> s.contains(killed), 10000);
    long ready = Long.parseLong(new String(Files.readAllBytes(Paths.get(restartFile + ".ready"))).trim());
    System.out.println("CHECK restarted " + killed + ": listed " + (System.currentTimeMillis() - restart)
        + " ms after the restart began (" + (System.currentTimeMillis() - ready) + " ms after ready)");
    if (took < 0) fail(killed + " not listed again 10 s after its restart");
    else if (System.currentTimeMillis() - ready > 2000 + 2000) fail(killed + " listed late");
    c1 = consumer(ns, "ClusterGroup", topic, "c1");
    c2 = consumer(ns, "ClusterGroup", topic, "c2");
    if (!waitReceived(backlog, 90000)) {
      List<String> missing = new ArrayList<>(backlog);
      missing.removeAll(received);
      fail("after the restart " + missing.size() + " unconsumed messages were not delivered, e.g. "
          + missing.subList(0, Math.min(5, missing.size())));
    } else {
      System.out.println("CHECK every one of " + backlog.size() + " unconsumed messages delivered");
    }
    c1.shutdown();
    c2.shutdown();

    // 6. SIGTERM: the broker unregisters and leaves every NameServer at once.
    signal("-TERM", pidOf(stoppedPid));
    took = waitListing(admins, s -> !s.contains(stopped), 3000);
    if (took < 0) fail(stopped + " still listed 3 s after SIGTERM");
    System.out.println("CHECK SIGTERM " + stopped + ": left every NameServer in " + took + " ms");

    p.shutdown();
    for (DefaultMQAdminExt a : admins) a.shutdown();
    if (failures == 0) System.out.println("JAVA-CHECK OK");
    System.exit(failures == 0 ? 0 : 1);
  }
}
