// Goal: every file and directory a store creates has the configured mode whatever the umask
// (message bodies are not readable by other local users): a fresh store's data directory,
// shard directories, lock and abort files, CommitLog segments (after a roll), ConsumeQueue
// directories and files, checkpoints and consumer offsets (after a persist).
// Method: a real Store (UringDisk) opened under umask 022 and 000 with the default modes
// (0640 / 0750) and with other ones; the tree is walked while the store is open and after close.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/store.h"
#include "io/clock.h"
#include "tests/support/log_fixture.h"
#include "tests/support/store_options.h"
#include "tests/support/temp_dir.h"

namespace uringmq {
namespace {

// Paths under root (root included) whose permission bits differ from the expected ones.
std::vector<std::string> wrong_modes(const std::string& root, uint32_t file_mode, uint32_t dir_mode,
                                     size_t* files, size_t* dirs) {
  std::vector<std::string> wrong;
  auto check = [&](const std::filesystem::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return;
    const bool dir = S_ISDIR(st.st_mode);
    (dir ? *dirs : *files) += 1;
    const uint32_t mode = st.st_mode & 07777;
    if (mode != (dir ? dir_mode : file_mode)) {
      char text[16];
      std::snprintf(text, sizeof(text), " %04o", mode);
      wrong.push_back(p.string() + text);
    }
  };
  check(root);
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    check(entry.path());
  }
  return wrong;
}

struct ModeCase {
  mode_t umask_bits;
  uint32_t file_mode;  // 0: the default
  uint32_t dir_mode;
};

void run_case(const ModeCase& c) {
  const mode_t old_umask = ::umask(c.umask_bits);
  testing::TempDir dir;
  io::ManualClock clock;
  StoreOptions o = testing::store_test_options(dir.path() + "/store", 2);
  o.log = testing::small_log_options("");
  o.log.checkpoint_interval_ms = 1;
  o.consumer_offsets_persist_interval_ms = 1;
  o.clock = &clock;
  if (c.file_mode != 0) o.file_mode = c.file_mode;
  if (c.dir_mode != 0) o.dir_mode = c.dir_mode;
  const uint32_t file_mode = c.file_mode != 0 ? c.file_mode : 0640;
  const uint32_t dir_mode = c.dir_mode != 0 ? c.dir_mode : 0750;
  size_t files = 0;
  size_t dirs = 0;
  {
    auto store = Store::open(o);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    auto session = std::move(*(*store)->open_session());
    // 400 KiB over 128 KiB segments: rolls on both shards' logs; two topics, four queues.
    for (uint64_t seq = 0; seq < 400; seq++) {
      testing::TestMessage m = testing::make_message(1, seq, 1024);
      Message msg;
      msg.topic = seq % 2 == 0 ? "ModesA" : "ModesB";
      msg.queue_id = static_cast<int32_t>(seq % 4);
      msg.body = m.body;
      msg.properties = m.properties;
      ASSERT_EQ(session->send(msg).code, io::Code::ok);
    }
    for (int32_t q = 0; q < 4; q++) {
      ASSERT_TRUE(session->commit_offset_async("G", "ModesA", q, QueueOffset{10}, 1).is_ok());
      ASSERT_EQ(session->wait_for(1).code, io::Code::ok);
      clock.advance_ms(10);
      ASSERT_TRUE(session->flush_offsets_async("ModesA", q, 2).is_ok());
      ASSERT_EQ(session->wait_for(2).code, io::Code::ok);
    }
    std::vector<std::string> wrong = wrong_modes(o.data_dir, file_mode, dir_mode, &files, &dirs);
    EXPECT_TRUE(wrong.empty()) << "open store, umask " << c.umask_bits << ": " << wrong.size()
                               << " wrong, first " << wrong.front();
    session.reset();
    ASSERT_TRUE((*store)->close().is_ok());
  }
  files = dirs = 0;
  std::vector<std::string> wrong = wrong_modes(o.data_dir, file_mode, dir_mode, &files, &dirs);
  EXPECT_TRUE(wrong.empty()) << "closed store: " << wrong.size() << " wrong, first "
                             << wrong.front();
  // The walk saw what it should: shard dirs, commitlog, consumequeue trees, segments, ...
  size_t offsets_files = 0;
  for (const char* shard : {"/shard-0", "/shard-1"}) {
    EXPECT_TRUE(std::filesystem::exists(o.data_dir + shard + "/checkpoint")) << shard;
    EXPECT_TRUE(std::filesystem::exists(o.data_dir + shard + "/lock")) << shard;
    EXPECT_TRUE(std::filesystem::exists(o.data_dir + shard + "/commitlog/00000000000000131072"))
        << shard << ": no segment roll";
    offsets_files += std::filesystem::exists(o.data_dir + shard + "/consumer_offsets") ? 1 : 0;
  }
  EXPECT_GE(offsets_files, 1u);
  EXPECT_GE(dirs, 1u + 2 * 2 + 4);
  EXPECT_GE(files, 2u * 3 + 4);
  std::printf("file-modes: umask %03o: %zu files, %zu directories, all %04o / %04o\n",
              static_cast<unsigned>(c.umask_bits), files, dirs, file_mode, dir_mode);
  ::umask(old_umask);
}

TEST(StoreFileModesTest, DefaultModesUnderUmask022) {
  run_case({022, 0, 0});
}
TEST(StoreFileModesTest, DefaultModesUnderUmask000) {
  run_case({0, 0, 0});
}
TEST(StoreFileModesTest, ConfiguredModesUnderUmask077AndUmask000) {
  run_case({077, 0660, 0770});  // wider than the umask allows: set exactly anyway
  run_case({0, 0600, 0700});
}

TEST(StoreFileModesTest, ModesBeyondPermissionBitsAreRefused) {
  testing::TempDir dir;
  StoreOptions o = testing::store_test_options(dir.path() + "/store", 1);
  o.file_mode = 04640;  // set-user-id
  auto store = Store::open(o);
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), io::Code::invalid_argument);
}

}  // namespace
}  // namespace uringmq
