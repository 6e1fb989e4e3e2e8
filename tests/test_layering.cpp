// src/ is in layers, and a layer may include only the layers below it:
//   support < formats < model < gpu < pipeline < figures < tools < stages < views
// This test reads every #include "..." under src/ and fails on one that points up (or sideways into
// subcommands/), and on a project include that does not name its layer's folder.
#include "build_config.h"
#include "scratch_directory.h"
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

namespace s2tp::unit_layering {

namespace fs = std::filesystem;

namespace {

constexpr std::array<const char *, 9> layers = {"support", "formats", "model",  "gpu",  "pipeline",
                                                 "figures", "tools",   "stages", "views"};

int layer_rank(const std::string &folder) {
    auto found = std::find(layers.begin(), layers.end(), folder);
    return found == layers.end() ? -1 : static_cast<int>(found - layers.begin());
}

// Headers that live outside src/ and that any layer may include: the kernel ABI (plain C).
// The kernels' C headers, and the header meson generates with the version and data directories.
bool outside_src(const std::string &include) {
    return include == "sage2tp_abi.h" || include == "phase_log.h" || include == "host_call_abi.h" ||
           include == "build_config.h";
}

struct Violation {
    std::string file, include, why;
};

std::vector<Violation> layering_violations(const fs::path &src) {
    std::vector<Violation> found;
    const std::regex include_line(R"re(^\s*#\s*include\s*"([^"]+)")re");
    for (const auto &entry : fs::recursive_directory_iterator(src)) {
        if (!entry.is_regular_file()) continue;
        const std::string ext = entry.path().extension().string();
        if (ext != ".h" && ext != ".cpp") continue;
        const fs::path relative = fs::relative(entry.path(), src);
        const std::string own_layer = relative.begin()->string();
        const int own_rank = layer_rank(own_layer);
        const std::string name = relative.string();
        if (own_rank < 0) {
            found.push_back({name, "", "is not inside a layer folder"});
            continue;
        }
        std::ifstream in(entry.path());
        std::string line;
        std::smatch match;
        while (std::getline(in, line)) {
            if (!std::regex_search(line, match, include_line)) continue;
            const std::string include = match[1];
            if (outside_src(include)) continue;
            const auto slash = include.find('/');
            const int rank = slash == std::string::npos ? -1 : layer_rank(include.substr(0, slash));
            if (rank < 0)
                found.push_back({name, include, "does not name a layer folder"});
            else if (rank > own_rank)
                found.push_back({name, include, "points up from " + own_layer});
        }
    }
    return found;
}

}  // namespace

TEST(Layering, EveryIncludeInSrcPointsToItsOwnLayerOrBelow) {
    const fs::path src = fs::path(S2TP_SOURCE_ROOT) / "src";
    ASSERT_TRUE(fs::is_directory(src)) << src;
    for (const auto &v : layering_violations(src)) ADD_FAILURE() << v.file << ": #include \"" << v.include << "\" " << v.why;
}

// The contributor guide states the layers in one line, "Layers: support < formats < ..."; it must be this
// test's list, in this order, so that the guide cannot drift from what is enforced.
TEST(Layering, TheContributorGuideNamesTheLayersInOrder) {
    std::ifstream guide(fs::path(S2TP_SOURCE_ROOT) / "HACKING.md");
    ASSERT_TRUE(guide) << "HACKING.md is missing";
    std::string line, stated;
    while (std::getline(guide, line))
        if (line.rfind("Layers: ", 0) == 0) stated = line.substr(8);
    std::string enforced;
    for (const char *layer : layers) enforced += (enforced.empty() ? "" : " < ") + std::string(layer);
    EXPECT_EQ(stated, enforced);
}

TEST(Layering, TheCheckSeesAnUpwardInclude) {
    // The checker itself must be able to fail: a support file that includes a stage is caught.
    const s2tp::ScratchDirectory scratch("layering");
    const fs::path &root = scratch.path();
    fs::create_directories(root / "support");
    fs::create_directories(root / "stages");
    std::ofstream(root / "support" / "low.cpp") << "#include \"stages/high.h\"\n#include \"model/x.h\"\n";
    std::ofstream(root / "stages" / "high.h") << "#include \"support/low.h\"\n#include \"flat.h\"\n";
    // A room inside a layer (tools/slurm/) is of its layer: it may include its own layer, not one above.
    fs::create_directories(root / "tools" / "slurm");
    std::ofstream(root / "tools" / "slurm" / "jobs.cpp") << "#include \"tools/slurm/jobs.h\"\n#include \"stages/high.h\"\n";
    auto violations = layering_violations(root);
    ASSERT_EQ(violations.size(), 4u);
    std::sort(violations.begin(), violations.end(),
              [](const Violation &a, const Violation &b) { return std::tie(a.include, a.file) < std::tie(b.include, b.file); });
    EXPECT_EQ(violations[0].include, "flat.h");
    EXPECT_EQ(violations[1].include, "model/x.h");
    EXPECT_EQ(violations[2].include, "stages/high.h");
    EXPECT_EQ(violations[3].include, "stages/high.h");
    EXPECT_EQ(violations[2].file + violations[3].file, "support/low.cpptools/slurm/jobs.cpp");
}

TEST(Layering, AFileInALayersSubfolderIsOfThatLayer) {
    // src/stages/time/ is the stages layer: it may include stages/time/ and below, not views/.
    const s2tp::ScratchDirectory scratch("layering-subfolder");
    const fs::path &root = scratch.path();
    fs::create_directories(root / "stages" / "time");
    std::ofstream(root / "stages" / "time" / "part.cpp")
        << "#include \"stages/time/part.h\"\n#include \"support/low.h\"\n#include \"views/up.h\"\n";
    const std::vector<Violation> violations = layering_violations(root);
    ASSERT_EQ(violations.size(), 1u);
    EXPECT_EQ(violations[0].file, (fs::path("stages") / "time" / "part.cpp").string());
    EXPECT_EQ(violations[0].include, "views/up.h");
}

}  // namespace s2tp::unit_layering
