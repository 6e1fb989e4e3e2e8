// The options that several commands take, and the environment's switches, each declared or read here
// once. An option is a CommonOption: a command adds it with add_option, reads it back as its kind
// says, and hands it on to another sage2tp process with forwarded_words, as it was given.
//
// Usage:
//   CommandLine cl("parity", "...", args);
//   add_option(cl, device_option);
//   add_option(cl, force_option("run"));
//   if (!cl.parse()) return 0;
//   request.device_index = device_index(cl);
//   request.force = cl.has("force");
#pragma once

#include "model/device_sharding.h"
#include "pipeline/cli.h"

#include <optional>
#include <string>
#include <vector>

namespace s2tp {

struct CommonOption {
    enum class Kind { flag, integer, real, text, texts };  // texts: repeatable
    std::string name;  // without the dashes
    std::string help;
    Kind kind = Kind::flag;
    std::string value_name;  // "" for a flag
};

void add_option(CommandLine &command_line, const CommonOption &option);

// The words that give `option` to another command as `command_line` holds it, under the name
// `as_name` (the option's own when empty): {"--device", "1"}, {"--force"}, one pair per value of a
// repeatable one, none when it was not given. A real number is written so that it reads back equal.
std::vector<std::string> forwarded_words(const CommandLine &command_line, const CommonOption &option,
                                         const std::string &as_name = "");

// --device N: the GPU index within CUDA_VISIBLE_DEVICES; device_index is 0 when it is not given.
extern const CommonOption device_option;
int device_index(const CommandLine &command_line);

// --devices LIST|all: the GPUs a stage shares its work over. selected_devices reads it, or --device
// as a list of one (GPU 0 when neither is given); Error(usage) when both are given or LIST is not a
// list of indices, none twice (parse_device_list). Which of them are visible the stage checks.
extern const CommonOption devices_option;
DeviceList selected_devices(const CommandLine &command_line);

// --force: `what` ("run", "compile") even when the checkpoint is up to date.
CommonOption force_option(const std::string &what);

// --jobs N: how many `what` ("parallel nvcc processes") at once, and where the default comes from.
// jobs_count: the value given, at least 1 (Error(usage) below), or nullopt.
CommonOption jobs_option(const std::string &what, const std::string &default_text);
std::optional<int> jobs_count(const CommandLine &command_line);

// --nvcc PATH: the nvcc a compile uses.
extern const CommonOption nvcc_option;

// The environment's switches (sage2tp(1), ENVIRONMENT), as --skip of sanitize and --ncu of time:
// RUN_SANITIZER=0 records the sanitize stage as skipped; RUN_NCU=1 also profiles time's variants.
bool sanitizer_switched_off();
bool ncu_switched_on();

}  // namespace s2tp
