// The official RocketMQ 4.9.8 Java client against uringmq-broker: messages sent with keys are
// found again through the message index and by their ids, as RocketMQ's own broker answers:
// viewMessage(offsetMsgId) (VIEW_MESSAGE_BY_ID), viewMessage(topic, msgId) (QUERY_MESSAGE with
// the unique key), queryMessage(topic, key, maxNum, begin, end) (QUERY_MESSAGE by key) and
// earliestMsgStoreTime (GET_EARLIEST_MSG_STORETIME), from a producer and from DefaultMQAdminExt.
// Prints "FAIL <why>" per failed check and "JAVA-CHECK OK" or "JAVA-CHECK FAILED <n>".
// Usage: java -cp <client class path>:. QueryMessageCheck <nameserver host:port>

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class QueryMessageCheck {
  static int failures = 0;

  static void fail(String what) {
    System.out.println("FAIL " + what);
    failures++;
  }

  static String body(MessageExt m) throws Exception {
    return m == null ? "null" : new String(m.getBody(), "UTF-8");
  }

  public static void main(String[] args) throws Exception {
    try {
      run(args[0]);
    } catch (Exception e) {
      fail("exception " + e);
    }
    System.out.println(failures == 0 ? "JAVA-CHECK OK" : "JAVA-CHECK FAILED " + failures);
    System.exit(failures == 0 ? 0 : 1);
  }

  static void run(String nameServerAddress) throws Exception {
    String nameServer = nameServerAddress;
    String topic = "JavaQuery";
    DefaultMQProducer producer = new DefaultMQProducer("JavaQueryProducer");
    producer.setNamesrvAddr(nameServer);
    producer.start();
    long begin = System.currentTimeMillis() - 60_000;
    List<SendResult> sent = new ArrayList<>();
    int n = 40;
    for (int i = 0; i < n; i++) {
      Message m = new Message(topic, "TagQ", "qk-" + i + " shared", ("body-" + i).getBytes("UTF-8"));
      SendResult r = producer.send(m);
      if (r.getSendStatus() != SendStatus.SEND_OK) fail("send " + r);
      sent.add(r);
    }
    long end = System.currentTimeMillis() + 60_000;

    for (int i : new int[] {0, 17, n - 1}) {
      SendResult r = sent.get(i);
      MessageExt byOffset = producer.viewMessage(r.getOffsetMsgId());
      if (!("body-" + i).equals(body(byOffset))) {
        fail("viewMessage(offsetMsgId " + r.getOffsetMsgId() + ") gave " + body(byOffset));
      }
      MessageExt byUniq = producer.viewMessage(topic, r.getMsgId());
      if (!("body-" + i).equals(body(byUniq))) {
        fail("viewMessage(topic, msgId " + r.getMsgId() + ") gave " + body(byUniq));
      }
      QueryResult q = producer.queryMessage(topic, "qk-" + i, 32, begin, end);
      if (q.getMessageList().size() != 1 || !("body-" + i).equals(body(q.getMessageList().get(0)))) {
        fail("queryMessage(qk-" + i + ") gave " + q.getMessageList().size() + " messages");
      }
      System.out.println("CHECK message " + i + " found by offsetMsgId, msgId and key");
    }
    QueryResult shared = producer.queryMessage(topic, "shared", 64, begin, end);
    Set<String> bodies = new HashSet<>();
    for (MessageExt m : shared.getMessageList()) bodies.add(body(m));
    if (bodies.size() != n) fail("queryMessage(shared) found " + bodies.size() + " of " + n);
    try {  // the client throws "no message" (208) when every broker answers QUERY_NOT_FOUND
      QueryResult none = producer.queryMessage(topic, "qk-3", 32, end, end + 1000);
      if (!none.getMessageList().isEmpty()) fail("queryMessage outside the time range found some");
    } catch (MQClientException e) {
      if (e.getResponseCode() != 208) fail("queryMessage outside the time range: " + e);
    }
    long earliest = producer.earliestMsgStoreTime(sent.get(0).getMessageQueue());
    if (earliest < begin || earliest > end) fail("earliestMsgStoreTime " + earliest);
    System.out.println("CHECK earliestMsgStoreTime " + earliest);

    DefaultMQAdminExt admin = new DefaultMQAdminExt("JavaQueryAdmin");
    admin.setNamesrvAddr(nameServer);
    admin.start();
    MessageExt viaAdmin = admin.viewMessage(sent.get(5).getOffsetMsgId());
    if (!"body-5".equals(body(viaAdmin))) fail("admin viewMessage gave " + body(viaAdmin));
    MessageExt viaAdminUniq = admin.viewMessage(topic, sent.get(6).getMsgId());
    if (!"body-6".equals(body(viaAdminUniq))) fail("admin viewMessage(topic, msgId) gave " + body(viaAdminUniq));
    admin.shutdown();
    producer.shutdown();
  }
}
