#include "figures/phase_summary.h"

#include "support/errors.h"
#include "support/number_format.h"
#include "support/table_printer.h"

#include <algorithm>
#include <cctype>
#include <iomanip>
#include <iterator>
#include <sstream>

namespace s2tp {
namespace {

constexpr const char *step_keys[phase_steps] = {"copy_wait", "barrier", "qk_softmax", "pv", "copy_issue", "schedule"};
constexpr const char *step_labels[phase_steps] = {"copy wait", "barrier", "QK+softmax", "PV", "copy issue", "schedule"};

std::string cycles_text(double cycles) { return fixed(cycles, 0); }
std::string share_text(double share) { return fixed(share * 100, 1) + "%"; }
std::string signed_cycles(double cycles) {
    const std::string text = fixed(cycles, 0);
    return (text[0] == '-' ? "" : "+") + text;
}

toml::table step_table(const PhaseStepFigures &f) {
    toml::table t{{"cycles_per_cta", f.cycles_per_cta}, {"occurrences_per_cta", f.occurrences_per_cta}, {"share", f.share}};
    if (f.cycles_per_occurrence) t.insert("cycles_per_occurrence", *f.cycles_per_occurrence);
    return t;
}

PhaseStepFigures step_figures(const toml::node_view<const toml::node> &node) {
    PhaseStepFigures f;
    f.cycles_per_cta = node["cycles_per_cta"].value_or(0.0);
    f.occurrences_per_cta = node["occurrences_per_cta"].value_or(0.0);
    f.share = node["share"].value_or(0.0);
    f.cycles_per_occurrence = node["cycles_per_occurrence"].value<double>();
    return f;
}

std::string required_name(const toml::table &entry, const char *key, const std::string &where) {
    const std::optional<std::string> name = entry[key].value<std::string>();
    if (!name || name->empty()) fail(ExitCode::usage, where + " has no " + key);
    return *name;
}

}  // namespace

const char *phase_step_key(std::size_t step) { return step_keys[step]; }
const char *phase_step_label(std::size_t step) { return step_labels[step]; }

ScheduleRecord ScheduleRecord::from_device(const s2tp_schedule_record &record, const std::string &cubin) {
    const char *end = std::find(std::begin(record.name), std::end(record.name), '\0');
    if (end == std::end(record.name))
        fail(ExitCode::precondition, cubin + ": the schedule's name in its " + S2TP_PHASE_SCHEDULE_SYMBOL +
                                         " has no terminating NUL in " + std::to_string(S2TP_SCHEDULE_NAME_BYTES) +
                                         " bytes: the kernel was built against another phase log layout");
    ScheduleRecord schedule;
    schedule.name.assign(std::begin(record.name), end);
    for (std::size_t warp = 0; warp < phase_warps; ++warp) {
        const std::uint32_t role = record.warp_role[warp];
        if (role != S2TP_WARP_ON_ITS_OWN && role != S2TP_WARP_PAIR_A && role != S2TP_WARP_PAIR_B)
            fail(ExitCode::precondition, cubin + ": its schedule " + schedule.name + " records role " +
                                             std::to_string(role) + " for warp " + std::to_string(warp) +
                                             ", which kernels/phase_log.h does not define");
        schedule.warp_roles[warp] = static_cast<s2tp_warp_role>(role);
    }
    return schedule;
}

std::vector<std::string> warp_labels(const std::array<s2tp_warp_role, phase_warps> &roles) {
    std::vector<std::string> labels;
    for (std::size_t warp = 0; warp < phase_warps; ++warp) {
        const std::string plain = "warp " + std::to_string(warp);
        switch (roles[warp]) {
        case S2TP_WARP_PAIR_A: labels.push_back("pair A " + plain); break;
        case S2TP_WARP_PAIR_B: labels.push_back("pair B " + plain); break;
        case S2TP_WARP_ON_ITS_OWN: labels.push_back(plain); break;
        }
    }
    return labels;
}

double VariantPhases::cycles_per_cta(std::size_t step) const {
    if (warps.empty()) return 0;
    double sum = 0;
    for (const WarpPhases &w : warps) sum += w.steps[step].cycles_per_cta;
    return sum / static_cast<double>(warps.size());
}

VariantPhases summarize_phase_log(const std::vector<s2tp_phase_slot> &log, const std::string &variant,
                                  const std::string &cubin, const ScheduleRecord &schedule, std::int64_t launched_ctas) {
    constexpr std::size_t per_cta = phase_warps * phase_steps;
    if (log.size() % per_cta != 0)
        fail(ExitCode::internal, "the phase log of " + cubin + " has " + std::to_string(log.size()) +
                                     " slots, not a whole number of CTAs of " + std::to_string(per_cta));
    std::array<std::array<unsigned long long, phase_steps>, phase_warps> cycles{}, counts{};
    std::int64_t logged = 0;
    for (std::size_t cta = 0; cta < log.size() / per_cta; ++cta) {
        bool any = false;
        for (std::size_t warp = 0; warp < phase_warps; ++warp)
            for (std::size_t step = 0; step < phase_steps; ++step) {
                const s2tp_phase_slot &slot = log[(cta * phase_warps + warp) * phase_steps + step];
                cycles[warp][step] += slot.cycles;
                counts[warp][step] += slot.count;
                any = any || slot.cycles != 0 || slot.count != 0;
            }
        if (any) ++logged;
    }
    if (logged == 0)
        fail(ExitCode::precondition,
             cubin + " logged no phase: its s2tp_phase_log is all zero after the launch, so the cubin was built from "
                     "sources without phase stamps (kernels/phase_log.h: they add to the log only when compiled with "
                     "-DS2TP_PHASE_TIMING); there is nothing to summarise");

    VariantPhases v;
    v.variant = variant;
    v.cubin = cubin;
    v.schedule = schedule.name;
    v.launched_ctas = launched_ctas;
    v.logged_ctas = logged;
    const std::vector<std::string> labels = warp_labels(schedule.warp_roles);
    const double ctas = static_cast<double>(logged);
    for (std::size_t warp = 0; warp < phase_warps; ++warp) {
        WarpPhases w;
        w.warp = warp;
        w.label = labels[warp];
        const double schedule_cycles = static_cast<double>(cycles[warp][S2TP_STEP_SCHEDULE]);
        for (std::size_t step = 0; step < phase_steps; ++step) {
            PhaseStepFigures &f = w.steps[step];
            const double sum = static_cast<double>(cycles[warp][step]);
            f.cycles_per_cta = sum / ctas;
            f.occurrences_per_cta = static_cast<double>(counts[warp][step]) / ctas;
            f.share = schedule_cycles > 0 ? sum / schedule_cycles : 0;
            if (counts[warp][step] > 0) f.cycles_per_occurrence = sum / static_cast<double>(counts[warp][step]);
        }
        v.warps.push_back(w);
    }
    return v;
}

double PhaseComparison::untimed_delta() const {
    double steps = 0;
    for (std::size_t step = 0; step < phase_steps; ++step)
        if (step != S2TP_STEP_SCHEDULE) steps += delta(step);
    return extra_cycles() - steps;
}

std::string PhaseComparison::extra_cycles_text() const {
    const double extra = extra_cycles();
    const double base = baseline_cycles[S2TP_STEP_SCHEDULE];
    std::string text = candidate + " vs " + baseline + ": " + signed_cycles(extra) + " cycles per CTA";
    if (base > 0) text += " (" + signed_percent(extra / base, 1) + ")";
    const std::pair<const char *, double> parts[] = {{"barrier wait", delta(S2TP_STEP_BARRIER)},
                                                     {"copy wait", delta(S2TP_STEP_COPY_WAIT)},
                                                     {"compute (QK+softmax, PV)", compute_delta()},
                                                     {"copy issue", delta(S2TP_STEP_COPY_ISSUE)},
                                                     {"untimed", untimed_delta()}};
    if (extra <= 0) {
        text += ": the candidate is not slower per CTA;";
        for (const auto &[name, cycles] : parts) text += std::string(" ") + name + " " + signed_cycles(cycles) + ",";
        text.pop_back();
        return text;
    }
    text += ", of which";
    for (const auto &[name, cycles] : parts)
        text += std::string(" ") + name + " " + signed_cycles(cycles) + " (" + fixed(cycles / extra * 100, 1) + "%),";
    text.pop_back();
    return text;
}

PhaseComparison compare_phases(const VariantPhases &baseline, const VariantPhases &candidate) {
    PhaseComparison c;
    c.baseline = baseline.variant;
    c.candidate = candidate.variant;
    for (std::size_t step = 0; step < phase_steps; ++step) {
        c.baseline_cycles[step] = baseline.cycles_per_cta(step);
        c.candidate_cycles[step] = candidate.cycles_per_cta(step);
    }
    return c;
}

std::vector<PhaseComparison> compare_with_baseline(const std::vector<VariantPhases> &variants) {
    std::vector<PhaseComparison> comparisons;
    for (std::size_t i = 1; i < variants.size(); ++i) comparisons.push_back(compare_phases(variants.front(), variants[i]));
    return comparisons;
}

toml::table PhaseReport::to_toml() const {
    toml::array variant_list;
    for (const VariantPhases &v : variants) {
        toml::array warp_list;
        for (const WarpPhases &w : v.warps) {
            toml::table entry{{"warp", static_cast<std::int64_t>(w.warp)}, {"label", w.label}};
            for (std::size_t step = 0; step < phase_steps; ++step) entry.insert(step_keys[step], step_table(w.steps[step]));
            warp_list.push_back(entry);
        }
        variant_list.push_back(toml::table{{"name", v.variant},
                                           {"cubin", v.cubin},
                                           {"schedule", v.schedule},
                                           {"launched_ctas", v.launched_ctas},
                                           {"logged_ctas", v.logged_ctas},
                                           {"warp", warp_list}});
    }
    toml::array comparison_list;
    for (const PhaseComparison &c : comparisons) {
        toml::table steps;
        for (std::size_t step = 0; step < phase_steps; ++step)
            steps.insert(step_keys[step], toml::table{{"baseline", c.baseline_cycles[step]},
                                                      {"candidate", c.candidate_cycles[step]},
                                                      {"delta", c.delta(step)}});
        comparison_list.push_back(toml::table{
            {"baseline", c.baseline},
            {"candidate", c.candidate},
            {"cycles_per_cta", steps},
            {"extra_cycles_per_cta", toml::table{{"total", c.extra_cycles()},
                                                 {"barrier_wait", c.delta(S2TP_STEP_BARRIER)},
                                                 {"copy_wait", c.delta(S2TP_STEP_COPY_WAIT)},
                                                 {"compute", c.compute_delta()},
                                                 {"copy_issue", c.delta(S2TP_STEP_COPY_ISSUE)},
                                                 {"untimed", c.untimed_delta()}}},
            {"summary", c.extra_cycles_text()}});
    }
    return toml::table{{"arch", arch},           {"device", device},         {"shape", shape},
                       {"nvcc_version", nvcc_version}, {"variant", variant_list}, {"comparison", comparison_list}};
}

PhaseReport PhaseReport::from_toml(const toml::table &table) {
    PhaseReport report;
    report.arch = table["arch"].value_or(std::string());
    report.device = table["device"].value_or(std::string());
    report.shape = table["shape"].value_or(std::string());
    report.nvcc_version = table["nvcc_version"].value_or(std::string());
    if (const toml::array *list = table["variant"].as_array())
        for (std::size_t i = 0; i < list->size(); ++i) {
            const toml::table *entry = (*list)[i].as_table();
            const std::string where = "[[variant]] " + std::to_string(i + 1);
            if (!entry) fail(ExitCode::usage, where + " is not a table");
            VariantPhases v;
            v.variant = required_name(*entry, "name", where);
            v.cubin = (*entry)["cubin"].value_or(std::string());
            v.schedule = (*entry)["schedule"].value_or(std::string());
            v.launched_ctas = (*entry)["launched_ctas"].value_or<std::int64_t>(0);
            v.logged_ctas = (*entry)["logged_ctas"].value_or<std::int64_t>(0);
            if (const toml::array *warps = (*entry)["warp"].as_array())
                for (const toml::node &node : *warps) {
                    const toml::table *warp = node.as_table();
                    const std::optional<std::int64_t> index = warp ? (*warp)["warp"].value<std::int64_t>() : std::nullopt;
                    if (!index || *index < 0 || *index >= static_cast<std::int64_t>(phase_warps))
                        fail(ExitCode::usage, where + " (" + v.variant + ") has a [[variant.warp]] without a warp index "
                                                      "in 0.." + std::to_string(phase_warps - 1));
                    WarpPhases w;
                    w.warp = static_cast<std::size_t>(*index);
                    w.label = (*warp)["label"].value_or("warp " + std::to_string(w.warp));
                    for (std::size_t step = 0; step < phase_steps; ++step)
                        w.steps[step] = step_figures((*warp)[step_keys[step]]);
                    v.warps.push_back(w);
                }
            report.variants.push_back(v);
        }
    if (const toml::array *list = table["comparison"].as_array())
        for (std::size_t i = 0; i < list->size(); ++i) {
            const toml::table *entry = (*list)[i].as_table();
            const std::string where = "[[comparison]] " + std::to_string(i + 1);
            if (!entry) fail(ExitCode::usage, where + " is not a table");
            PhaseComparison c;
            c.baseline = required_name(*entry, "baseline", where);
            c.candidate = required_name(*entry, "candidate", where);
            for (std::size_t step = 0; step < phase_steps; ++step) {
                c.baseline_cycles[step] = (*entry)["cycles_per_cta"][step_keys[step]]["baseline"].value_or(0.0);
                c.candidate_cycles[step] = (*entry)["cycles_per_cta"][step_keys[step]]["candidate"].value_or(0.0);
            }
            report.comparisons.push_back(c);
        }
    return report;
}

std::string PhaseReport::table_text() const {
    std::ostringstream out;
    for (const VariantPhases &v : variants) {
        if (&v != &variants.front()) out << "\n";
        out << v.variant << (v.schedule.empty() ? "" : " (" + v.schedule + ")") << ": " << v.logged_ctas << " of "
            << v.launched_ctas << " CTAs logged, " << v.cubin << "\n";
        out << "  cycles per CTA (share of the warp's schedule)\n";
        TextTable table{{{"WARP"}}, {}};
        for (std::size_t step = 0; step < phase_steps; ++step) {
            std::string heading = step_labels[step];
            std::transform(heading.begin(), heading.end(), heading.begin(), [](unsigned char c) { return std::toupper(c); });
            table.columns.push_back({heading});
        }
        table.columns.insert(table.columns.end(), {{"PER BARRIER"}, {"PER COPY WAIT"}});
        std::string notes;
        for (const WarpPhases &w : v.warps) {
            std::vector<std::string> row{w.label};
            for (std::size_t step = 0; step < phase_steps; ++step) {
                const PhaseStepFigures &f = w.steps[step];
                row.push_back(step == S2TP_STEP_SCHEDULE ? cycles_text(f.cycles_per_cta)
                                                         : cycles_text(f.cycles_per_cta) + " (" + share_text(f.share) + ")");
            }
            const auto per = [](const std::optional<double> &cycles) { return cycles ? cycles_text(*cycles) : std::string(missing_figure); };
            row.push_back(per(w.steps[S2TP_STEP_BARRIER].cycles_per_occurrence));
            row.push_back(per(w.steps[S2TP_STEP_COPY_WAIT].cycles_per_occurrence));
            table.rows.push_back(std::move(row));
            double steps = 0;
            for (std::size_t step = 0; step < phase_steps; ++step)
                if (step != S2TP_STEP_SCHEDULE) steps += w.steps[step].cycles_per_cta;
            // phase_log.h promises steps that do not overlap: more than the schedule means stamps that do.
            if (steps > w.steps[S2TP_STEP_SCHEDULE].cycles_per_cta)
                notes += "  note: " + w.label + "'s steps add up to " + cycles_text(steps) + " cycles, more than its " +
                         "schedule's " + cycles_text(w.steps[S2TP_STEP_SCHEDULE].cycles_per_cta) + ": its stamps overlap\n";
        }
        out << s2tp::table_text(table, TextLayout{"  "}) << notes;
    }
    for (const PhaseComparison &c : comparisons) {
        out << "\n  " << c.candidate << " against the baseline, cycles per CTA\n";
        TextTable table{{{"STEP (" + std::to_string(phase_warps) + "-warp mean)"}, {"BASELINE", Align::right},
                         {"CANDIDATE", Align::right}, {"DELTA", Align::right}, {"DELTA %", Align::right}},
                        {}};
        for (std::size_t step = 0; step < phase_steps; ++step) {
            const double base = c.baseline_cycles[step];
            table.rows.push_back({step_labels[step], cycles_text(base), cycles_text(c.candidate_cycles[step]),
                                  signed_cycles(c.delta(step)),
                                  base > 0 ? signed_percent(c.delta(step) / base, 1) : std::string(missing_figure)});
        }
        out << s2tp::table_text(table, TextLayout{"  "}) << "  " << c.extra_cycles_text() << "\n";
    }
    return out.str();
}

}  // namespace s2tp
