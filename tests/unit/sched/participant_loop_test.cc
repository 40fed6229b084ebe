// Goal: ParticipantLoop routes each completion to the part that registered its tag class (and
// only to it), submits and steps in registration order, answers the earliest deadline and the
// lowest low-water mark over its parts, is busy while any part is, and closes in the reverse
// order of registration while reporting the first error in registration order. Method: fake
// parts that record what they were asked and answer what the test sets; completions built with
// sched::tag_of, as the real parts build their user_data.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched/completion_tags.h"
#include "sched/hook_participant.h"
#include "sched/participant_loop.h"

namespace uringmq::sched {
namespace {

struct FakePart final : Participant {
  FakePart(std::string n, std::vector<std::string>* journal) : name(std::move(n)), log(journal) {}
  void submit_work() override { log->push_back("submit " + name); }
  void complete(const io::IoCompletion& c) override { completed.push_back(c.user_data); }
  void step(int64_t now_ms) override {
    log->push_back("step " + name + " " + std::to_string(now_ms));
  }
  int64_t next_deadline_ms() const override { return deadline_ms; }
  int64_t wake_ns() const override { return wake; }
  bool busy() const override { return pending > 0; }
  uint64_t low_water(Checkpoint which) override {
    return which == Checkpoint::running ? running_low : final_low;
  }
  io::Status close() override {
    log->push_back("close " + name);
    return close_status;
  }

  std::string name;
  std::vector<std::string>* log;
  std::vector<uint64_t> completed;
  int64_t deadline_ms = INT64_MAX;
  int64_t wake = INT64_MAX;
  int pending = 0;
  uint64_t running_low = UINT64_MAX;
  uint64_t final_low = UINT64_MAX;
  io::Status close_status = io::Status::ok();
};

TEST(ParticipantLoopTest, RoutesByTagClassToItsOwnerOnly) {
  std::vector<std::string> journal;
  FakePart log("log", &journal), queues("queues", &journal);
  ParticipantLoop loop;
  loop.add(log, {TagClass::log_write, TagClass::log_read});
  loop.add(queues, {TagClass::consume_queue});
  const uint64_t write = tag_of(TagClass::log_write, 7);
  const uint64_t read = tag_of(TagClass::log_read, read_tag::kPullOp | 3);
  const uint64_t unit = tag_of(TagClass::consume_queue, 42);
  loop.route(io::IoCompletion{write, 4096});
  loop.route(io::IoCompletion{unit, 0});
  loop.route(io::IoCompletion{read, 100});
  EXPECT_EQ(log.completed, (std::vector<uint64_t>{write, read}));
  EXPECT_EQ(queues.completed, (std::vector<uint64_t>{unit}));
  EXPECT_EQ(loop.owner(unit), &queues);
  EXPECT_EQ(loop.owner(tag_of(TagClass::consumer_offs, 0)), nullptr);
  EXPECT_EQ(index_of(read), read_tag::kPullOp | 3) << "the index survives the class byte";
}

TEST(ParticipantLoopDeathTest, CompletionOfAnUnregisteredClassFails) {
  std::vector<std::string> journal;
  FakePart log("log", &journal);
  ParticipantLoop loop;
  loop.add(log, {TagClass::log_write});
  EXPECT_DEATH(loop.route(io::IoCompletion{tag_of(TagClass::shard_sleep, 1), 0}),
               "nobody registered");
}

TEST(ParticipantLoopDeathTest, AClassHasOneOwner) {
  std::vector<std::string> journal;
  FakePart a("a", &journal), b("b", &journal);
  ParticipantLoop loop;
  loop.add(a, {TagClass::log_scrub});
  EXPECT_DEATH(loop.add(b, {TagClass::log_scrub}), "two owners");
}

TEST(ParticipantLoopTest, SubmitsAndStepsInRegistrationOrder) {
  std::vector<std::string> journal;
  FakePart log("log", &journal), queues("queues", &journal), offsets("offsets", &journal);
  ParticipantLoop loop;
  loop.add(log);
  loop.add(queues);
  loop.add(offsets);
  loop.submit_all();
  loop.step_all(5);
  EXPECT_EQ(journal, (std::vector<std::string>{"submit log", "submit queues", "submit offsets",
                                               "step log 5", "step queues 5", "step offsets 5"}));
}

TEST(ParticipantLoopTest, DeadlinesAndLowWaterAreTheMinimumOverParts) {
  std::vector<std::string> journal;
  FakePart a("a", &journal), b("b", &journal), c("c", &journal);
  ParticipantLoop loop;
  loop.add(a);
  loop.add(b);
  loop.add(c);
  EXPECT_EQ(loop.next_deadline_ms(), INT64_MAX);
  EXPECT_EQ(loop.wake_ns(), INT64_MAX);
  EXPECT_EQ(loop.low_water(Checkpoint::running), UINT64_MAX) << "no part constrains";
  a.deadline_ms = 300;
  b.deadline_ms = 120;
  c.wake = 119'000'001;
  EXPECT_EQ(loop.next_deadline_ms(), 120);
  EXPECT_EQ(loop.wake_ns(), 119'000'001);
  a.running_low = 5000;
  b.running_low = 9000;
  c.running_low = 4096;
  b.final_low = 7000;
  EXPECT_EQ(loop.low_water(Checkpoint::running), 4096u);
  EXPECT_EQ(loop.low_water(Checkpoint::final), 7000u) << "each part answers for each checkpoint";
  c.running_low = UINT64_MAX;
  EXPECT_EQ(loop.low_water(Checkpoint::running), 5000u) << "the mark moves when a part lets go";
}

TEST(ParticipantLoopTest, BusyWhileAnyPartHasWorkPending) {
  std::vector<std::string> journal;
  FakePart a("a", &journal), b("b", &journal);
  ParticipantLoop loop;
  loop.add(a);
  loop.add(b);
  EXPECT_FALSE(loop.busy());
  b.pending = 2;
  EXPECT_TRUE(loop.busy());
  b.pending = 1;
  a.pending = 1;
  b.pending = 0;
  EXPECT_TRUE(loop.busy());
  a.pending = 0;
  EXPECT_FALSE(loop.busy());
}

TEST(ParticipantLoopTest, ClosesInReverseOrderAndKeepsTheFirstErrorInRegistrationOrder) {
  std::vector<std::string> journal;
  FakePart log("log", &journal), queues("queues", &journal), offsets("offsets", &journal);
  ParticipantLoop loop;
  loop.add(log);
  loop.add(queues);
  loop.add(offsets);
  queues.close_status = io::Status::error(io::Code::io_error, "queues failed");
  offsets.close_status = io::Status::error(io::Code::io_error, "offsets failed");
  EXPECT_FALSE(loop.close(queues).is_ok());  // closed early, as a shard closes its queues
  const io::Status s = loop.close_all();
  EXPECT_EQ(journal, (std::vector<std::string>{"close queues", "close offsets", "close log"}));
  EXPECT_EQ(s.to_string().find("queues failed") != std::string::npos, true) << s.to_string();
}

TEST(ParticipantLoopTest, RemovedPartGetsNothingMore) {
  std::vector<std::string> journal;
  FakePart a("a", &journal), b("b", &journal);
  ParticipantLoop loop;
  loop.add(a, {TagClass::log_scrub});
  loop.add(b);
  a.deadline_ms = 1;
  loop.remove(a);
  EXPECT_EQ(loop.size(), 1u);
  EXPECT_EQ(loop.owner(tag_of(TagClass::log_scrub, 0)), nullptr);
  EXPECT_EQ(loop.next_deadline_ms(), INT64_MAX);
  loop.submit_all();
  EXPECT_EQ(journal, (std::vector<std::string>{"submit b"}));
}

struct Owner {
  int completions = 0;
  int64_t deadline = 77;
  bool busy = true;
};

TEST(HookParticipantTest, AnswersThroughItsHooksAndNeutrallyWithout) {
  Owner owner;
  HookParticipant<Owner> part(
      owner, {.complete = [](Owner& o, const io::IoCompletion&) { o.completions++; },
              .next_deadline_ms = [](const Owner& o) { return o.deadline; },
              .busy = [](const Owner& o) { return o.busy; }});
  ParticipantLoop loop;
  loop.add(part, {TagClass::shard_waker});
  loop.route(io::IoCompletion{tag_of(TagClass::shard_waker, 0), 0});
  EXPECT_EQ(owner.completions, 1);
  EXPECT_EQ(loop.next_deadline_ms(), 77);
  EXPECT_TRUE(loop.busy());
  owner.busy = false;
  EXPECT_FALSE(loop.busy());
  EXPECT_EQ(loop.wake_ns(), INT64_MAX);
  EXPECT_EQ(loop.low_water(Checkpoint::running), UINT64_MAX);
  EXPECT_TRUE(loop.close_all().is_ok());
}

}  // namespace
}  // namespace uringmq::sched
