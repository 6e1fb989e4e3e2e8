#include "formats/checkpoint_store.h"
#include "scratch_directory.h"
#include "support/file_io.h"
#include "support/errors.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace s2tp;

namespace s2tp::unit_checkpoint_store {

namespace {

ScratchDirectory scratch(const std::string &name) { return ScratchDirectory("ckpt-" + name); }

Checkpoint sample() {
    Checkpoint c;
    c.stage = "build";
    c.status = StageStatus::failed;
    c.started_utc = "2026-11-29T10:00:00Z";
    c.finished_utc = "2026-11-29T10:01:00Z";
    c.input_fingerprint = "00112233445566778899aabbccddeeff";
    c.previous_digest = std::string(64, 'a');
    c.host = toml::table{{"hostname", "h"}};
    c.artifacts = toml::table{{"cubin", toml::table{{"path", "builds/baseline/a.cubin"}, {"sha256", std::string(64, 'b')}}}};
    c.figures = toml::table{{"registers", 255}, {"ratio", 0.987}, {"name", "x'y\"z"}};
    c.reasons = {"first reason", "second: with 'quotes'"};
    return c;
}

std::string slurp(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST(CheckpointStore, RoundTripKeepsEveryField) {
    auto dir = scratch("roundtrip");
    Checkpoint written = sample();
    write_checkpoint(dir / "02-build.toml", written);
    ASSERT_EQ(written.digest.size(), 64u);

    CheckpointRead read = read_checkpoint(dir / "02-build.toml");
    ASSERT_TRUE(read.exists);
    ASSERT_TRUE(read.checkpoint) << read.problem;
    const Checkpoint &c = *read.checkpoint;
    EXPECT_EQ(c.stage, "build");
    EXPECT_EQ(c.status, StageStatus::failed);
    EXPECT_EQ(c.input_fingerprint, written.input_fingerprint);
    EXPECT_EQ(c.previous_digest, written.previous_digest);
    EXPECT_EQ(c.digest, written.digest);
    EXPECT_EQ(c.figures["registers"].value<int64_t>(), 255);
    EXPECT_EQ(c.figures["name"].value<std::string>(), "x'y\"z");
    EXPECT_EQ(c.reasons, written.reasons);
    EXPECT_EQ(c.artifacts["cubin"]["path"].value<std::string>(), "builds/baseline/a.cubin");
}

TEST(CheckpointStore, MissingFileIsReportedAsMissing) {
    auto dir = scratch("missing");
    CheckpointRead read = read_checkpoint(dir / "nope.toml");
    EXPECT_FALSE(read.exists);
    EXPECT_FALSE(read.checkpoint);
}

TEST(CheckpointStore, TruncatedFileIsNotTrusted) {
    auto dir = scratch("truncated");
    Checkpoint c = sample();
    write_checkpoint(dir / "c.toml", c);
    std::string text = slurp(dir / "c.toml");
    for (std::size_t cut : {text.size() / 4, text.size() / 2, text.size() - 20}) {
        std::ofstream(dir / "t.toml", std::ios::binary) << text.substr(0, cut);
        CheckpointRead read = read_checkpoint(dir / "t.toml");
        EXPECT_TRUE(read.exists);
        EXPECT_FALSE(read.checkpoint) << "cut at " << cut;
        EXPECT_FALSE(read.problem.empty());
    }
}

TEST(CheckpointStore, EditedFileIsDetected) {
    auto dir = scratch("edited");
    Checkpoint c = sample();
    write_checkpoint(dir / "c.toml", c);
    std::string text = slurp(dir / "c.toml");
    auto at = text.find("status = 'failed'");
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at, 17, "status = 'passed'");
    std::ofstream(dir / "c.toml", std::ios::binary) << text;
    CheckpointRead read = read_checkpoint(dir / "c.toml");
    EXPECT_FALSE(read.checkpoint);
    EXPECT_NE(read.problem.find("digest mismatch"), std::string::npos) << read.problem;
}

TEST(CheckpointStore, AtomicWriteLeavesNoTemporaryFiles) {
    auto dir = scratch("atomic");
    write_file_atomically(dir / "f.txt", "one");
    write_file_atomically(dir / "f.txt", "two");
    EXPECT_EQ(slurp(dir / "f.txt"), "two");
    int entries = 0;
    for ([[maybe_unused]] const auto &e : fs::directory_iterator(dir.path())) ++entries;
    EXPECT_EQ(entries, 1);
}

// Inputs that made toml++ 3.3.0 abort (failed assertions in parse_key) or reach __builtin_unreachable
// (a non-ASCII character after a value), and bytes that are not UTF-8: each is a reason, not a crash.
TEST(CheckpointStore, UnparsableBytesAreNotTrustedWithTheReason) {
    auto dir = scratch("unparsable");
    const std::pair<std::string, std::string> cases[] = {
        {"[/", "internal check"},
        {"[)l)", "internal check"},
        {"\xe0\x80\x80", "invalid UTF-8 at byte offset 0"},
        {"stage = 'build'\n\xff", "invalid UTF-8 at byte offset 16"},
        {"a = 1\xc3\xa9\n", "c.toml:1:6:"},
        {"\xc2\xa1", "c.toml:1:1:"},
        {"a = \"\"\"\\\n\xc3\xa9\"\"\"\n", "no [integrity] digest"},
    };
    for (const auto &[bytes, reason] : cases) {
        std::ofstream(dir / "c.toml", std::ios::binary) << bytes;
        CheckpointRead read = read_checkpoint(dir / "c.toml");
        EXPECT_TRUE(read.exists);
        EXPECT_FALSE(read.checkpoint) << bytes;
        EXPECT_NE(read.problem.find(reason), std::string::npos) << read.problem;
        if (reason != "no [integrity] digest") {
            EXPECT_NE(read.problem.find("not valid TOML"), std::string::npos);
        }
    }
}

}  // namespace s2tp::unit_checkpoint_store
