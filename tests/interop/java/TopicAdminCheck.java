// The official RocketMQ 4.9.8 admin client (DefaultMQAdminExt) and producer against
// uringmq-broker: topic configuration. A topic created with 8/8 queues routes 8; changed to 2
// write queues, sends land in queues 0..1 only and a send to queue 5 is refused; made read-only
// (perm 4), sends are refused (the client finds no writable queue; the broker answers 16 to a
// send that names a queue); GET_ALL_TOPIC_CONFIG lists it with its numbers; deleted, it is gone
// from the table. Prints "JAVA-CHECK OK" or "FAIL <why>" lines; exit 0 on OK.
// Usage: java -cp <client class path>:. TopicAdminCheck <nameserver host:port>
// (The table across kill -9: tests/crash/topic_table_kill9_test.cc.)

import java.util.Collections;
import java.util.HashSet;
import java.util.Set;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.common.protocol.route.QueueData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class TopicAdminCheck {
  static int failures = 0;

  static void fail(String what) {
    System.out.println("FAIL " + what);
    failures++;
  }

  static QueueData route(DefaultMQAdminExt admin, String topic) throws Exception {
    TopicRouteData r = admin.examineTopicRouteInfo(topic);
    return r.getQueueDatas().get(0);
  }

  static void configure(DefaultMQAdminExt admin, String addr, String topic, int read, int write,
      int perm) throws Exception {
    TopicConfig c = new TopicConfig(topic, read, write, perm);
    admin.createAndUpdateTopicConfig(addr, c);
    QueueData q = route(admin, topic);
    if (q.getReadQueueNums() != read || q.getWriteQueueNums() != write || q.getPerm() != perm) {
      fail("route of " + topic + " after " + read + "/" + write + "/" + perm + ": " + q);
    }
    System.out.println("CHECK " + topic + " configured " + read + "/" + write + "/" + perm + ", route " + q);
  }

  static DefaultMQProducer producer(String nameServer, String group) throws Exception {
    DefaultMQProducer p = new DefaultMQProducer(group);
    p.setNamesrvAddr(nameServer);
    p.setRetryTimesWhenSendFailed(0);
    p.start();
    return p;
  }

  public static void main(String[] args) throws Exception {
    String nameServer = args[0];
    String topic = "JavaTopicAdmin";
    DefaultMQAdminExt admin = new DefaultMQAdminExt();
    admin.setNamesrvAddr(nameServer);
    admin.setAdminExtGroup("JavaTopicAdminExt");
    admin.start();
    // The broker's address, from any topic's route (autoCreateTopicEnable answers one).
    String addr = admin.examineTopicRouteInfo("TBW102").getBrokerDatas().get(0).selectBrokerAddr();

    configure(admin, addr, topic, 8, 8, 6);
    configure(admin, addr, topic, 8, 2, 6);
    DefaultMQProducer p = producer(nameServer, "JavaTopicAdminProducer");
    Set<Integer> queues = new HashSet<>();
    for (int i = 0; i < 40; i++) {
      SendResult r = p.send(new Message(topic, ("m" + i).getBytes("UTF-8")));
      queues.add(r.getMessageQueue().getQueueId());
    }
    for (int q : queues) if (q < 0 || q > 1) fail("a send landed in queue " + q + " of 2 write queues");
    System.out.println("CHECK 40 sends landed in queues " + queues);
    try {
      MessageQueue five = new MessageQueue(topic, route(admin, topic).getBrokerName(), 5);
      p.send(new Message(topic, "q5".getBytes("UTF-8")), five);
      fail("a send to queue 5 of 2 write queues was stored");
    } catch (Exception e) {
      System.out.println("CHECK send to queue 5 refused: " + e.getMessage().split("\n")[0]);
    }
    p.shutdown();

    configure(admin, addr, topic, 8, 2, 4);
    DefaultMQProducer ro = producer(nameServer, "JavaTopicAdminProducerRO");
    try {
      ro.send(new Message(topic, "ro".getBytes("UTF-8")));
      fail("a send to a read-only topic was stored");
    } catch (Exception e) {
      System.out.println("CHECK read-only topic refused by the client: " + e.getMessage().split("\n")[0]);
    }
    try {
      MessageQueue zero = new MessageQueue(topic, route(admin, topic).getBrokerName(), 0);
      ro.send(new Message(topic, "ro0".getBytes("UTF-8")), zero);
      fail("a send naming queue 0 of a read-only topic was stored");
    } catch (Exception e) {
      String text = e.toString();
      if (!text.contains("CODE: 16") && !text.contains("forbidden")) fail("read-only refusal: " + text);
      System.out.println("CHECK read-only topic refused by the broker: " + e.getMessage().split("\n")[0]);
    }
    ro.shutdown();

    TopicConfigSerializeWrapper all = admin.getAllTopicConfig(addr, 5000);
    TopicConfig listed = all.getTopicConfigTable().get(topic);
    if (listed == null || listed.getWriteQueueNums() != 2 || listed.getReadQueueNums() != 8
        || listed.getPerm() != 4) {
      fail("GET_ALL_TOPIC_CONFIG lists " + listed);
    }
    System.out.println("CHECK GET_ALL_TOPIC_CONFIG: " + all.getTopicConfigTable().size() + " topics, " + listed);

    admin.deleteTopicInBroker(new HashSet<>(Collections.singletonList(addr)), topic);
    all = admin.getAllTopicConfig(addr, 5000);
    if (all.getTopicConfigTable().containsKey(topic)) fail("the deleted topic is still listed");
    System.out.println("CHECK deleted: listed " + all.getTopicConfigTable().containsKey(topic));

    admin.shutdown();
    System.out.println(failures == 0 ? "JAVA-CHECK OK" : "JAVA-CHECK FAILED " + failures);
    System.exit(failures == 0 ? 0 : 1);
  }
}
