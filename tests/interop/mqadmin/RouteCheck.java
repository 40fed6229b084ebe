// Topic routes through the official 4.9.8 admin API and client, run once against a Java
// NameServer + broker and once against uringmq-broker's built-in NameServer; mqadmin_test.sh
// compares what the two runs print, line by line. Each line is a fact both must share:
//   - a topic nobody created has no route: examineTopicRouteInfo fails with code 17;
//   - the producer's auto-creation: a send to a new topic goes through TBW102's route, the
//     broker creates the topic (min(the producer's 4, TBW102's queues), perm 6) and its route
//     appears; a consumer of it receives the message; the group's retry topic has a route;
//   - a topic created with createAndUpdateTopicConfig has a route; after deleteTopicInBroker +
//     deleteTopicInNameServer (what mqadmin deleteTopic -c does) it is code 17 again.
// Usage: java -cp <class path> RouteCheck <namesrv addr> <topic prefix>

import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.common.protocol.route.QueueData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class RouteCheck {
  static DefaultMQAdminExt admin;

  // "code N" when the NameServer has no route, else "queues W perm P" over its queueDatas.
  static String route(String topic) throws Exception {
    try {
      TopicRouteData r = admin.examineTopicRouteInfo(topic);
      int queues = 0;
      int perm = -1;
      for (QueueData q : r.getQueueDatas()) {
        queues += q.getWriteQueueNums();
        perm = q.getPerm();
      }
      return "queues " + queues + " perm " + perm;
    } catch (MQClientException e) {
      return "code " + e.getResponseCode();
    }
  }

  // The route once it stops being `while` (a registration may lag), or the last answer.
  static String routeOnceNot(String topic, String prefix) throws Exception {
    String r = route(topic);
    for (int i = 0; i < 100 && r.startsWith(prefix); i++) {
      Thread.sleep(100);
      r = route(topic);
    }
    return r;
  }

  public static void main(String[] args) throws Exception {
    String ns = args[0];
    String p = args[1];
    admin = new DefaultMQAdminExt("RouteCheckAdmin");
    admin.setNamesrvAddr(ns);
    admin.start();

    System.out.println("never: " + route(p + "Never"));

    DefaultMQProducer producer = new DefaultMQProducer("RouteCheckProducer");
    producer.setNamesrvAddr(ns);
    producer.start();
    SendResult sent = producer.send(new Message(p + "Auto", "TagA", "hello".getBytes()));
    System.out.println("auto send: " + sent.getSendStatus());
    System.out.println("auto route: " + routeOnceNot(p + "Auto", "code"));

    CountDownLatch received = new CountDownLatch(1);
    DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("RouteCheckConsumer");
    consumer.setNamesrvAddr(ns);
    consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
    consumer.subscribe(p + "Auto", "*");
    consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
      received.countDown();
      return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    });
    consumer.start();
    System.out.println("auto consumed: " + received.await(60, TimeUnit.SECONDS));
    System.out.println("retry route: " + routeOnceNot("%RETRY%RouteCheckConsumer", "code"));
    consumer.shutdown();
    producer.shutdown();

    ClusterInfo cluster = admin.examineBrokerClusterInfo();
    Set<String> masters = new java.util.TreeSet<>();
    for (BrokerData b : cluster.getBrokerAddrTable().values()) {
      masters.add(b.getBrokerAddrs().get(0L));
    }
    String clusterName = cluster.getClusterAddrTable().keySet().iterator().next();
    TopicConfig made = new TopicConfig(p + "Made", 2, 2, 6);
    for (String addr : masters) admin.createAndUpdateTopicConfig(addr, made);
    System.out.println("made route: " + routeOnceNot(p + "Made", "code"));
    for (String topic : List.of(p + "Made", p + "Auto")) {
      admin.deleteTopicInBroker(masters, topic);
      // As mqadmin deleteTopic -c calls it (DeleteTopicSubCommand): addresses, topic, cluster.
      admin.deleteTopicInNameServer(Set.of(ns), topic, clusterName);
      System.out.println("deleted " + topic.substring(p.length()) + ": " +
                         routeOnceNot(topic, "queues"));
    }
    admin.shutdown();
    System.out.println("ROUTE-CHECK DONE");
  }
}
