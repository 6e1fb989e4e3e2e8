#include "figures/prepare_figures.h"

namespace s2tp {

using namespace figure_fields;

const std::vector<Field<PreparedCandidateFigures>> &PreparedCandidateFigures::fields() {
    using C = PreparedCandidateFigures;
    static const std::vector<Field<C>> table{
        required(field("source", &C::source, "embedded | git", Presence::always)),
        required(field("commit", &C::commit, "before the patch", Presence::always)),
        required(field("patch", &C::patch, "path; empty without one", Presence::always)),
        required(field("patch_sha256", &C::patch_sha256, "hex; empty without a patch", Presence::always)),
        required(field("tree_xxh3", &C::tree_xxh3, "hex, over trees/<name>", Presence::always))};
    return table;
}

const std::vector<Field<SourceOverrides>> &figure_fields_of(const SourceOverrides *) {
    using O = SourceOverrides;
    // candidate_commits is a table of plain strings, name = REV, which no other figure is.
    Field<O> commits{"candidate_commits", FieldKind::table, "REV by candidate name", {}, {}, {}, {}};
    commits.write = [key = commits.key](toml::table &t, const O &o) {
        if (o.candidate_commits.empty()) return;
        toml::table named;
        for (const auto &[name, commit] : o.candidate_commits) named.insert(name, commit);
        t.insert_or_assign(key, std::move(named));
    };
    commits.read = [key = commits.key](const toml::table &t, O &o) {
        if (const toml::table *named = t[key].as_table())
            for (const auto &[name, commit] : *named)
                o.candidate_commits[std::string(name.str())] = commit.value_or(std::string());
    };
    static const std::vector<Field<O>> table{field("repository", &O::repository, "--repository"),
                                             field("commit", &O::commit, "--commit"),
                                             field("candidate_commit", &O::candidate_commit, "--candidate-commit REV"),
                                             std::move(commits),
                                             field("candidate_patch", &O::candidate_patch, "--patch, --no-patch"),
                                             field("candidate_worktree", &O::candidate_worktree, "--candidate-worktree"),
                                             field("experiment_name", &O::experiment_name, "--name"),
                                             field("experiment_description", &O::experiment_description,
                                                   "--description")};
    return table;
}

const std::vector<Field<PrepareFigures>> &PrepareFigures::fields() {
    using P = PrepareFigures;
    static const std::vector<Field<P>> table{
        required(field("manifest", &P::manifest, "absolute path", Presence::always)),
        field("overrides", &P::overrides, "prepare's options", Presence::always),
        required(field("source", &P::source, "embedded | git", Presence::always)),
        required(field("commit", &P::commit, "the baseline tree's", Presence::always)),
        required(field("arch", &P::arch, "[build] arch", Presence::always)),
        required(field("baseline_tree_xxh3", &P::baseline_tree_xxh3, "hex", Presence::always)),
        field("support_tree_xxh3", &P::support_tree_xxh3, "hex; absent without a support tree"),
        required(named_tables("candidates", "", &P::candidates, "by name")),
        required(field("summary", &P::summary, "line", Presence::always))};
    return table;
}

toml::table PrepareFigures::to_toml() const { return write_fields(fields(), *this); }

PrepareFigures PrepareFigures::from_toml(const toml::table &figures, const std::string &checkpoint) {
    return read_fields(fields(), figures, checkpoint);
}

void print_prepare_figures(const PrepareFigures &figures, const Reporter &reporter) {
    reporter.say("  baseline  " + figures.source + " at commit " + figures.commit);
    for (const PreparedCandidateFigures &c : figures.candidates) {
        reporter.say("  " + c.name + std::string(c.name.size() < 9 ? 9 - c.name.size() : 0, ' ') + " " + c.source +
                     " at commit " + c.commit);
        reporter.say(std::string(12, ' ') + (c.patch.empty() ? "no patch" : "patch " + c.patch + " (sha256 " + c.patch_sha256 + ")"));
    }
}

}  // namespace s2tp
