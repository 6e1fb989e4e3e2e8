#include "pipeline/common_options.h"

#include "support/errors.h"
#include "support/number_format.h"

#include <cstdlib>

namespace s2tp {

void add_option(CommandLine &cl, const CommonOption &option) {
    using Kind = CommonOption::Kind;
    cxxopts::OptionAdder adder = cl.add_options();
    switch (option.kind) {
        case Kind::flag: adder(option.name, option.help); break;
        case Kind::integer: adder(option.name, option.help, cxxopts::value<int>(), option.value_name); break;
        case Kind::real: adder(option.name, option.help, cxxopts::value<double>(), option.value_name); break;
        case Kind::text: adder(option.name, option.help, cxxopts::value<std::string>(), option.value_name); break;
        case Kind::texts:
            adder(option.name, option.help, cxxopts::value<std::vector<std::string>>(), option.value_name);
            break;
    }
}

std::vector<std::string> forwarded_words(const CommandLine &cl, const CommonOption &option, const std::string &as_name) {
    using Kind = CommonOption::Kind;
    if (!cl.has(option.name)) return {};
    const std::string word = "--" + (as_name.empty() ? option.name : as_name);
    const cxxopts::OptionValue &value = cl.result()[option.name];
    switch (option.kind) {
        case Kind::flag: return {word};
        case Kind::integer: return {word, std::to_string(value.as<int>())};
        case Kind::real: return {word, shortest(value.as<double>())};
        case Kind::text: return {word, value.as<std::string>()};
        case Kind::texts: {
            std::vector<std::string> words;
            for (const std::string &each : value.as<std::vector<std::string>>()) words.insert(words.end(), {word, each});
            return words;
        }
    }
    return {};
}

const CommonOption device_option{"device", "GPU index within CUDA_VISIBLE_DEVICES (default: 0)",
                                 CommonOption::Kind::integer, "N"};

int device_index(const CommandLine &cl) { return cl.has("device") ? cl.result()["device"].as<int>() : 0; }

const CommonOption devices_option{"devices",
                                  "GPUs to share the checks over: indices within CUDA_VISIBLE_DEVICES, "
                                  "comma-separated, or all (default: --device's one GPU)",
                                  CommonOption::Kind::text, "LIST|all"};

DeviceList selected_devices(const CommandLine &cl) {
    if (!cl.has("devices")) return DeviceList::one(device_index(cl));
    if (cl.has("device"))
        fail(ExitCode::usage, "--device and --devices were both given: give one GPU with --device N or several "
                              "with --devices LIST|all");
    return parse_device_list(cl.result()["devices"].as<std::string>());
}

CommonOption force_option(const std::string &what) {
    return {"force", what + " even when the checkpoint is up to date", CommonOption::Kind::flag, ""};
}

CommonOption jobs_option(const std::string &what, const std::string &default_text) {
    return {"jobs", what + " at once (default: " + default_text + ")", CommonOption::Kind::integer, "N"};
}

std::optional<int> jobs_count(const CommandLine &cl) {
    if (!cl.has("jobs")) return std::nullopt;
    const int jobs = cl.result()["jobs"].as<int>();
    if (jobs < 1) fail(ExitCode::usage, "--jobs must be at least 1");
    return jobs;
}

const CommonOption nvcc_option{
    "nvcc", "the nvcc to use (default: the first in $CUDA_HOME/bin, $CUDA_PATH/bin, PATH, /usr/local/cuda/bin)",
    CommonOption::Kind::text, "PATH"};

namespace {

bool environment_is(const char *variable, const char *value) {
    const char *set = std::getenv(variable);
    return set && std::string(set) == value;
}

}  // namespace

bool sanitizer_switched_off() { return environment_is("RUN_SANITIZER", "0"); }

bool ncu_switched_on() { return environment_is("RUN_NCU", "1"); }

}  // namespace s2tp
