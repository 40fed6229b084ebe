// The official RocketMQ 4.9.8 client with AclClientRPCHook against uringmq-broker with
// aclEnable=true (rules: AclCheck.plain_acl.yml). A permitted account sends and its push
// consumer receives; a wrong secret, an unknown key, no credentials, a topic without PUB and a
// group without SUB are each refused with code 1 and the remark the Java 4.9.8 broker answers
// (PlainAccessValidator's; acl_java_broker.sh runs this class against the Java broker); a non-admin account's updateTopic is refused and an
// admin's is done; an account whose whiteRemoteAddress is 127.0.0.1 passes with a wrong secret;
// and a rewritten plain_acl.yml applies within 5 s without a restart.
// Prints "JAVA-CHECK OK" or "FAIL <why>" lines; exit 0 on OK.
// Usage: java -cp <client class path>:. AclCheck <nameserver host:port> <work dir> [reload ms]
// (the folder of plain_acl.yml, and how long a change may take: 5000 by default; the Java
// broker, which checks its file every 5 s, needs up to 10000).

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class AclCheck {
  static int failures = 0;
  static final String EX = "org.apache.rocketmq.acl.common.AclException: ";
  static final String AT = ", org.apache.rocketmq.acl.plain.PlainPermissionManager.";

  static void fail(String what) {
    System.out.println("FAIL " + what);
    failures++;
  }

  static RPCHook hook(String ak, String sk) {
    return new AclClientRPCHook(new SessionCredentials(ak, sk));
  }

  // Clients of one JVM share an MQClientInstance (and its hook) per instance name: one each.
  static DefaultMQProducer producer(String ns, String name, RPCHook hook) throws Exception {
    DefaultMQProducer p = hook == null ? new DefaultMQProducer("AclProducer" + name)
                                       : new DefaultMQProducer("AclProducer" + name, hook);
    p.setNamesrvAddr(ns);
    p.setInstanceName("acl-" + name);
    p.setRetryTimesWhenSendFailed(0);
    p.start();
    return p;
  }

  // The broker's answer to a send: "0" when stored, else "<code> <remark>".
  static String send(DefaultMQProducer p, String topic) {
    try {
      p.send(new Message(topic, "acl".getBytes(StandardCharsets.UTF_8)));
      return "0";
    } catch (Exception e) {
      for (Throwable t = e; t != null; t = t.getCause()) {
        if (t instanceof MQBrokerException) {
          MQBrokerException b = (MQBrokerException) t;
          return b.getResponseCode() + " " + b.getErrorMessage();
        }
      }
      return "exception " + e;
    }
  }

  static void expect(String what, String got, String want) {
    if (!got.equals(want)) {
      fail(what + ": got [" + got + "], want [" + want + "]");
    } else {
      System.out.println("CHECK " + what + ": " + got);
    }
  }

  public static void main(String[] args) throws Exception {
    String ns = args[0];
    Path rules = Paths.get(args[1], "plain_acl.yml");
    long reloadMs = args.length > 2 ? Long.parseLong(args[2]) : 5000;
    RPCHook one = hook("aclUserOne", "aclSecretOne");

    // A permitted account sends and consumes.
    DefaultMQProducer good = producer(ns, "good", one);
    expect("permitted send", send(good, "AclTopicA"), "0");
    CountDownLatch got = new CountDownLatch(1);
    DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("AclGroupA", one,
        new org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely());
    consumer.setNamesrvAddr(ns);
    consumer.setInstanceName("acl-consumer");
    consumer.subscribe("AclTopicA", "*");
    consumer.setConsumeFromWhere(
        org.apache.rocketmq.common.consumer.ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
    consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
      got.countDown();
      return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    });
    consumer.start();
    if (!got.await(60, TimeUnit.SECONDS)) fail("the permitted consumer received nothing in 60 s");
    else System.out.println("CHECK permitted consumer received");
    consumer.shutdown();

    // Refusals, each as the Java broker answers.
    expect("wrong secret", send(producer(ns, "wrong", hook("aclUserOne", "notTheSecret")),
        "AclTopicA"),
        "1 " + EX + "Check signature failed for accessKey=aclUserOne" + AT
            + "validate(PlainPermissionManager.java:684)");
    expect("unknown key", send(producer(ns, "unknown", hook("nobodyKnows", "whatever1")),
        "AclTopicA"),
        "1 " + EX + "No acl config for nobodyKnows" + AT
            + "validate(PlainPermissionManager.java:668)");
    expect("no credentials", send(producer(ns, "none", null), "AclTopicA"),
        "1 " + EX + "No accessKey is configured" + AT
            + "validate(PlainPermissionManager.java:664)");
    expect("topic without PUB", send(good, "AclTopicB"),
        "1 " + EX + "No default permission for topic:AclTopicB" + AT
            + "checkPerm(PlainPermissionManager.java:611)");
    expect("topic not listed", send(good, "AclTopicC"),
        "1 " + EX + "No default permission for topic:AclTopicC" + AT
            + "checkPerm(PlainPermissionManager.java:606)");
    DefaultMQPullConsumer pull = new DefaultMQPullConsumer("AclGroupDenied", one);
    pull.setNamesrvAddr(ns);
    pull.setInstanceName("acl-pull");
    pull.start();
    String pulled;
    try {
      MessageQueue mq = pull.fetchSubscribeMessageQueues("AclTopicA").iterator().next();
      pulled = "0 " + pull.pull(mq, "*", 0, 1).getPullStatus();
    } catch (MQBrokerException e) {
      pulled = e.getResponseCode() + " " + e.getErrorMessage();
    }
    expect("group without SUB", pulled,
        "1 " + EX + "No default permission for group:AclGroupDenied" + AT
            + "checkPerm(PlainPermissionManager.java:611)");
    pull.shutdown();

    // Admin requests need an admin account.
    DefaultMQAdminExt admin = new DefaultMQAdminExt(one);
    admin.setNamesrvAddr(ns);
    admin.setInstanceName("acl-admin-user");
    admin.start();
    String addr = admin.examineTopicRouteInfo("AclTopicA").getBrokerDatas().get(0).selectBrokerAddr();
    String created;
    try {
      admin.createAndUpdateTopicConfig(addr, new TopicConfig("AclAdminTopic", 2, 2, 6));
      created = "0";
    } catch (MQClientException e) {
      created = e.getResponseCode() + " " + e.getErrorMessage();
    }
    expect("updateTopic by a non-admin", created,
        "1 " + EX + "Need admin permission for request code=17, but accessKey=aclUserOne is not"
            + AT + "checkPerm(PlainPermissionManager.java:581)");
    admin.shutdown();
    DefaultMQAdminExt root = new DefaultMQAdminExt(hook("aclAdminOne", "aclAdminSecret"));
    root.setNamesrvAddr(ns);
    root.setInstanceName("acl-admin-root");
    root.start();
    root.createAndUpdateTopicConfig(addr, new TopicConfig("AclAdminTopic", 2, 2, 6));
    System.out.println("CHECK updateTopic by an admin: done");
    root.shutdown();

    // whiteRemoteAddress: requests naming the account from 127.0.0.1 pass unchecked.
    expect("white address, wrong secret",
        send(producer(ns, "white", hook("aclWhiteOne", "notTheSecret")), "AclTopicC"), "0");

    // A changed file applies without a restart.
    String text = new String(Files.readAllBytes(rules), StandardCharsets.UTF_8);
    Files.write(rules, text.replace("AclTopicB=SUB", "AclTopicC=PUB")
        .getBytes(StandardCharsets.UTF_8));
    long changed = System.nanoTime();
    String after = send(good, "AclTopicC");
    while (!after.equals("0") && System.nanoTime() - changed < reloadMs * 1_000_000L) {
      Thread.sleep(100);
      after = send(good, "AclTopicC");
    }
    expect("send after the file granted PUB (within " + reloadMs + " ms)", after, "0");
    System.out.println("CHECK the change applied after "
        + (System.nanoTime() - changed) / 1_000_000 + " ms");

    System.out.println(failures == 0 ? "JAVA-CHECK OK" : "JAVA-CHECK FAILED " + failures);
    System.exit(failures == 0 ? 0 : 1);
  }
}
