#include "model/arch_limits.h"

#include "support/did_you_mean.h"

#include "support/errors.h"
#include "formats/toml_schema.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <regex>

namespace s2tp {
namespace {

class RowReader {
public:
    RowReader(const toml::table &table, const std::string &file, const std::string &row)
        : table_(table), reader_(table, file, "[" + row + "]"), row_(row) {}

    std::int64_t integer(const std::string &key, std::int64_t min, std::int64_t max) {
        std::int64_t value = reader_.integer(key);
        if (value < min || value > max)
            fail(ExitCode::usage, at(key) + "[" + row_ + "] " + key + " = " + std::to_string(value) +
                                      " is outside [" + std::to_string(min) + ", " + std::to_string(max) + "]");
        return value;
    }

    int positive_int(const std::string &key) { return static_cast<int>(integer(key, 1, INT_MAX)); }

    // 0 when the row lacks the key.
    std::int64_t optional_integer(const std::string &key, std::int64_t min, std::int64_t max) {
        if (!table_.contains(key)) {
            reader_.accept(key);
            return 0;
        }
        return integer(key, min, max);
    }

    std::string text(const std::string &key) { return reader_.string_or(key, ""); }

    bool boolean(const std::string &key) {
        reader_.accept(key);
        const toml::node *node = table_.get(key);
        if (!node) fail(ExitCode::usage, reader_.position() + ": [" + row_ + "] is missing the required key '" + key + "'");
        if (!node->is_boolean()) fail(ExitCode::usage, at(key) + "[" + row_ + "] key '" + key + "' must be a boolean");
        return *node->value<bool>();
    }

    std::vector<std::int64_t> integers(const std::string &key) {
        std::vector<std::int64_t> values = reader_.integers_or(key, {});
        if (values.empty())
            fail(ExitCode::usage, (table_.contains(key) ? at(key) : reader_.position() + ": ") + "[" + row_ + "] key '" +
                                      key + "' must be a non-empty array of integers");
        return values;
    }

    // A relation between keys that the data must satisfy; the message points at `key`.
    void require(bool holds, const std::string &key, const std::string &what) const {
        if (!holds) fail(ExitCode::usage, at(key) + "[" + row_ + "] " + what);
    }

    void finish() const { reader_.finish(); }

private:
    std::string at(const std::string &key) const { return reader_.position(*table_.get(key)) + ": "; }

    const toml::table &table_;
    TableReader reader_;
    std::string row_;
};

}  // namespace

std::optional<double> dense_tensor_peak_tops(const ArchLimits &limits, int sm_count, double sm_clock_mhz) {
    if (limits.dense_int8_ops_per_sm_clock <= 0 || sm_count <= 0 || !(sm_clock_mhz > 0.0)) return std::nullopt;
    return static_cast<double>(limits.dense_int8_ops_per_sm_clock) * sm_count * sm_clock_mhz * 1e6 / 1e12;
}

namespace {

ArchLimits read_row(const toml::table &table, const std::string &file, const std::string &row) {
    RowReader r(table, file, row);
    ArchLimits a;
    a.row = row;
    a.feature_suffix = r.boolean("feature_suffix");
    a.target = a.feature_suffix ? row + "a" : row;
    a.gpus = r.text("gpus");
    a.aa_band_basis = r.text("aa_band_basis");
    a.dense_int8_ops_per_sm_clock = r.optional_integer("dense_int8_ops_per_sm_clock", 1, INT_MAX);

    a.threads_per_sm = r.positive_int("threads_per_sm");
    a.warps_per_sm = r.positive_int("warps_per_sm");
    a.max_blocks_per_sm = r.positive_int("max_blocks_per_sm");
    a.max_threads_per_block = r.positive_int("max_threads_per_block");
    a.registers_per_sm = r.positive_int("registers_per_sm");
    a.registers_per_block = r.positive_int("registers_per_block");
    a.registers_per_thread = r.positive_int("registers_per_thread");
    a.register_alloc_unit = r.positive_int("register_alloc_unit");
    a.sub_partitions = r.positive_int("sub_partitions");
    a.smem_per_sm = r.positive_int("smem_per_sm");
    a.smem_optin_per_block = r.positive_int("smem_optin_per_block");
    a.smem_default_per_block = r.positive_int("smem_default_per_block");
    a.smem_reserved_per_block = r.integer("smem_reserved_per_block", 0, INT_MAX);
    a.smem_alloc_unit = r.positive_int("smem_alloc_unit");
    for (std::int64_t kib : r.integers("smem_carveout_steps_kib")) a.smem_carveout_steps.push_back(kib * 1024);
    a.barrier_slots_per_block_slot = static_cast<int>(r.integer("barrier_slots_per_block_slot", 0, 64));
    r.finish();

    // The model divides by and compares these; a typo that breaks one of these relations would
    // silently produce wrong occupancies, so it is rejected here.
    r.require(a.threads_per_sm == a.warps_per_sm * kWarpSize, "threads_per_sm",
              "threads_per_sm = " + std::to_string(a.threads_per_sm) + " is not warps_per_sm x 32 = " +
                  std::to_string(a.warps_per_sm * kWarpSize));
    r.require(a.max_threads_per_block % kWarpSize == 0 && a.max_threads_per_block <= a.threads_per_sm,
              "max_threads_per_block", "max_threads_per_block must be a multiple of 32 and at most threads_per_sm");
    r.require(a.registers_per_sm % a.sub_partitions == 0, "sub_partitions",
              "registers_per_sm must divide evenly over sub_partitions");
    r.require(a.registers_per_block <= a.registers_per_sm, "registers_per_block",
              "registers_per_block exceeds registers_per_sm");
    r.require(a.smem_default_per_block <= a.smem_optin_per_block, "smem_default_per_block",
              "smem_default_per_block exceeds smem_optin_per_block");
    r.require(a.smem_optin_per_block + a.smem_reserved_per_block <= a.smem_per_sm, "smem_optin_per_block",
              "smem_optin_per_block + smem_reserved_per_block exceeds smem_per_sm");
    const auto &steps = a.smem_carveout_steps;
    r.require(std::adjacent_find(steps.begin(), steps.end(), std::greater_equal<>()) == steps.end(),
              "smem_carveout_steps_kib", "smem_carveout_steps_kib must be strictly ascending");
    r.require(steps.back() == a.smem_per_sm, "smem_carveout_steps_kib",
              "the last carveout step (" + std::to_string(steps.back()) + " bytes) must equal smem_per_sm (" +
                  std::to_string(a.smem_per_sm) + ")");
    return a;
}

int numeric_part(const std::string &row) { return std::stoi(row.substr(3)); }

std::vector<const ArchLimits *> rows_in_arch_order(const ArchLimitsTable &table) {
    std::vector<const ArchLimits *> rows;
    for (const auto &entry : table) rows.push_back(&entry.second);
    std::sort(rows.begin(), rows.end(),
              [](const ArchLimits *x, const ArchLimits *y) { return numeric_part(x->row) < numeric_part(y->row); });
    return rows;
}

}  // namespace

ArchLimitsTable load_arch_limits(const std::string &path) {
    toml::table root = parse_toml_file(path);
    TableReader top(root, path, "the arch limits table");
    static const std::regex row_name("sm_[0-9]{2,3}");
    ArchLimitsTable table;
    for (const auto &[key, node] : root) {
        std::string row(key.str());
        if (!std::regex_match(row, row_name))
            fail(ExitCode::usage, top.position(node) + ": '" + row + "' is not an architecture row name like sm_90");
        const toml::table *row_table = top.optional_table(row);
        table.emplace(row, read_row(*row_table, path, row));
    }
    if (table.empty()) fail(ExitCode::usage, path + ": no architecture rows");
    return table;
}

std::string targets_by_gpu(const ArchLimitsTable &table) {
    std::string list;
    for (const ArchLimits *limits : rows_in_arch_order(table))
        list += (list.empty() ? "" : ", ") + limits->target + (limits->gpus.empty() ? "" : " (" + limits->gpus + ")");
    return list;
}

const ArchLimits &resolve_arch(const ArchLimitsTable &table, std::string_view target) {
    for (const auto &[row, limits] : table)
        if (limits.target == target) return limits;

    const std::vector<const ArchLimits *> rows = rows_in_arch_order(table);
    std::string valid;
    std::vector<std::string> targets;
    for (const ArchLimits *limits : rows) {
        valid += (valid.empty() ? "" : ", ") + limits->target;
        targets.push_back(limits->target);
    }
    fail(ExitCode::usage,
         "unsupported arch '" + std::string(target) + "'; valid: " + valid + did_you_mean(std::string(target), targets));
}

}  // namespace s2tp
