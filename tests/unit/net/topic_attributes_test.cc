// Goal: RocketMQ 5's attribute modifications ("+key=value,-key") are applied as Java's
// AttributeParser and AttributeUtil apply them to a topic: message.type only, its enum values,
// only additions at creation, and any error refuses the whole modification naming the problem.
// Method: alter_topic_attributes and the message type readers called directly.

#include "net/core/attributes.h"

#include <gtest/gtest.h>

#include <string>

namespace uringmq::net {
namespace {

// The error message of a refused modification ("" when it was taken).
std::string refusal(bool create, const Attributes& current, std::string_view changes) {
  io::Result<Attributes> r = alter_topic_attributes(create, current, changes);
  if (r.is_ok()) return "";
  EXPECT_EQ(r.status().code(), io::Code::invalid_argument);
  return r.status().message();
}

TEST(TopicAttributesTest, SetsChangesAndRemovesMessageType) {
  io::Result<Attributes> created = alter_topic_attributes(true, {}, "+message.type=FIFO");
  ASSERT_TRUE(created.is_ok()) << created.status().to_string();
  EXPECT_EQ(*created, (Attributes{{"message.type", "FIFO"}}));
  EXPECT_EQ(topic_message_type(*created), TopicMessageType::fifo);

  io::Result<Attributes> kept = alter_topic_attributes(false, *created, "");
  ASSERT_TRUE(kept.is_ok());
  EXPECT_EQ(*kept, *created);  // a change without attributes keeps them
  io::Result<Attributes> changed = alter_topic_attributes(false, *created, "+message.type=MIXED");
  ASSERT_TRUE(changed.is_ok());
  EXPECT_EQ(topic_message_type(*changed), TopicMessageType::mixed);
  io::Result<Attributes> removed = alter_topic_attributes(false, *changed, "-message.type");
  ASSERT_TRUE(removed.is_ok());
  EXPECT_TRUE(removed->empty());
  EXPECT_EQ(topic_message_type(*removed), TopicMessageType::unspecified);
  EXPECT_TRUE(alter_topic_attributes(true, {}, "").is_ok());
  // Empty entries at the end are dropped, as Java's split drops them.
  io::Result<Attributes> trailing = alter_topic_attributes(true, {}, "+message.type=DELAY,,");
  ASSERT_TRUE(trailing.is_ok()) << trailing.status().to_string();
  EXPECT_EQ(topic_message_type(*trailing), TopicMessageType::delay);
}

TEST(TopicAttributesTest, EveryMessageTypeNamesItself) {
  for (TopicMessageType t :
       {TopicMessageType::normal, TopicMessageType::fifo, TopicMessageType::delay,
        TopicMessageType::transaction, TopicMessageType::mixed}) {
    const std::string_view name = topic_message_type_name(t);
    EXPECT_EQ(parse_topic_message_type(name), t) << name;
    io::Result<Attributes> a =
        alter_topic_attributes(true, {}, "+message.type=" + std::string(name));
    ASSERT_TRUE(a.is_ok()) << name;
    EXPECT_EQ(topic_message_type(*a), t);
  }
  EXPECT_EQ(topic_message_type_name(TopicMessageType::unspecified), "");
  EXPECT_FALSE(parse_topic_message_type("fifo").has_value());  // the enum is case-sensitive
  // A value written by a newer broker that this one does not know reads as unspecified.
  EXPECT_EQ(topic_message_type({{"message.type", "LATER"}}), TopicMessageType::unspecified);
}

TEST(TopicAttributesTest, BadModificationsAreRefusedNamingTheProblem) {
  const Attributes fifo = {{"message.type", "FIFO"}};
  EXPECT_NE(refusal(true, {}, "+message.type=LIFO").find("LIFO of message.type is not in set"),
            std::string::npos);
  EXPECT_NE(refusal(true, {}, "+queue.type=BatchCQ").find("unsupported key: queue.type"),
            std::string::npos);
  EXPECT_NE(refusal(false, fifo, "-cleanup.policy").find("unsupported key: cleanup.policy"),
            std::string::npos);
  EXPECT_NE(refusal(true, {}, "message.type=FIFO").find("add/alter attribute format is wrong"),
            std::string::npos);
  EXPECT_NE(refusal(true, {}, "+message.type=").find("add/alter attribute format is wrong"),
            std::string::npos);
  EXPECT_NE(refusal(true, {}, "+=FIFO").find("add/alter attribute format is wrong"),
            std::string::npos);
  EXPECT_NE(refusal(false, fifo, "message.type").find("delete attribute format is wrong"),
            std::string::npos);
  EXPECT_NE(refusal(false, fifo, ",+message.type=FIFO").find("delete attribute format is wrong"),
            std::string::npos);
  EXPECT_NE(refusal(false, fifo, "+message.type=FIFO,,-message.type")
                .find("delete attribute format is wrong"),
            std::string::npos);
  EXPECT_NE(refusal(true, {}, "-message.type").find("only add attribute is supported"),
            std::string::npos);
  EXPECT_NE(refusal(false, {}, "-message.type").find("attempt to delete a nonexistent key"),
            std::string::npos);
  EXPECT_NE(refusal(false, fifo, "+message.type=NORMAL,-message.type").find("key duplication"),
            std::string::npos);
}

TEST(TopicAttributesTest, AttributesJsonReadAndWritten) {
  std::string out = "{\"x\":1";
  append_attributes(&out, {});
  EXPECT_EQ(out, "{\"x\":1");  // none: no member
  append_attributes(&out, {{"b", "2"}, {"a", "\"1\""}});
  out += '}';
  EXPECT_EQ(out, R"({"x":1,"attributes":{"a":"\"1\"","b":"2"}})");
  io::Result<JsonValue> doc = parse_json(out);
  ASSERT_TRUE(doc.is_ok());
  io::Result<Attributes> read = read_attributes(*doc, "attributes");
  ASSERT_TRUE(read.is_ok());
  EXPECT_EQ(*read, (Attributes{{"a", "\"1\""}, {"b", "2"}}));
  EXPECT_TRUE(read_attributes(*doc, "absent")->empty());
  io::Result<JsonValue> bad = parse_json(R"({"attributes":{"a":1}})");
  ASSERT_TRUE(bad.is_ok());
  EXPECT_FALSE(read_attributes(*bad, "attributes").is_ok());
}

}  // namespace
}  // namespace uringmq::net
