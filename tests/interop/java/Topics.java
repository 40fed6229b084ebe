// Creates the topics a check uses through the official admin API (createAndUpdateTopicConfig on
// every master the NameServer lists), as an operator does before clients use them: the built-in
// NameServer, like Java's, has no route for a topic no one created, so a consumer started before
// the first send, or fetchPublishMessageQueues, would find none.

import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public final class Topics {
  private Topics() {}

  static void create(String nameServer, int queues, String... topics) throws Exception {
    DefaultMQAdminExt admin = new DefaultMQAdminExt("TopicsAdmin");
    admin.setInstanceName("TopicsAdmin" + System.nanoTime());
    admin.setNamesrvAddr(nameServer);
    admin.start();
    try {
      ClusterInfo cluster = admin.examineBrokerClusterInfo();
      for (BrokerData broker : cluster.getBrokerAddrTable().values()) {
        String master = broker.getBrokerAddrs().get(0L);
        if (master == null) continue;
        for (String topic : topics) {
          admin.createAndUpdateTopicConfig(master, new TopicConfig(topic, queues, queues, 6));
        }
      }
    } finally {
      admin.shutdown();
    }
  }
}
