#include "gpu/output_checks.h"

#include "sage2tp_abi.h"
#include "support/errors.h"
#include "support/hashing.h"

namespace s2tp {
namespace {

// Adds up what a check kernel counts into one device counter, launched over `units` threads.
std::uint64_t run_count(const Kernel &kernel, const void *params, std::size_t params_size,
                        DeviceBuffer &counter, std::uint64_t units, const std::string &context) {
    zero(counter);
    if (units > 0) {
        const auto blocks = static_cast<unsigned>((units + S2TP_CHECK_THREADS - 1) / S2TP_CHECK_THREADS);
        kernel.launch({blocks, 1, 1}, {S2TP_CHECK_THREADS, 1, 1}, 0, params, params_size, nullptr, context);
    }
    std::uint64_t count = 0;
    download_bytes(counter, &count);  // a synchronous copy: the kernel is done, or its fault surfaces here
    return count;
}

std::string download_sha256(const DeviceBuffer &buffer) {
    std::vector<std::uint8_t> bytes(buffer.size());
    download_bytes(buffer, bytes.data());
    return sha256_hex(bytes.data(), bytes.size());
}

}  // namespace

std::int64_t count_nan_on_gpu(const CubinModule &quantize_module, const DeviceBuffer &buffer, DType dtype) {
    if (dtype != DType::f16 && dtype != DType::bf16)
        fail(ExitCode::internal, std::string("counting NaN on the GPU: ") + dtype_name(dtype) + " is not f16 or bf16");
    if (buffer.size() % 2 != 0)
        fail(ExitCode::internal, "counting NaN in " + buffer.what() + ": " + std::to_string(buffer.size()) +
                                     " bytes is not a whole number of " + dtype_name(dtype) + " elements");
    DeviceBuffer counter(sizeof(std::uint64_t), "NaN counter");
    s2tp_count_nan_params p{};
    p.data = buffer.as<const std::uint16_t>();
    p.count = buffer.size() / 2;
    p.result = counter.as<unsigned long long>();
    const Kernel kernel =
        quantize_module.function(dtype == DType::f16 ? S2TP_COUNT_NAN_ENTRY_F16 : S2TP_COUNT_NAN_ENTRY_BF16);
    return static_cast<std::int64_t>(
        run_count(kernel, &p, sizeof p, counter, (p.count + 7) / 8, "counting NaN in " + buffer.what()));
}

bool equal_on_gpu(const CubinModule &quantize_module, const DeviceBuffer &a, const DeviceBuffer &b) {
    if (a.size() != b.size()) return false;
    DeviceBuffer counter(sizeof(std::uint64_t), "byte comparison counter");
    s2tp_compare_params p{};
    p.a = a.as<const std::uint8_t>();
    p.b = b.as<const std::uint8_t>();
    p.bytes = a.size();
    p.result = counter.as<unsigned long long>();
    return run_count(quantize_module.function(S2TP_COMPARE_ENTRY), &p, sizeof p, counter, (p.bytes + 15) / 16,
                     "comparing " + a.what() + " with " + b.what()) == 0;
}

OutputChecks::OutputChecks(const CubinModule &quantize_module, DType dtype) : module_(quantize_module), dtype_(dtype) {}

std::vector<OutputDigest> OutputChecks::record(const std::vector<const DeviceBuffer *> &outputs) {
    contents_.clear();
    content_sha256_.clear();
    content_of_.clear();
    std::vector<OutputDigest> digests;
    for (const DeviceBuffer *output : outputs) {
        std::size_t content = 0;
        while (content < contents_.size() && !equal_on_gpu(module_, *output, contents_[content])) ++content;
        if (content == contents_.size()) {
            contents_.emplace_back(output->size(), "recorded copy of " + output->what());
            copy_device(contents_.back(), *output);
            content_sha256_.push_back(download_sha256(*output));
        }
        content_of_.push_back(content);
        digests.push_back({content_sha256_[content], count_nan_on_gpu(module_, *output, dtype_)});
    }
    return digests;
}

std::vector<std::string> OutputChecks::current_sha256(const std::vector<const DeviceBuffer *> &outputs) const {
    if (outputs.size() != content_of_.size())
        fail(ExitCode::internal, "output checks: " + std::to_string(outputs.size()) + " outputs checked, but " +
                                     std::to_string(content_of_.size()) + " were recorded");
    std::vector<std::string> digests;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const std::size_t content = content_of_[i];
        digests.push_back(equal_on_gpu(module_, *outputs[i], contents_[content]) ? content_sha256_[content]
                                                                                : download_sha256(*outputs[i]));
    }
    return digests;
}

bool OutputChecks::holds_recorded(std::size_t index, const DeviceBuffer &output) const {
    return equal_on_gpu(module_, output, contents_.at(content_of_.at(index)));
}

const std::string &OutputChecks::recorded_sha256(std::size_t index) const {
    return content_sha256_.at(content_of_.at(index));
}

}  // namespace s2tp
