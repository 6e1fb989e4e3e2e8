// The compile cache (tools/compile_cache.h): what it keys on, what it refuses to hand out, and that
// fillers never see each other's half-written entries. nvcc is not needed: a compile here is an
// argument vector, a source and a dependency file, as the build stage hands them over.
#include "support/errors.h"
#include "scratch_directory.h"
#include "support/file_io.h"
#include "support/hashing.h"
#include "tools/compile_cache.h"

#include <gtest/gtest.h>

#include <sys/mount.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace fs = std::filesystem;
using namespace s2tp;

namespace s2tp::unit_compile_cache {

namespace {

// The store's layout version (a folder of the cache root).
constexpr const char *kStore = "v2";

class CompileCacheTest : public ::testing::Test {
protected:
    void SetUp() override {
        fs::create_directories(work / "trees" / "baseline");
        write("trees/baseline/k.cu", "#include \"k.h\"\n__global__ void k() {}\n");
        write("trees/baseline/k.h", "#define N 4\n");
        write("k.d", "builds/baseline/k.cubin : trees/baseline/k.cu \\\n    trees/baseline/k.h\n");
    }

    void write(const std::string &relative, const std::string &text) const { write_file_atomically(work / relative, text); }

    CacheableCompile compile(const std::string &out = "builds/baseline/k.cubin") const {
        return {{"/usr/local/cuda/bin/nvcc", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-MD", "-MF", "k.d", "-o", out,
                 "trees/baseline/k.cu"},
                work,
                "trees/baseline/k.cu",
                "release 13.0, V13.0.88",
                {5, 7}};
    }

    ScratchDirectory scratch{"cache"};
    const fs::path dir = scratch.path(), work = dir / "run";
};

std::size_t entry_count(const fs::path &root) {
    std::size_t n = 0;
    std::error_code ec;
    for (fs::directory_iterator it(root / kStore / "entries", ec), end; !ec && it != end; it.increment(ec)) ++n;
    return n;
}

fs::path only_entry(const fs::path &root) { return fs::directory_iterator(root / kStore / "entries")->path(); }

}  // namespace

TEST(DependencyFiles, ReadsNvccsRuleWithContinuationsAndEscapedSpaces) {
    EXPECT_EQ(dependency_files("k.o : k.cu \\\n    /usr/include/a.h \\\n    dir\\ with\\ space/b.h\n"),
              (std::vector<std::string>{"k.cu", "/usr/include/a.h", "dir with space/b.h"}));
    EXPECT_EQ(dependency_files("out.cubin: x.cu y.h"), (std::vector<std::string>{"x.cu", "y.h"}));
}

// A host-call compile links a library beside its cubin: both are served, and a library damaged in the
// store is caught by its digest like the cubin.
TEST_F(CompileCacheTest, AHostCallCompilesLibraryIsStoredAndCheckedBesideItsCubin) {
    CompileCache cache(dir / "cache", 1 << 20);
    std::vector<std::string> corrupt;
    cache.store(compile(), work / "k.d", {"CUBIN", "log", "LIBRARY"});
    auto hit = cache.lookup(compile(), corrupt);
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->cubin, "CUBIN");
    EXPECT_EQ(hit->library, "LIBRARY");
    write_file_atomically(only_entry(dir / "cache") / "library", "LIBRARZ");
    EXPECT_FALSE(cache.lookup(compile(), corrupt));
    ASSERT_EQ(corrupt.size(), 1u);
    EXPECT_NE(corrupt.front().find("do not match their SHA-256 digests"), std::string::npos) << corrupt.front();
}

TEST_F(CompileCacheTest, HitsOnlyWhileEveryFileTheCompileReadIsUnchanged) {
    CompileCache cache(dir / "cache", 1 << 20);
    std::vector<std::string> corrupt;
    EXPECT_FALSE(cache.lookup(compile(), corrupt));
    cache.store(compile(), work / "k.d", {"CUBIN", "ptxas info : Used 8 registers", {}});

    auto hit = cache.lookup(compile(), corrupt);
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->cubin, "CUBIN");
    EXPECT_EQ(hit->output, "ptxas info : Used 8 registers");
    // Output paths and nvcc's location are not inputs: a staging directory or another toolkit path hits.
    CacheableCompile moved = compile(".build-new/baseline/k.cubin");
    moved.argv[0] = "/opt/cuda-13.0/bin/nvcc";
    EXPECT_TRUE(cache.lookup(moved, corrupt));

    // A header the compile read changes: a miss, not damage.
    write("trees/baseline/k.h", "#define N 8\n");
    EXPECT_FALSE(cache.lookup(compile(), corrupt));
    write("trees/baseline/k.h", "#define N 4\n");
    EXPECT_TRUE(cache.lookup(compile(), corrupt));

    // The arch, a flag and nvcc's version are each in the key.
    CacheableCompile other_arch = compile();
    other_arch.argv[2] = "-gencode=arch=compute_89,code=sm_89";
    EXPECT_FALSE(cache.lookup(other_arch, corrupt));
    CacheableCompile other_compiler = compile();
    other_compiler.compiler_version = "release 12.8, V12.8.93";
    EXPECT_FALSE(cache.lookup(other_compiler, corrupt));
    // The source's own bytes.
    write("trees/baseline/k.cu", "#include \"k.h\"\n__global__ void k2() {}\n");
    EXPECT_FALSE(cache.lookup(compile(), corrupt));
    EXPECT_TRUE(corrupt.empty());
}

TEST_F(CompileCacheTest, TheSameTreeInAnotherRunDirectoryHits) {
    CompileCache cache(dir / "cache", 1 << 20);
    cache.store(compile(), work / "k.d", {"CUBIN", "log", {}});
    fs::copy(work, dir / "second-run", fs::copy_options::recursive);
    CacheableCompile second = compile();
    second.working_directory = dir / "second-run";
    std::vector<std::string> corrupt;
    EXPECT_TRUE(cache.lookup(second, corrupt));
}

TEST_F(CompileCacheTest, ACorruptOrTruncatedEntryIsReportedOnceRemovedAndStoredAgain) {
    CompileCache cache(dir / "cache", 1 << 20);
    for (const char *damage : {"flip", "truncate", "delete digests"}) {
        SCOPED_TRACE(damage);
        cache.store(compile(), work / "k.d", {std::string(4096, 'c'), "log", {}});
        const fs::path entry = only_entry(dir / "cache");
        if (std::string(damage) == "flip") {
            std::fstream f(entry / "cubin", std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(100);
            f.put('X');
        } else if (std::string(damage) == "truncate") {
            fs::resize_file(entry / "cubin", 1000);
        } else {
            fs::remove(entry / "digests");
        }
        std::vector<std::string> corrupt;
        EXPECT_FALSE(cache.lookup(compile(), corrupt));
        ASSERT_EQ(corrupt.size(), 1u);
        EXPECT_NE(corrupt[0].find(entry.string()), std::string::npos) << corrupt[0];
        // Reported once: the entry is gone, so the next look-up is a plain miss.
        EXPECT_FALSE(cache.lookup(compile(), corrupt));
        EXPECT_EQ(corrupt.size(), 1u);
        EXPECT_EQ(entry_count(dir / "cache"), 0u);
    }
    cache.store(compile(), work / "k.d", {"CUBIN", "log", {}});
    std::vector<std::string> corrupt;
    EXPECT_TRUE(cache.lookup(compile(), corrupt));
}

TEST_F(CompileCacheTest, ConcurrentFillersNeverShowAHalfWrittenEntry) {
    CompileCache cache(dir / "cache", 1ull << 30);
    const std::string cubin(4 << 20, 'q');  // large enough that a write takes many system calls
    std::atomic<bool> stop{false};
    std::atomic<int> hits{0}, wrong{0};
    std::vector<std::string> corrupt;
    std::thread reader([&] {
        std::vector<std::string> seen;
        while (!stop) {
            if (auto hit = cache.lookup(compile(), seen)) {
                ++hits;
                if (hit->cubin != cubin || hit->output != "log") ++wrong;
            }
        }
        corrupt = seen;
    });
    std::vector<std::thread> fillers;
    for (int i = 0; i < 4; ++i)
        fillers.emplace_back([&] {
            for (int round = 0; round < 5; ++round) cache.store(compile(), work / "k.d", {cubin, "log", {}});
        });
    for (auto &t : fillers) t.join();
    stop = true;
    reader.join();
    EXPECT_EQ(wrong, 0);
    EXPECT_TRUE(corrupt.empty()) << corrupt.front();
    EXPECT_EQ(entry_count(dir / "cache"), 1u);
    EXPECT_TRUE(fs::is_empty(dir / "cache" / kStore / "tmp"));
    std::vector<std::string> none;
    EXPECT_TRUE(cache.lookup(compile(), none));
}

TEST_F(CompileCacheTest, ConcurrentProcessesFillingAtOnceLeaveOneWholeEntry) {
    CompileCache cache(dir / "cache", 1ull << 30);
    const std::string cubin(2 << 20, 'p');
    std::vector<pid_t> children;
    for (int i = 0; i < 3; ++i) {
        pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            try {
                for (int round = 0; round < 5; ++round) {
                    cache.store(compile(), work / "k.d", {cubin, "log", {}});
                    std::vector<std::string> corrupt;
                    auto hit = cache.lookup(compile(), corrupt);
                    if (!corrupt.empty() || (hit && hit->cubin != cubin)) ::_exit(1);
                }
            } catch (...) {
                ::_exit(2);
            }
            ::_exit(0);
        }
        children.push_back(pid);
    }
    for (pid_t pid : children) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "filler exited " << WEXITSTATUS(status);
    }
    EXPECT_EQ(entry_count(dir / "cache"), 1u);
}

TEST_F(CompileCacheTest, TrimsTheLeastRecentlyUsedEntriesToItsSizeLimit) {
    CompileCache cache(dir / "cache", 10000);
    for (int i = 0; i < 4; ++i) {
        write("trees/baseline/k.h", "#define N " + std::to_string(i) + "\n");
        cache.store(compile(), work / "k.d", {std::string(3000, 'a' + i), "log", {}});
    }
    EXPECT_EQ(entry_count(dir / "cache"), 2u);
    std::vector<std::string> corrupt;
    EXPECT_TRUE(cache.lookup(compile(), corrupt));  // the newest stays
    write("trees/baseline/k.h", "#define N 0\n");
    EXPECT_FALSE(cache.lookup(compile(), corrupt));  // the oldest went
}

TEST_F(CompileCacheTest, AFullDiskFailsWithExitTwoAndKeepsWhatWasStored) {
    const fs::path small = dir / "small";
    fs::create_directories(small);
    if (::mount("tmpfs", small.c_str(), "tmpfs", 0, "size=64k") != 0)
        GTEST_SKIP() << "mounting a 64 KiB tmpfs needs root (CAP_SYS_ADMIN): " << std::strerror(errno);
    CompileCache cache(small / "cache", 1ull << 30);
    cache.store(compile(), work / "k.d", {"CUBIN", "log", {}});
    write("trees/baseline/k.h", "#define N 9\n");
    try {
        cache.store(compile(), work / "k.d", {std::string(256 << 10, 'z'), "log", {}});
        ADD_FAILURE() << "storing 256 KiB on a 64 KiB file system succeeded";
    } catch (const Error &e) {
        EXPECT_EQ(e.code(), ExitCode::usage);
        EXPECT_NE(std::string(e.what()).find("SAGE2TP_CACHE=off"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("No space left"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(fs::is_empty(small / "cache" / kStore / "tmp"));
    write("trees/baseline/k.h", "#define N 4\n");
    std::vector<std::string> corrupt;
    auto kept = cache.lookup(compile(), corrupt);
    EXPECT_TRUE(kept && kept->cubin == "CUBIN");
    ::umount(small.c_str());
}

// The tampering suite: a cache entry is served only for the compile whose key it records, with the bytes
// its digests and name vouch for. Each case stores the baseline's and the candidate's compiles, damages
// the store as a careless user or a hostile one would, and asks for the candidate: the baseline's cubin
// must never come back.
class CompileCacheTampering : public CompileCacheTest {
protected:
    void SetUp() override {
        CompileCacheTest::SetUp();
        fs::create_directories(work / "trees" / "candidate");
        write("trees/candidate/k.cu", "#include \"k.h\"\n__global__ void k() { /* pair */ }\n");
        write("trees/candidate/k.h", "#define N 4\n");
        write("c.d", "builds/candidate/k.cubin : trees/candidate/k.cu \\\n    trees/candidate/k.h\n");
        cache.store(compile(), work / "k.d", {"BASELINE-CUBIN", "baseline log", {}});
        baseline_entry = only_entry(dir / "cache");
        cache.store(candidate(), work / "c.d", {"CANDIDATE-CUBIN", "candidate log", {}});
        for (const auto &e : fs::directory_iterator(entries_of(dir / "cache")))
            if (e.path() != baseline_entry) candidate_entry = e.path();
        ASSERT_FALSE(candidate_entry.empty());
    }

    CacheableCompile candidate() const {
        CacheableCompile c = compile("builds/candidate/k.cubin");
        c.argv[5] = "c.d";
        c.argv.back() = "trees/candidate/k.cu";
        c.source = "trees/candidate/k.cu";
        return c;
    }

    // The candidate is looked up after the damage: never the baseline's bytes; the damage reported,
    // naming the entry; and once stored again, the candidate's own cubin.
    void expect_candidate_never_gets_the_baseline(bool damage_reported = true) {
        std::vector<std::string> corrupt;
        const auto hit = cache.lookup(candidate(), corrupt);
        EXPECT_TRUE(!hit || hit->cubin == "CANDIDATE-CUBIN") << "served " << hit->cubin;
        if (damage_reported) {
            EXPECT_FALSE(hit);
            ASSERT_FALSE(corrupt.empty());
            EXPECT_NE(corrupt[0].find(candidate_entry.filename().string()), std::string::npos) << corrupt[0];
        }
        cache.store(candidate(), work / "c.d", {"CANDIDATE-CUBIN", "candidate log", {}});
        std::vector<std::string> after;
        const auto again = cache.lookup(candidate(), after);
        ASSERT_TRUE(again);
        EXPECT_EQ(again->cubin, "CANDIDATE-CUBIN");
        EXPECT_TRUE(after.empty()) << after.front();
        // The baseline's own entry still serves the baseline.
        const auto baseline = cache.lookup(compile(), after);
        EXPECT_TRUE(!baseline || baseline->cubin == "BASELINE-CUBIN");
    }

    static fs::path entries_of(const fs::path &root) { return only_entry(root).parent_path(); }

    CompileCache cache{dir / "cache", 1 << 20};
    fs::path baseline_entry, candidate_entry;
};

TEST_F(CompileCacheTampering, SwappedEntriesAreReportedAndRebuilt) {
    const fs::path aside = dir / "aside";
    fs::rename(candidate_entry, aside);
    fs::rename(baseline_entry, candidate_entry);
    fs::rename(aside, baseline_entry);
    expect_candidate_never_gets_the_baseline();
}

TEST_F(CompileCacheTampering, ACopyOfTheBaselinesEntryIsReportedAndRebuilt) {
    fs::remove_all(candidate_entry);
    fs::copy(baseline_entry, candidate_entry, fs::copy_options::recursive);
    expect_candidate_never_gets_the_baseline();
}

TEST_F(CompileCacheTampering, AnEntryThatIsALinkIsReportedAndOnlyTheLinkRemoved) {
    fs::remove_all(candidate_entry);
    fs::create_directory_symlink(baseline_entry, candidate_entry);
    expect_candidate_never_gets_the_baseline();
    EXPECT_TRUE(fs::is_regular_file(baseline_entry / "cubin"));
}

TEST_F(CompileCacheTampering, AFileInAnEntryThatIsALinkIsReported) {
    fs::remove(candidate_entry / "cubin");
    fs::create_symlink(baseline_entry / "cubin", candidate_entry / "cubin");
    expect_candidate_never_gets_the_baseline();
    EXPECT_TRUE(fs::is_regular_file(baseline_entry / "cubin"));
}

TEST_F(CompileCacheTampering, ATruncatedEntryIsReportedAndRebuilt) {
    fs::resize_file(candidate_entry / "cubin", 3);
    expect_candidate_never_gets_the_baseline();
}

// The baseline's cubin put in the candidate's entry, with its digests file rewritten to match.
TEST_F(CompileCacheTampering, AnEntryWithRecomputedDigestsIsReportedAndRebuilt) {
    fs::copy_file(baseline_entry / "cubin", candidate_entry / "cubin", fs::copy_options::overwrite_existing);
    std::string digests = read_text_file(candidate_entry / "digests");
    const std::string candidate_digest = sha256_hex("CANDIDATE-CUBIN"), baseline_digest = sha256_hex("BASELINE-CUBIN");
    const auto at = digests.find(candidate_digest);
    ASSERT_NE(at, std::string::npos) << digests;
    digests.replace(at, candidate_digest.size(), baseline_digest);
    write("../cache-digests", digests);
    fs::copy_file(dir / "cache-digests", candidate_entry / "digests", fs::copy_options::overwrite_existing);
    expect_candidate_never_gets_the_baseline();
}

TEST_F(CompileCacheTampering, ARegularFileInPlaceOfAnEntryIsReportedAndRebuilt) {
    fs::remove_all(candidate_entry);
    write("../not-an-entry", "junk");
    fs::copy_file(dir / "not-an-entry", candidate_entry);
    expect_candidate_never_gets_the_baseline();
}

// The baseline's manifest (which files it read) copied over the candidate's: its files are all unchanged,
// so only the entry's recorded key can tell.
TEST_F(CompileCacheTampering, TheBaselinesManifestInPlaceOfTheCandidatesIsNeverServed) {
    const fs::path manifests = entries_of(dir / "cache").parent_path() / "manifests";
    std::vector<fs::path> files;
    for (const auto &e : fs::directory_iterator(manifests)) files.push_back(e.path());
    ASSERT_EQ(files.size(), 2u);
    const bool first_is_baseline = read_text_file(files[0]).find("trees/baseline") != std::string::npos;
    const fs::path baseline_manifest = first_is_baseline ? files[0] : files[1];
    const fs::path candidate_manifest = first_is_baseline ? files[1] : files[0];
    fs::copy_file(baseline_manifest, candidate_manifest, fs::copy_options::overwrite_existing);
    expect_candidate_never_gets_the_baseline(false);
}

// "-I -o -DX": -o is -I's value here, not the output; -DX must stay in the key.
TEST_F(CompileCacheTest, FlagsThatLookLikeAnOutputOptionStayInTheKey) {
    CompileCache cache(dir / "cache", 1 << 20);
    auto with_flags = [&](const std::string &define) {
        CacheableCompile c = compile();
        c.argv.insert(c.argv.begin() + 3, {"-I", "-o", define});
        c.output_arguments = {8, 10};
        return c;
    };
    cache.store(with_flags("-DX"), work / "k.d", {"CUBIN-X", "log", {}});
    std::vector<std::string> corrupt;
    const auto hit = cache.lookup(with_flags("-DY"), corrupt);
    EXPECT_FALSE(hit) << "-DY got -DX's cubin " << hit->cubin;
    EXPECT_TRUE(cache.lookup(with_flags("-DX"), corrupt));
}

// A cache directory named through a link is resolved once; a link planted inside the store is never
// written through.
TEST_F(CompileCacheTest, ALinkedCacheRootIsResolvedAndALinkInsideTheStoreIsNotFollowed) {
    fs::create_directories(dir / "real-cache");
    fs::create_directory_symlink(dir / "real-cache", dir / "linked-cache");
    {
        CompileCache cache(dir / "linked-cache", 1 << 20);
        cache.store(compile(), work / "k.d", {"CUBIN", "log", {}});
        std::vector<std::string> corrupt;
        EXPECT_TRUE(cache.lookup(compile(), corrupt));
    }
    fs::create_directories(dir / "elsewhere");
    CompileCache cache(dir / "other-cache", 1 << 20);
    cache.store(compile(), work / "k.d", {"CUBIN", "log", {}});
    const fs::path entries = only_entry(dir / "other-cache").parent_path();
    fs::remove_all(entries);
    fs::create_directory_symlink(dir / "elsewhere", entries);
    write("trees/baseline/k.h", "#define N 5\n");
    try {
        cache.store(compile(), work / "k.d", {"CUBIN5", "log", {}});
    } catch (const Error &) {
    }
    EXPECT_TRUE(fs::is_empty(dir / "elsewhere"));
}

// Entries in a directory others may write to, or someone else's, could be anyone's.
TEST_F(CompileCacheTest, ACacheDirectoryOthersMayWriteToOrThatIsAFileIsRefused) {
    fs::create_directories(dir / "shared-cache");
    fs::permissions(dir / "shared-cache", fs::perms::group_write | fs::perms::others_write, fs::perm_options::add);
    write("../file-cache", "not a directory");
    for (const char *name : {"shared-cache", "file-cache"}) {
        SCOPED_TRACE(name);
        try {
            CompileCache cache(dir / name, 1 << 20);
            ADD_FAILURE() << "accepted";
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::usage);
            EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("SAGE2TP_CACHE=off"), std::string::npos) << e.what();
        }
    }
}

TEST(CompileCacheSettings, OffOrADirectoryOrTheXdgCacheAndASizeLimit) {
    ::setenv("SAGE2TP_CACHE", "off", 1);
    EXPECT_FALSE(compile_cache_settings().root);
    EXPECT_EQ(compile_cache_settings().off_reason, "SAGE2TP_CACHE=off");
    ::setenv("SAGE2TP_CACHE", "/somewhere/cache", 1);
    EXPECT_EQ(compile_cache_settings().root, fs::path("/somewhere/cache"));
    ::unsetenv("SAGE2TP_CACHE");
    ::setenv("XDG_CACHE_HOME", "/xdg", 1);
    EXPECT_EQ(compile_cache_settings().root, fs::path("/xdg/sage2tp"));
    ::setenv("SAGE2TP_CACHE_SIZE", "500M", 1);
    EXPECT_EQ(compile_cache_settings().max_bytes, 500ull << 20);
    for (const char *bad : {"lots", "-1", "5T", "0"}) {
        ::setenv("SAGE2TP_CACHE_SIZE", bad, 1);
        try {
            compile_cache_settings();
            ADD_FAILURE() << bad << " was accepted";
        } catch (const Error &e) {
            EXPECT_EQ(e.code(), ExitCode::usage);
            EXPECT_NE(std::string(e.what()).find("SAGE2TP_CACHE_SIZE"), std::string::npos);
        }
    }
    ::unsetenv("SAGE2TP_CACHE_SIZE");
}

}  // namespace s2tp::unit_compile_cache
