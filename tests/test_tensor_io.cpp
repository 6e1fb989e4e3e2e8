// Tensor type, scalar conversions, .npy and .safetensors reading/writing, and rejection of every kind
// of malformed file with a message that names the file and the problem.
#include "build_config.h"
#include "scratch_directory.h"
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "support/errors.h"
#include "formats/tensor.h"
#include "formats/tensor_io.h"
#include "model/experiment_manifest.h"
#include "tools/gpu_session/gpu_session.h"

namespace fs = std::filesystem;
using namespace s2tp;

namespace s2tp::unit_tensor_io {

namespace {

float from_bits(std::uint32_t bits) {
    float value;
    std::memcpy(&value, &bits, 4);
    return value;
}

std::vector<std::uint8_t> bytes_of(const std::string &text) { return {text.begin(), text.end()}; }

// Runs `action`, expects Error(usage) whose message contains every fragment.
template <typename Action>
void expect_usage_error(Action action, std::initializer_list<std::string> fragments) {
    try {
        action();
        ADD_FAILURE() << "no error thrown; expected one mentioning '" << *fragments.begin() << "'";
    } catch (const Error &error) {
        EXPECT_EQ(error.code(), ExitCode::usage) << error.what();
        for (const std::string &fragment : fragments)
            EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos)
                << "message '" << error.what() << "' lacks '" << fragment << "'";
    }
}

// A .npy file with an arbitrary header dict and data, format version `major`.0.
std::string npy_with_header(const std::string &dict, const std::string &data, int major = 1) {
    std::string out = "\x93NUMPY";
    out += static_cast<char>(major);
    out += '\0';
    const std::size_t length = dict.size();
    out += static_cast<char>(length & 0xff);
    out += static_cast<char>((length >> 8) & 0xff);
    if (major >= 2) {
        out += static_cast<char>((length >> 16) & 0xff);
        out += static_cast<char>((length >> 24) & 0xff);
    }
    return out + dict + data;
}

Tensor parse_npy_text(const std::string &file, const TensorRequest &request = {}) {
    const auto data = bytes_of(file);
    return parse_npy(data.data(), data.size(), "test.npy", request);
}

// A safetensors file from a JSON header and a data buffer.
std::string safetensors_with_header(const std::string &json, const std::string &data) {
    std::string out;
    std::uint64_t length = json.size();
    for (int i = 0; i < 8; ++i) out += static_cast<char>((length >> (8 * i)) & 0xff);
    return out + json + data;
}

std::map<std::string, Tensor> parse_safetensors_text(const std::string &file, bool require_finite = true) {
    const auto data = bytes_of(file);
    return parse_safetensors(data.data(), data.size(), "test.safetensors", require_finite);
}

std::string float_bytes(std::initializer_list<float> values) {
    std::string out;
    for (float v : values) out.append(reinterpret_cast<const char *>(&v), 4);
    return out;
}

void write_file(const fs::path &path, const std::string &bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

fs::path golden_dir() {
    if (const char *env = std::getenv("S2TP_GOLDEN_DIR")) return env;
    return fs::path(S2TP_SOURCE_ROOT) / ".." / "shared" / "upstream-golden";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Scalar conversions

TEST(Conversions, HalfRoundTripsEveryBitPattern) {
    for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
        const float value = half_to_float(static_cast<std::uint16_t>(bits));
        if (std::isnan(value)) {
            EXPECT_TRUE(std::isnan(half_to_float(float_to_half(value)))) << bits;
            continue;
        }
        ASSERT_EQ(float_to_half(value), bits) << "half bits " << bits;
    }
}

TEST(Conversions, HalfDecodesKnownValues) {
    EXPECT_EQ(half_to_float(0x3c00), 1.0f);
    EXPECT_EQ(half_to_float(0xc000), -2.0f);
    EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
    EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(half_to_float(0x03ff), std::ldexp(1023.0f, -24));
    EXPECT_TRUE(std::isinf(half_to_float(0x7c00)));
    EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
}

TEST(Conversions, FloatToHalfRoundsToNearestEven) {
    EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);                       // tie, even down
    EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);                   // tie, even up
    EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);  // above tie
    EXPECT_EQ(float_to_half(65519.0f), 0x7bff);
    EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // tie between max and "next": rounds to infinity
    EXPECT_EQ(float_to_half(-1e9f), 0xfc00);
    EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);                // tie with zero: even
    EXPECT_EQ(float_to_half(std::ldexp(3.0f, -26)), 0x0001);                // above the tie
    EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);                // 1.5 ulp tie: even (2)
    EXPECT_EQ(float_to_half(std::ldexp(1023.5f, -24)), 0x0400);             // carries into the normals
    EXPECT_EQ(float_to_half(-0.0f), 0x8000);
    EXPECT_EQ(float_to_half(std::ldexp(1.0f, -30)), 0x0000);
    const std::uint16_t nan = float_to_half(from_bits(0xffc00001u));
    EXPECT_EQ(nan & 0x7c00, 0x7c00);
    EXPECT_NE(nan & 0x03ff, 0);
    EXPECT_EQ(nan & 0x8000, 0x8000);  // sign kept
    EXPECT_EQ(float_to_half(from_bits(0x7f800001u)) & 0x7e00, 0x7e00);  // signalling NaN becomes quiet, not inf
}

TEST(Conversions, Bf16RoundsToNearestEvenAndKeepsNaN) {
    for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
        const float value = bf16_to_float(static_cast<std::uint16_t>(bits));
        if (std::isnan(value)) continue;
        ASSERT_EQ(float_to_bf16(value), bits);
    }
    EXPECT_EQ(float_to_bf16(from_bits(0x3f808000u)), 0x3f80);  // tie, even down
    EXPECT_EQ(float_to_bf16(from_bits(0x3f818000u)), 0x3f82);  // tie, even up
    EXPECT_EQ(float_to_bf16(from_bits(0x3f808001u)), 0x3f81);
    EXPECT_EQ(float_to_bf16(from_bits(0x7f7fffffu)), 0x7f80);  // overflow to infinity
    EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(from_bits(0x7f800001u)))));
    EXPECT_EQ(float_to_bf16(from_bits(0xff800001u)) & 0x8000, 0x8000);
}

TEST(Conversions, E4m3DecodesKnownValues) {
    EXPECT_EQ(e4m3_to_float(0x7e), 448.0f);
    EXPECT_EQ(e4m3_to_float(0xfe), -448.0f);
    EXPECT_EQ(e4m3_to_float(0x38), 1.0f);
    EXPECT_EQ(e4m3_to_float(0x08), std::ldexp(1.0f, -6));
    EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));
    EXPECT_EQ(e4m3_to_float(0x07), std::ldexp(7.0f, -9));
    EXPECT_EQ(e4m3_to_float(0x00), 0.0f);
    EXPECT_TRUE(std::isnan(e4m3_to_float(0x7f)));
    EXPECT_TRUE(std::isnan(e4m3_to_float(0xff)));
    EXPECT_EQ(e4m3_to_float(0x78), 256.0f);  // exponent 15 is a normal binade in e4m3 (no infinities)
}

TEST(Conversions, FloatToE4m3RoundsToNearestEvenAndSaturates) {
    for (int code = 0; code < 256; ++code) {
        if ((code & 0x7f) == 0x7f) continue;
        ASSERT_EQ(float_to_e4m3(e4m3_to_float(static_cast<std::uint8_t>(code))), code) << code;
    }
    // Against brute force: the nearest finite code, ties to the even code.
    std::vector<float> grid;
    for (int code = 0; code <= 0x7e; ++code) grid.push_back(e4m3_to_float(static_cast<std::uint8_t>(code)));
    std::uint32_t state = 12345;
    for (int trial = 0; trial < 20000; ++trial) {
        state = state * 1664525u + 1013904223u;
        const float value = std::ldexp(static_cast<float>(state >> 8) / 16777216.0f, static_cast<int>(state % 20) - 11);
        int best = 0;
        for (int code = 1; code <= 0x7e; ++code) {
            const float d_best = std::fabs(value - grid[best]), d_code = std::fabs(value - grid[code]);
            if (d_code < d_best || (d_code == d_best && code % 2 == 0)) best = code;
        }
        if (value >= 448.0f) best = 0x7e;
        ASSERT_EQ(float_to_e4m3(value), best) << value;
        ASSERT_EQ(float_to_e4m3(-value), best | 0x80) << -value;
    }
    EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);        // tie with zero
    EXPECT_EQ(float_to_e4m3(std::ldexp(3.0f, -10)), 0x02);        // 1.5 steps: even
    EXPECT_EQ(float_to_e4m3(464.0f), 0x7e);
    EXPECT_EQ(float_to_e4m3(1e30f), 0x7e);
    EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::infinity()), 0x7e);
    EXPECT_EQ(float_to_e4m3(-std::numeric_limits<float>::infinity()), 0xfe);
    EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::quiet_NaN()), 0x7f);
}

// ---------------------------------------------------------------------------------------------
// Tensor

TEST(TensorType, SizesNamesAndViews) {
    Tensor t(DType::bf16, {2, 3});
    EXPECT_EQ(t.numel(), 6);
    EXPECT_EQ(t.nbytes(), 12u);
    t.data<std::uint16_t>()[5] = float_to_bf16(-3.5f);
    EXPECT_EQ(t.value_at(5), -3.5);
    EXPECT_EQ(t.value_at(0), 0.0);
    EXPECT_THROW(t.data<float>(), Error);
    EXPECT_THROW(t.value_at(6), Error);
    EXPECT_EQ(parse_dtype("e4m3"), DType::e4m3);
    expect_usage_error([] { parse_dtype("float8"); }, {"float8"});
    EXPECT_EQ(shape_to_string({1, 64, 2}), "[1, 64, 2]");
    EXPECT_EQ(unravel_index(23, {2, 3, 4}), (Shape{1, 2, 3}));
    expect_usage_error([] { shape_numel({1 << 30, 1 << 30, 1 << 30}); }, {"too many elements"});
}

TEST(TensorType, AttentionShapeGeometry) {
    AttentionShape s;
    s.batch = 2, s.heads_q = 4, s.heads_kv = 2, s.len_q = 5, s.len_kv = 7, s.head_dim = 3;
    s.layout = Layout::nhd;
    EXPECT_EQ(s.q_shape(), (Shape{2, 5, 4, 3}));
    EXPECT_EQ(s.kv_shape(), (Shape{2, 7, 2, 3}));
    EXPECT_EQ(s.offset(true, 1, 1, 6, 2), ((1 * 7 + 6) * 2 + 1) * 3 + 2);
    s.layout = Layout::hnd;
    EXPECT_EQ(s.q_shape(), (Shape{2, 4, 5, 3}));
    EXPECT_EQ(s.offset(false, 1, 3, 4, 2), ((1 * 4 + 3) * 5 + 4) * 3 + 2);
    s.validate("test");
    s.heads_kv = 3;
    expect_usage_error([&] { s.validate("case x"); }, {"case x", "multiple"});
    s.heads_kv = 2;
    s.len_q = 0;
    expect_usage_error([&] { s.validate("case y"); }, {"case y", "positive"});
    EXPECT_EQ(parse_layout("HND"), Layout::hnd);
    expect_usage_error([] { parse_layout("NDH"); }, {"NDH"});
}

// Extents up to 2^63 - 1 are refused with a message, never wrapped below the limit (2^62 x 40 heads
// was SIGFPE), and "fewer than 2^31 elements" means fewer.
TEST(AttentionShape, SizesThatOverflowOrReach2To31ElementsAreRefused) {
    AttentionShape s;
    s.head_dim = 128;
    s.len_q = s.len_kv = std::int64_t(1) << 62;
    s.heads_q = s.heads_kv = 40;
    expect_usage_error([&] { s.validate("huge"); }, {"huge", "len_q", "fewer than 2^31"});
    s.len_q = s.len_kv = INT64_MAX;
    s.heads_q = s.heads_kv = 1;
    expect_usage_error([&] { s.validate("max"); }, {"max", "fewer than 2^31"});
    s.len_q = 64;
    expect_usage_error([&] { s.validate("kv"); }, {"kv", "len_kv", "fewer than 2^31"});
    // Exactly 2^31 elements: 2^24 tokens x 128; one token fewer is accepted.
    s.len_q = s.len_kv = std::int64_t(1) << 24;
    expect_usage_error([&] { s.validate("exact"); }, {"exact", "2147483648 elements"});
    s.len_q = s.len_kv = (std::int64_t(1) << 24) - 64;
    s.validate("below");
    s.batch = std::int64_t(1) << 40;
    s.heads_q = s.heads_kv = std::int64_t(1) << 30;
    expect_usage_error([&] { s.validate("wide"); }, {"wide", "more than 2^63"});
}

// ---------------------------------------------------------------------------------------------
// .npy

TEST(Npy, RoundTripsEveryDtypeAndRank) {
    const ScratchDirectory dir("tensor-io");
    const std::vector<std::pair<DType, Shape>> cases = {
        {DType::f16, {2, 3, 4}}, {DType::bf16, {5}},     {DType::f32, {}},  {DType::f64, {1, 1}},
        {DType::i8, {3, 0, 2}},  {DType::e4m3, {7, 9}},  {DType::i32, {4}}, {DType::u16, {2, 2, 2, 2, 2}},
    };
    for (const auto &[dtype, shape] : cases) {
        Tensor t(dtype, shape);
        for (std::size_t i = 0; i < t.bytes.size(); ++i) t.bytes[i] = static_cast<std::uint8_t>(i * 37 + 11);
        if (dtype_is_floating(dtype)) {  // keep float payloads finite for the default finiteness check
            for (std::int64_t i = 0; i < t.numel(); ++i)
                if (!std::isfinite(t.value_at(i))) std::memset(&t.bytes[i * t.element_size()], 0, t.element_size());
        }
        const fs::path path = dir / (std::string(dtype_name(dtype)) + ".npy");
        save_npy(path, t);
        const std::string encoded = encode_npy(t);
        EXPECT_EQ((10 + (static_cast<unsigned char>(encoded[8]) | static_cast<unsigned char>(encoded[9]) << 8)) % 64, 0u);
        TensorRequest request;
        request.dtype = dtype;
        request.shape = shape;
        const Tensor back = load_tensor(path, request);
        EXPECT_EQ(back.dtype, dtype);
        EXPECT_EQ(back.shape, shape);
        EXPECT_EQ(back.bytes, t.bytes) << dtype_name(dtype);
    }
}

TEST(Npy, Bf16IsWrittenAsU16AndOnlyReadAsBf16WhenAsked) {
    Tensor t(DType::bf16, {2});
    t.data<std::uint16_t>()[0] = float_to_bf16(1.5f);
    const std::string encoded = encode_npy(t);
    EXPECT_NE(encoded.find("'descr': '<u2'"), std::string::npos);
    EXPECT_NE(encoded.find("'shape': (2,)"), std::string::npos);
    EXPECT_EQ(parse_npy_text(encoded).dtype, DType::u16);
    TensorRequest want_bf16;
    want_bf16.dtype = DType::bf16;
    const Tensor back = parse_npy_text(encoded, want_bf16);
    EXPECT_EQ(back.dtype, DType::bf16);
    EXPECT_EQ(back.value_at(0), 1.5);
    TensorRequest want_f16;
    want_f16.dtype = DType::f16;
    expect_usage_error([&] { parse_npy_text(encoded, want_f16); }, {"test.npy", "dtype is u16, expected f16"});
}

TEST(Npy, ReadsVersions2And3AndLooseWhitespace) {
    const std::string data = float_bytes({1.0f, 2.0f});
    for (int major : {2, 3}) {
        const Tensor t = parse_npy_text(npy_with_header("{'descr':'<f4','fortran_order':False,'shape':(2,)}\n", data, major));
        EXPECT_EQ(t.shape, (Shape{2}));
        EXPECT_EQ(t.value_at(1), 2.0);
    }
    const Tensor t = parse_npy_text(npy_with_header("{ \"shape\" : ( 1 , 2 , ) , \"fortran_order\": False, \"descr\": \"<f4\" }   \n", data));
    EXPECT_EQ(t.shape, (Shape{1, 2}));
}

TEST(Npy, WildcardExtentsInRequests) {
    const std::string file = npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }\n", float_bytes({1, 2}));
    TensorRequest request;
    request.shape = Shape{-1, 2};
    EXPECT_EQ(parse_npy_text(file, request).numel(), 2);
    request.shape = Shape{-1, 3};
    expect_usage_error([&] { parse_npy_text(file, request); }, {"test.npy", "shape is [1, 2], expected [-1, 3]"});
    request.shape = Shape{2};
    expect_usage_error([&] { parse_npy_text(file, request); }, {"shape is [1, 2], expected [2]"});
}

TEST(Npy, RejectsMalformedFiles) {
    const std::string good_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
    const std::string data = float_bytes({1.0f, 2.0f});
    const std::string good = npy_with_header(good_dict, data);
    ASSERT_EQ(parse_npy_text(good).numel(), 2);

    expect_usage_error([&] { parse_npy_text(good.substr(0, 7)); }, {"test.npy", "too short", "byte offset 0"});
    expect_usage_error([&] { parse_npy_text("\x93NUMPX" + good.substr(6)); }, {"test.npy", "bad magic"});
    expect_usage_error([&] { parse_npy_text(good.substr(0, 6) + "\x04" + good.substr(7)); },
                       {"unsupported .npy format version 4.0", "byte offset 6"});
    // Header length past the end of the file (truncated inside the header).
    expect_usage_error([&] { parse_npy_text(good.substr(0, 30)); }, {"test.npy", "runs past the end", "byte offset 8"});
    std::string huge_length = good;
    huge_length[8] = '\xff', huge_length[9] = '\xff';
    expect_usage_error([&] { parse_npy_text(huge_length); }, {"header length 65535 runs past the end"});
    expect_usage_error([&] { parse_npy_text(npy_with_header(good_dict, data, 2).substr(0, 11)); }, {"too short"});
    std::string v2_huge = npy_with_header(good_dict, data, 2);
    v2_huge[11] = '\x7f';
    expect_usage_error([&] { parse_npy_text(v2_huge); }, {"exceeds the limit"});

    expect_usage_error([&] { parse_npy_text(npy_with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", data)); },
                       {"test.npy", "unsupported descr '>f4'", "byte offset 10"});
    expect_usage_error([&] { parse_npy_text(npy_with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n", data)); },
                       {"unsupported descr '<c8'"});
    expect_usage_error([&] { parse_npy_text(npy_with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }\n", data)); },
                       {"test.npy", "fortran_order is True"});
    expect_usage_error([&] { parse_npy_text(npy_with_header(good_dict, data.substr(0, 7))); },
                       {"test.npy", "data is 7 bytes but shape [2] of '<f4' needs 8", "byte offset 68"});
    expect_usage_error([&] { parse_npy_text(npy_with_header(good_dict, data + "x")); }, {"data is 9 bytes"});
    expect_usage_error([&] { parse_npy_text(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", data)); },
                       {"data is 8 bytes but shape [4294967296, 4294967296, 4294967296] of '<f4' needs more than 2^62"});

    // Header syntax.
    const std::vector<std::pair<std::string, std::string>> syntax = {
        {"{'descr': '<f4', 'fortran_order': False}", "no 'shape'"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "duplicate key 'descr'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", "without ','"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "non-negative integer"},
        {"{'descr': '<f4', 'fortran_order': false, 'shape': (2,)}", "True or False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", "unexpected header key 'extra'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", "unexpected text after"},
        {"{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}", "expected ':'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "too large"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,)}", "more than 16"},
        {"['descr', '<f4']", "expected '{'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "expected ',' or '}'"},
    };
    for (const auto &[dict, problem] : syntax)
        expect_usage_error([&] { parse_npy_text(npy_with_header(dict, data)); }, {"test.npy", "malformed .npy header", problem});
}

TEST(Npy, ReportsNaNAndInfWithTheirIndex) {
    const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n";
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    const std::string file = npy_with_header(dict, float_bytes({0, 1, 2, 3, nan, inf}));
    expect_usage_error([&] { parse_npy_text(file); }, {"test.npy", "NaN at flat index 4, index [1, 1]"});
    const std::string with_inf = npy_with_header(dict, float_bytes({0, inf, 2, 3, nan, 5}));
    expect_usage_error([&] { parse_npy_text(with_inf); }, {"infinite value at flat index 1, index [0, 1]"});
    TensorRequest lenient;
    lenient.require_finite = false;
    EXPECT_TRUE(std::isnan(parse_npy_text(file, lenient).value_at(4)));
    // f16 NaN bit pattern
    const std::string half_data("\x00\x3c\x01\x7e", 4);
    expect_usage_error([&] { parse_npy_text(npy_with_header("{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", half_data)); },
                       {"NaN at flat index 1, index [1]"});
    // Integer dtypes are never checked.
    EXPECT_EQ(parse_npy_text(npy_with_header("{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", half_data)).numel(), 2);
}

TEST(Npy, FileErrorsNameThePath) {
    const ScratchDirectory dir("tensor-io");
    expect_usage_error([&] { read_npy(dir / "missing.npy"); }, {"missing.npy", "not a readable regular file"});
    write_file(dir / "bad.npy", "\x93NUMPX\x01\x00");
    expect_usage_error([&] { load_tensor(dir / "bad.npy"); }, {"bad.npy", "too short"});
    write_file(dir / "t.txt", "hello");
    expect_usage_error([&] { load_tensor(dir / "t.txt"); }, {"t.txt", "unsupported tensor file extension"});
    expect_usage_error([&] { save_npy(dir / "no" / "such" / "dir.npy", Tensor(DType::f32, {1})); }, {"dir.npy", "cannot open"});
}

// Every truncation and every single-byte corruption of a valid file must end in a clean result or an
// Error, never a crash or an out-of-bounds read (run under the sanitizers to see the latter).
TEST(Npy, SurvivesTruncationsAndByteCorruptions) {
    Tensor t(DType::f16, {2, 3});
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data<std::uint16_t>()[i] = float_to_half(static_cast<float>(i));
    const std::string good = encode_npy(t);
    int errors = 0;
    for (std::size_t length = 0; length < good.size(); ++length) {
        try {
            parse_npy_text(good.substr(0, length));
        } catch (const Error &error) {
            ++errors;
            EXPECT_EQ(error.code(), ExitCode::usage);
        }
    }
    EXPECT_EQ(errors, static_cast<int>(good.size()));  // every proper prefix is invalid
    for (std::size_t position = 0; position < good.size(); ++position)
        for (int value : {0x00, 0x20, 0x27, 0x29, 0x2c, 0x39, 0x7b, 0x7e, 0xff}) {
            std::string corrupt = good;
            corrupt[position] = static_cast<char>(value);
            try {
                parse_npy_text(corrupt);
            } catch (const Error &error) {
                EXPECT_EQ(error.code(), ExitCode::usage);
            }
        }
}

TEST(Npy, ReadsGoldenFiles) {
    const fs::path dir = golden_dir() / "partial65_hnd_bf16";
    if (!fs::exists(dir)) GTEST_SKIP() << "golden data not found at " << dir;
    TensorRequest request;
    request.dtype = DType::bf16;
    request.shape = Shape{1, 2, 65, 128};
    const Tensor q = load_tensor(dir / "q.npy", request);
    EXPECT_EQ(q.dtype, DType::bf16);
    request.dtype = DType::e4m3;
    request.shape = Shape{1, 2, 128, 128};
    request.require_finite = false;
    EXPECT_EQ(load_tensor(dir / "v_fp8.npy", request).numel(), 1 * 2 * 128 * 128);
    request.dtype = DType::f32;
    request.shape = Shape{1, 2, 8};
    expect_usage_error([&] { load_tensor(dir / "q_scale.npy", request); }, {"q_scale.npy", "shape is [1, 2, 4]"});
}

// ---------------------------------------------------------------------------------------------
// .safetensors

namespace {

const std::string kGoodJson =
    R"({"__metadata__":{"format":"pt","note":"caf\u00e9 \ud83d\ude00"},)"
    R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]},)"
    R"("a":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]},)"
    R"("c":{"dtype":"F8_E4M3","shape":[],"data_offsets":[12,13]}}  )";

std::string good_safetensors() {
    std::string data = float_bytes({1.5f, -2.0f});
    const std::uint16_t b0 = float_to_bf16(3.0f), b1 = float_to_bf16(0.25f);
    data.append(reinterpret_cast<const char *>(&b0), 2);
    data.append(reinterpret_cast<const char *>(&b1), 2);
    data += '\x38';  // e4m3 1.0
    return safetensors_with_header(kGoodJson, data);
}

}  // namespace

TEST(Safetensors, ReadsAllTensorsAndNamedOnes) {
    const auto tensors = parse_safetensors_text(good_safetensors());
    ASSERT_EQ(tensors.size(), 3u);
    EXPECT_EQ(tensors.at("a").shape, (Shape{1, 2}));
    EXPECT_EQ(tensors.at("a").value_at(1), -2.0);
    EXPECT_EQ(tensors.at("b").dtype, DType::bf16);
    EXPECT_EQ(tensors.at("b").value_at(0), 3.0);
    EXPECT_EQ(tensors.at("c").dtype, DType::e4m3);
    EXPECT_EQ(tensors.at("c").shape, Shape{});
    EXPECT_EQ(tensors.at("c").value_at(0), 1.0);

    const ScratchDirectory dir("tensor-io");
    write_file(dir / "w.safetensors", good_safetensors());
    TensorRequest request;
    request.dtype = DType::bf16;
    request.shape = Shape{2};
    EXPECT_EQ(load_tensor(dir / "w.safetensors", request, "b").value_at(1), 0.25);
    request.shape = Shape{3};
    expect_usage_error([&] { load_tensor(dir / "w.safetensors", request, "b"); }, {"w.safetensors", "\"b\"", "shape is [2], expected [3]"});
    expect_usage_error([&] { load_tensor(dir / "w.safetensors", {}, "zz"); }, {"w.safetensors", "no tensor named \"zz\""});
    expect_usage_error([&] { load_tensor(dir / "w.safetensors"); }, {"holds 3 tensors"});
    EXPECT_EQ(read_safetensors(dir / "w.safetensors").size(), 3u);
}

TEST(Safetensors, U16IsAcceptedAsBf16WhenAsked) {
    const std::uint16_t bits = float_to_bf16(-1.25f);
    const std::string file = safetensors_with_header(R"({"x":{"dtype":"U16","shape":[1],"data_offsets":[0,2]}})",
                                                     std::string(reinterpret_cast<const char *>(&bits), 2));
    const ScratchDirectory dir("tensor-io");
    write_file(dir / "x.safetensors", file);
    TensorRequest request;
    request.dtype = DType::bf16;
    EXPECT_EQ(load_tensor(dir / "x.safetensors", request).value_at(0), -1.25);
    EXPECT_EQ(read_safetensors(dir / "x.safetensors").at("x").dtype, DType::u16);
}

TEST(Safetensors, RejectsMalformedFiles) {
    const std::string data8 = float_bytes({1.0f, 2.0f});
    auto one = [&](const std::string &entry, const std::string &data) {
        return safetensors_with_header("{" + entry + "}", data);
    };
    expect_usage_error([&] { parse_safetensors_text("\x05\x00\x00"); }, {"test.safetensors", "too short", "byte offset 0"});
    expect_usage_error([&] { parse_safetensors_text(std::string("\xff\x00\x00\x00\x00\x00\x00\x00{}", 10)); },
                       {"header length 255 runs past the end", "byte offset 0"});
    expect_usage_error([&] { parse_safetensors_text(std::string("\xff\xff\xff\xff\xff\xff\xff\xff{}", 10)); }, {"exceeds the limit"});
    expect_usage_error([&] { parse_safetensors_text(safetensors_with_header("[1]", "")); }, {"does not start with '{'", "byte offset 8"});

    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)", "expected '\"'"},  // trailing comma
        {R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}, "a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})",
         "duplicate key \"a\""},
        {R"("a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]})", "unsupported dtype \"C64\""},
        {R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]})", "run past the 8-byte data buffer"},
        {R"("a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]})", "needs 12 bytes but data_offsets span 8"},
        {R"("a":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,8]})", "needs more than 2^62 bytes"},
        {R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]})", "needs 4 bytes but data_offsets span 8"},
        {R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})",
         "overlaps"},
        {R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]})", "unused bytes before tensor \"a\""},
        {R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})", "4 bytes after the last tensor"},
        {R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]})", "0 <= begin <= end"},
        {R"("a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]})", "non-negative integers"},
        {R"("a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})", "non-integer number"},
        {R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,99999999999999999999]})", "integer out of range"},
        {R"("a":{"dtype":"F32","shape":[2]})", "needs dtype, shape and data_offsets"},
        {R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1})", "unexpected key \"x\""},
        {R"("a":[1,2])", "entry is not an object"},
        {R"("__metadata__":{"k":1},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", "__metadata__ value of \"k\""},
        {R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}} )", "unexpected text after"},
        {R"("a\q":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", "invalid escape"},
        {R"("\ud800":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", "high surrogate"},
        {R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,08]})", "leading zero"},
        {R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],})", "expected '\"'"},
        {R"("a":{"dtype":tru,"shape":[2],"data_offsets":[0,8]})", "expected a JSON value"},
    };
    for (const auto &[entry, problem] : cases)
        expect_usage_error([&] { parse_safetensors_text(one(entry, data8)); }, {"test.safetensors", problem, "byte offset"});

    std::string deep(40, '[');
    expect_usage_error([&] { parse_safetensors_text(safetensors_with_header("{\"a\":" + deep, "")); }, {"nesting deeper than 32"});
    expect_usage_error([&] { parse_safetensors_text(safetensors_with_header("{\"a\":\"x", "")); }, {"unterminated string"});
    std::string control = "{\"a\x01\":1}";
    expect_usage_error([&] { parse_safetensors_text(safetensors_with_header(control, "")); }, {"control character"});
}

TEST(Safetensors, ReportsNaNWithTensorNameAndIndex) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::string file =
        safetensors_with_header(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})", float_bytes({0, 1, nan, 3}));
    expect_usage_error([&] { parse_safetensors_text(file); }, {"test.safetensors tensor \"w\"", "NaN at flat index 2, index [1, 0]"});
    EXPECT_TRUE(std::isnan(parse_safetensors_text(file, false).at("w").value_at(2)));
}

TEST(Safetensors, SurvivesTruncationsAndByteCorruptions) {
    const std::string good = good_safetensors();
    for (std::size_t length = 0; length < good.size(); ++length)
        EXPECT_THROW(parse_safetensors_text(good.substr(0, length)), Error) << length;
    for (std::size_t position = 0; position < good.size(); ++position)
        for (int value : {0x00, 0x01, 0x22, 0x2c, 0x30, 0x39, 0x5b, 0x5c, 0x5d, 0x7b, 0x7d, 0x80, 0xff}) {
            std::string corrupt = good;
            corrupt[position] = static_cast<char>(value);
            try {
                parse_safetensors_text(corrupt);
            } catch (const Error &error) {
                EXPECT_EQ(error.code(), ExitCode::usage);
            }
        }
}

// A workload's q, k and v in one .safetensors file of U16 tensors: the GPU stages picked the tensor out
// of read_safetensors' map and compared dtypes exactly, so "dtype is u16, expected bf16" refused what
// tensor_io.h promises to accept.
TEST(Safetensors, U16WorkloadTensorsInOneFileAreAcceptedAsBf16) {
    WorkloadSpec workload;
    workload.problem.dtype = DType::bf16;
    workload.problem.shape.head_dim = 64;
    workload.problem.sm_scale = default_sm_scale(64);
    const std::size_t bytes = 64 * 2;
    std::string header = "{", data;
    for (const char *name : {"k", "q", "v"}) {
        if (header.size() > 1) header += ",";
        header += std::string("\"") + name + "\":{\"dtype\":\"U16\",\"shape\":[1,1,1,64],\"data_offsets\":[" +
                  std::to_string(data.size()) + "," + std::to_string(data.size() + bytes) + "]}";
        for (int i = 0; i < 64; ++i) {
            const std::uint16_t bits = float_to_bf16(static_cast<float>(i) / 8);
            data.append(reinterpret_cast<const char *>(&bits), 2);
        }
    }
    header += "}";
    const ScratchDirectory dir("tensor-io");
    write_file(dir / "qkv.safetensors", safetensors_with_header(header, data));
    workload.q_file = workload.k_file = workload.v_file = (dir / "qkv.safetensors").string();

    const GeneratedInputs inputs = workload_inputs(workload);
    EXPECT_EQ(inputs.q.dtype, DType::bf16);
    EXPECT_EQ(inputs.v.dtype, DType::bf16);
    EXPECT_EQ(inputs.k.value_at(9), 9.0 / 8);
}

}  // namespace s2tp::unit_tensor_io
