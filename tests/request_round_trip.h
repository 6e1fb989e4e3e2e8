// What a command reads back from the words a stage starts it with: the request's to_argv words, after
// the program and the command's name, parsed with the request's own options (ExecRequest for exec,
// RepeatChildRequest for time-repeat). A test compares it with the request sent.
#pragma once

#include "pipeline/cli.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace s2tp {

template <typename Request>
Request read_back(const std::vector<std::string> &argv, const std::string &command) {
    EXPECT_EQ(argv.at(1), command);
    CommandLine cl(command, "", std::vector<std::string>(argv.begin() + 2, argv.end()));
    Request::add_options(cl);
    EXPECT_TRUE(cl.parse());
    return Request::from_args(cl, cl.selection().run_dir.value_or(""));
}

}  // namespace s2tp
