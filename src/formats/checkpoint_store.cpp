#include "formats/checkpoint_store.h"

#include "formats/toml_schema.h"
#include "support/errors.h"
#include "support/file_io.h"
#include "support/hashing.h"


#include <fstream>
#include <sstream>

namespace s2tp {
namespace {

constexpr const char *integrity_key = "integrity";

toml::table to_table(const Checkpoint &c) {
    toml::table t;
    t.insert("stage", c.stage);
    t.insert("schema_version", checkpoint_schema_version);
    t.insert("status", to_string(c.status));
    t.insert("started_utc", c.started_utc);
    t.insert("finished_utc", c.finished_utc);
    t.insert("input_fingerprint", c.input_fingerprint);
    t.insert("previous_digest", c.previous_digest);
    t.insert("host", c.host);
    t.insert("artifacts", c.artifacts);
    t.insert("figures", c.figures);
    toml::array reasons;
    for (const auto &r : c.reasons) reasons.push_back(r);
    t.insert("reasons", reasons);
    return t;
}

std::string canonical_text(const toml::table &content) {
    std::ostringstream out;
    out << content;
    return out.str();
}

std::optional<StageStatus> parse_status(std::string_view text) {
    if (text == "passed") return StageStatus::passed;
    if (text == "failed") return StageStatus::failed;
    if (text == "skipped") return StageStatus::skipped;
    return std::nullopt;
}

}  // namespace

std::string to_string(StageStatus status) {
    switch (status) {
        case StageStatus::passed: return "passed";
        case StageStatus::failed: return "failed";
        case StageStatus::skipped: return "skipped";
    }
    return "failed";
}

void write_checkpoint(const std::filesystem::path &file, Checkpoint &checkpoint) {
    toml::table content = to_table(checkpoint);
    checkpoint.digest = sha256_hex(canonical_text(content));
    toml::table integrity;
    integrity.insert("digest", checkpoint.digest);
    integrity.insert("algorithm", "sha256 of this file's TOML re-serialised without [integrity]");
    content.insert(integrity_key, integrity);
    write_file_atomically(file, canonical_text(content) + "\n");
}

CheckpointRead read_checkpoint(const std::filesystem::path &file) {
    CheckpointRead result;
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return result;
    result.exists = true;

    // Whatever the file holds (a torn write, a hand edit, random bytes), it ends as a problem that
    // status shows, never as an abort of the command.
    toml::table content;
    try {
        content = parse_toml_text(read_text_file(file, max_toml_bytes), file.string());
    } catch (const Error &e) {
        result.problem = "not valid TOML (" + std::string(e.what()) + ")";
        return result;
    }
    auto recorded = content[integrity_key]["digest"].value<std::string>();
    const toml::table *integrity = content[integrity_key].as_table();
    // The [integrity] table is outside the digest, so it may hold nothing but what write_checkpoint put there.
    if (recorded && integrity && integrity->size() != 2) {
        result.problem = "digest mismatch: unexpected keys in [integrity], the file was edited";
        return result;
    }
    if (!recorded) {
        result.problem = "no [integrity] digest, probably truncated or written by hand";
        return result;
    }
    content.erase(integrity_key);
    if (sha256_hex(canonical_text(content)) != *recorded) {
        result.problem = "digest mismatch: the file was edited or truncated after it was written";
        return result;
    }

    Checkpoint c;
    auto version = content["schema_version"].value<int64_t>();
    auto status = parse_status(content["status"].value_or(std::string_view{}));
    if (!version || *version != checkpoint_schema_version || !status) {
        result.problem = "unsupported schema version or status";
        return result;
    }
    c.stage = content["stage"].value_or(std::string{});
    c.status = *status;
    c.started_utc = content["started_utc"].value_or(std::string{});
    c.finished_utc = content["finished_utc"].value_or(std::string{});
    c.input_fingerprint = content["input_fingerprint"].value_or(std::string{});
    c.previous_digest = content["previous_digest"].value_or(std::string{});
    if (auto *t = content["host"].as_table()) c.host = *t;
    if (auto *t = content["artifacts"].as_table()) c.artifacts = *t;
    if (auto *t = content["figures"].as_table()) c.figures = *t;
    if (auto *reasons = content["reasons"].as_array())
        for (const auto &r : *reasons)
            if (auto s = r.value<std::string>()) c.reasons.push_back(*s);
    c.digest = *recorded;
    result.checkpoint = std::move(c);
    return result;
}

}  // namespace s2tp
