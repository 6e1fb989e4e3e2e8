#include "model/workload_set.h"

#include "support/data_paths.h"
#include "support/errors.h"

#include <algorithm>
#include <set>

namespace fs = std::filesystem;

namespace s2tp {

AttentionProblem read_attention_problem(TableReader &r, bool with_lse) {
    AttentionProblem p;
    AttentionShape &s = p.shape;
    s.batch = r.integer_or("batch", 1, 1, 1 << 16);
    s.heads_q = r.integer_or("heads_q", 1, 1, 1 << 16);
    s.heads_kv = r.integer_or("heads_kv", s.heads_q, 1, 1 << 16);
    s.len_q = r.integer("len_q");
    s.len_kv = r.integer_or("len_kv", s.len_q, 1, std::int64_t(1) << 31);
    s.head_dim = r.integer_or("head_dim", 128, 64, 128);
    s.layout = parse_layout(r.choice("layout", {"NHD", "HND"}, "NHD"));
    p.causal = r.boolean_or("causal", false);
    p.dtype = parse_dtype(r.choice("dtype", {"f16", "bf16"}, "bf16"));
    p.sm_scale = static_cast<float>(r.number_or("sm_scale", default_sm_scale(s.head_dim), 1e-6, 1e3));
    p.with_lse = with_lse;
    if (s.len_q < 1 || s.len_q >= (std::int64_t(1) << 31))
        fail(ExitCode::usage, r.position() + ": len_q must be at least 1 and below 2^31, got " + std::to_string(s.len_q));
    try {
        p.validate();
    } catch (const Error &e) {
        fail(ExitCode::usage, r.position() + ": " + e.what());
    }
    return p;
}

toml::table attention_problem_table(const AttentionProblem &p) {
    const AttentionShape &s = p.shape;
    return toml::table{{"batch", s.batch},     {"heads_q", s.heads_q},
                       {"heads_kv", s.heads_kv}, {"len_q", s.len_q},
                       {"len_kv", s.len_kv},   {"head_dim", s.head_dim},
                       {"layout", layout_name(s.layout)}, {"causal", p.causal},
                       {"dtype", dtype_name(p.dtype)}, {"sm_scale", static_cast<double>(p.sm_scale)}};
}

WorkloadSpec read_workload(TableReader &r, const fs::path &base_dir) {
    const std::string &file = r.file();
    WorkloadSpec w;
    w.name = r.string("name");
    w.problem = read_attention_problem(r, /*with_lse=*/false);
    w.seed = static_cast<std::uint64_t>(r.integer_or("seed", 0, 0, INT64_MAX));
    if (const toml::table *tensors = r.optional_table("tensors")) {
        TableReader t(*tensors, file, "[workload.tensors]");
        w.q_file = t.existing_file("q", base_dir.string());
        w.k_file = t.existing_file("k", base_dir.string());
        w.v_file = t.existing_file("v", base_dir.string());
        t.finish();
    }
    if (const toml::table *expected = r.optional_table("expected_sha256"))
        w.expected_sha256 = read_expected_sha256(*expected, file, "[workload.expected_sha256]");
    return w;
}

toml::table workload_table(const WorkloadSpec &w) {
    toml::table workload = attention_problem_table(w.problem);
    workload.insert("name", w.name);
    workload.insert("seed", static_cast<std::int64_t>(w.seed));
    if (w.q_file) workload.insert("tensors", toml::table{{"q", *w.q_file}, {"k", *w.k_file}, {"v", *w.v_file}});
    if (!w.expected_sha256.empty()) workload.insert("expected_sha256", expected_sha256_table(w.expected_sha256));
    return workload;
}

namespace {

// A kernel's name in [expected_sha256.KERNEL] as adapters spell theirs: lower-case letters, digits, '-'.
bool is_pin_kernel_name(const std::string &name) {
    return !name.empty() && name.size() <= 128 && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") ==
                                                       std::string::npos;
}

// `kernel` is empty at the top of the table, where bare entries pin bare_pin_kernel.
void read_arch_pins(const toml::table &table, const std::string &kernel, const std::string &file,
                    const std::string &table_name, std::vector<OutputPin> &pins) {
    for (const auto &[arch, node] : table) {
        const std::string where = file + ":" + std::to_string(node.source().begin.line) + ": " + table_name + " '" +
                                  std::string(arch.str()) + "'";
        if (node.is_table()) {
            if (!kernel.empty())
                fail(ExitCode::usage, where + ": a kernel's table holds only ARCH = \"sha256\" entries");
            if (!is_pin_kernel_name(std::string(arch.str())))
                fail(ExitCode::usage, where + ": a kernel is named as its abi is, in lower-case letters, digits and '-'");
            read_arch_pins(*node.as_table(), std::string(arch.str()), file,
                           table_name.substr(0, table_name.size() - 1) + "." + std::string(arch.str()) + "]", pins);
            continue;
        }
        const std::optional<std::string> value = node.value<std::string>();
        if (!value || value->size() != 64 || value->find_first_not_of("0123456789abcdef") != std::string::npos)
            fail(ExitCode::usage, where + " must be a SHA-256 of 64 lower-case hex digits");
        // A build target as build records it; with its '_', never a kernel's name.
        const std::string target(arch.str());
        if (target.rfind("sm_", 0) != 0 || target.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
            fail(ExitCode::usage, where + ": a pin's key is a build target such as sm_90a");
        set_pin(pins, OutputPin{PinKey{kernel.empty() ? bare_pin_kernel : kernel, std::string(arch.str())}, *value});
    }
}

}  // namespace

std::vector<OutputPin> read_expected_sha256(const toml::table &table, const std::string &file,
                                            const std::string &table_name) {
    std::vector<OutputPin> pins;
    read_arch_pins(table, "", file, table_name, pins);
    return pins;
}

toml::table expected_sha256_table(const std::vector<OutputPin> &pins) {
    toml::table expected;
    for (const OutputPin &pin : pins) {
        if (pin.key.kernel == bare_pin_kernel) {
            expected.insert_or_assign(pin.key.arch, pin.sha256);
            continue;
        }
        if (!expected.contains(pin.key.kernel)) expected.insert(pin.key.kernel, toml::table{});
        expected[pin.key.kernel].as_table()->insert_or_assign(pin.key.arch, pin.sha256);
    }
    return expected;
}

void set_pin(std::vector<OutputPin> &pins, const OutputPin &pin) {
    for (OutputPin &pinned : pins)
        if (pinned.key.kernel == pin.key.kernel && pinned.key.arch == pin.key.arch) {
            pinned.sha256 = pin.sha256;
            return;
        }
    pins.push_back(pin);
}

WorkloadSpec load_workload(const fs::path &file) {
    toml::table doc = parse_toml_file(file.string());
    TableReader top(doc, file.string(), "the workload file");
    const toml::table *table = top.optional_table("workload");
    top.finish();
    if (!table) fail(ExitCode::usage, file.string() + ":1:1: a workload file needs a [workload] table");
    TableReader r(*table, file.string(), "[workload]");
    WorkloadSpec w = read_workload(r, file.parent_path());
    r.finish();
    return w;
}

std::optional<std::string> expected_output_sha256(const WorkloadSpec &workload, const PinKey &key) {
    for (const OutputPin &pin : workload.expected_sha256)
        if (pin.key.kernel == key.kernel && pin.key.arch == key.arch) return pin.sha256;
    return std::nullopt;
}

// ---- Sets ----

std::vector<double> WorkloadSet::weights() const {
    std::vector<double> weights;
    for (const SetWorkload &w : workloads) weights.push_back(w.weight.value_or(1.0));
    return weights;
}

bool WorkloadSet::weighted() const {
    return std::any_of(workloads.begin(), workloads.end(), [](const SetWorkload &w) { return w.weight.has_value(); });
}

const SetWorkload *WorkloadSet::find(const std::string &name) const {
    for (const SetWorkload &w : workloads)
        if (w.workload.name == name) return &w;
    return nullptr;
}

namespace {

// Set and workload names become TOML keys and parts of report file names.
bool is_set_name(const std::string &name) {
    bool valid = !name.empty() && name.size() <= 64 && ((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9'));
    for (char ch : name)
        valid = valid && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_');
    return valid;
}

const char *name_rule = "a lower-case letter or digit followed by up to 63 lower-case letters, digits, '.', '_' or '-'";

std::string line_of(const std::string &file, const toml::node &node) {
    return file + ":" + std::to_string(node.source().begin.line);
}

// One [[workload]] entry: a workload file (`file`) or the workload keys inline, plus source and weight.
SetWorkload read_set_entry(const toml::table &entry, const std::string &file, const fs::path &base_dir) {
    TableReader r(entry, file, "[[workload]]");
    SetWorkload w;
    w.source = r.string("source");
    if (w.source.empty()) fail(ExitCode::usage, r.position() + ": [[workload]] key 'source' must cite the shape's public config");
    if (entry.contains("weight")) {
        w.weight = r.number_or("weight", 1.0, 0.0, 1e9);
    }
    if (entry.contains("file")) {
        const std::string workload_file = r.existing_file("file", base_dir.string());
        const std::optional<std::string> name = r.optional_string("name");
        r.finish();  // the shape is the file's: no workload key may stand beside it
        try {
            w.workload = load_workload(workload_file);
        } catch (const Error &e) {
            fail(ExitCode::usage, line_of(file, *entry.get("file")) + ": [[workload]] key 'file' names a workload that "
                                                                      "does not load: " + e.what());
        }
        if (name) w.workload.name = *name;
    } else {
        w.workload = read_workload(r, base_dir);
        r.finish();
    }
    if (!is_set_name(w.workload.name)) {
        const toml::node *at = entry.get("name");
        fail(ExitCode::usage, (at ? line_of(file, *at) : line_of(file, entry)) + ": [[workload]] key 'name': '" +
                                  w.workload.name + "' must be " + name_rule);
    }
    return w;
}

}  // namespace

WorkloadSet read_workload_set(const toml::table &table, const std::string &file, const fs::path &base_dir) {
    TableReader top(table, file, "the workload set");
    WorkloadSet set;
    const toml::table *head = top.optional_table("set");
    if (!head) fail(ExitCode::usage, file + ":1:1: a workload set needs a [set] table with its name");
    TableReader h(*head, file, "[set]");
    set.name = h.string("name");
    set.description = h.string_or("description", "");
    h.finish();
    if (!is_set_name(set.name))
        fail(ExitCode::usage, line_of(file, *head->get("name")) + ": [set] key 'name': '" + set.name + "' must be " + name_rule);
    const toml::array *entries = top.optional_array_of_tables("workload");
    top.finish();
    if (!entries || entries->empty())
        fail(ExitCode::usage, h.position() + ": the workload set '" + set.name + "' lists no [[workload]]");
    if (entries->size() > max_set_workloads)
        fail(ExitCode::usage, line_of(file, *entries) + ": the workload set '" + set.name + "' lists " +
                                  std::to_string(entries->size()) + " workloads; at most " +
                                  std::to_string(max_set_workloads));
    std::set<std::string> names;
    for (const toml::node &node : *entries) {
        SetWorkload w = read_set_entry(*node.as_table(), file, base_dir);
        if (!names.insert(w.workload.name).second) {
            const toml::node *at = node.as_table()->get("name");
            fail(ExitCode::usage, line_of(file, at ? *at : node) + ": [[workload]] key 'name': '" + w.workload.name +
                                      "' is listed twice in the set '" + set.name + "'");
        }
        set.workloads.push_back(std::move(w));
    }
    if (set.weighted()) {
        const std::vector<double> weights = set.weights();
        if (std::all_of(weights.begin(), weights.end(), [](double weight) { return weight == 0.0; })) {
            const toml::node *last = entries->back().as_table()->get("weight");
            fail(ExitCode::usage, line_of(file, last ? *last : entries->back()) +
                                      ": [[workload]] key 'weight': every weight of the set '" + set.name +
                                      "' is 0; the combined mean needs at least one positive weight");
        }
    }
    return set;
}

WorkloadSet load_workload_set(const fs::path &file) {
    const toml::table doc = parse_toml_file(file.string());
    return read_workload_set(doc, file.string(), file.parent_path());
}

toml::table workload_set_table(const WorkloadSet &set) {
    toml::array entries;
    for (const SetWorkload &w : set.workloads) {
        toml::table entry = workload_table(w.workload);
        entry.insert("source", w.source);
        if (w.weight) entry.insert("weight", *w.weight);
        entries.push_back(std::move(entry));
    }
    return toml::table{{"set", toml::table{{"name", set.name}, {"description", set.description}}}, {"workload", entries}};
}

namespace {
fs::path shipped_sets_dir() { return data_root() / "data/workloads/sets"; }
}  // namespace

std::vector<std::string> shipped_workload_sets() {
    std::vector<std::string> names;
    std::error_code ec;
    for (const fs::directory_entry &entry : fs::directory_iterator(shipped_sets_dir(), ec))
        if (entry.path().extension() == ".toml") names.push_back(entry.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

fs::path workload_set_file(const std::string &name_or_path, const fs::path &base_dir) {
    const bool is_path = name_or_path.find('/') != std::string::npos ||
                         (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".toml");
    fs::path file = is_path ? fs::path(name_or_path) : shipped_sets_dir() / (name_or_path + ".toml");
    if (file.is_relative()) file = base_dir / file;
    file = file.lexically_normal();
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) return file;
    std::string shipped;
    for (const std::string &name : shipped_workload_sets()) shipped += (shipped.empty() ? "" : ", ") + name;
    fail(ExitCode::usage, "workload set '" + name_or_path + "': " + file.string() + " does not exist (the shipped sets: " +
                              (shipped.empty() ? "none found" : shipped) + ")");
}

}  // namespace s2tp
