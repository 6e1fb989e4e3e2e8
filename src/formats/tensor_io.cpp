#include "formats/tensor_io.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "support/errors.h"

namespace s2tp {

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tensor_io copies little-endian file data straight into host memory: a little-endian host is required"
#endif

namespace {

[[noreturn]] void bad_input(const std::string &source, const std::string &what) {
    fail(ExitCode::usage, source + ": " + what);
}

[[noreturn]] void bad_input_at(const std::string &source, const std::string &what, std::size_t offset) {
    fail(ExitCode::usage, source + ": " + what + ", at byte offset " + std::to_string(offset));
}

std::vector<std::uint8_t> read_whole_file(const std::filesystem::path &path) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error))
        bad_input(path.string(), "not a readable regular file");
    std::ifstream in(path, std::ios::binary);
    if (!in) bad_input(path.string(), "cannot open for reading");
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    if (size < 0) bad_input(path.string(), "cannot determine the file size");
    in.seekg(0, std::ios::beg);
    std::vector<std::uint8_t> data(static_cast<std::size_t>(size));
    if (size > 0 && !in.read(reinterpret_cast<char *>(data.data()), size))
        bad_input(path.string(), "read failed");
    return data;
}

// numel * element size, or nothing if that exceeds 2^62 bytes (a hostile shape): callers compare it
// with the bytes actually present, so every later size computation stays far from overflow.
std::optional<std::size_t> data_bytes(const Shape &shape, std::size_t element_size) {
    constexpr std::uint64_t kLimit = std::uint64_t(1) << 62;
    std::uint64_t count = element_size;
    for (std::int64_t extent : shape)
        if (extent == 0) return 0;
    for (std::int64_t extent : shape) {
        const auto e = static_cast<std::uint64_t>(extent);
        if (extent < 0 || count > kLimit / e) return std::nullopt;
        count *= e;
    }
    return static_cast<std::size_t>(count);
}

std::string describe_bytes(const std::optional<std::size_t> &bytes) {
    return bytes ? std::to_string(*bytes) : std::string("more than 2^62");
}

// ---------------------------------------------------------------------------------------------
// .npy

constexpr unsigned char kNpyMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

struct NpyDescriptor {
    const char *text;
    DType dtype;
};
constexpr NpyDescriptor kNpyDescriptors[] = {
    {"<f2", DType::f16}, {"<f4", DType::f32}, {"<f8", DType::f64}, {"|i1", DType::i8}, {"<i1", DType::i8},
    {"|u1", DType::e4m3}, {"<u1", DType::e4m3}, {"<u2", DType::u16}, {"<i4", DType::i32},
};

const char *npy_descriptor(DType dtype) {
    switch (dtype) {
        case DType::f16: return "<f2";
        case DType::bf16: return "<u2";
        case DType::f32: return "<f4";
        case DType::f64: return "<f8";
        case DType::i8: return "|i1";
        case DType::e4m3: return "|u1";
        case DType::i32: return "<i4";
        case DType::u16: return "<u2";
    }
    fail(ExitCode::internal, "npy_descriptor: invalid dtype value");
}

// Strict parser for the Python dict literal numpy writes, e.g.
//   {'descr': '<f2', 'fortran_order': False, 'shape': (1, 64, 2, 128), }
// Keys and strings in single or double quotes (no escapes), values True/False, tuples of non-negative
// integers. Offsets in messages are absolute file offsets.
// A read position in a header held in memory. Every read is bounds-checked, and every complaint names
// the file, the format and the absolute file offset.
class HeaderCursor {
protected:
    HeaderCursor(const std::uint8_t *text, std::size_t size, std::size_t base, const std::string &source,
                 const char *format)
        : text_(text), size_(size), base_(base), source_(source), format_(format) {}

    [[noreturn]] void fail_here(const std::string &what, std::size_t at) {
        bad_input_at(source_, std::string("malformed ") + format_ + " header: " + what, base_ + at);
    }
    int peek() const { return pos_ < size_ ? text_[pos_] : -1; }
    void skip_space() {
        while (pos_ < size_ && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t' || text_[pos_] == '\r'))
            ++pos_;
    }
    void expect(char c) {
        if (peek() != c) fail_here(std::string("expected '") + c + "'", pos_);
        ++pos_;
    }
    bool matches(const char *word) {
        const std::size_t n = std::strlen(word);
        if (size_ - pos_ < n || std::memcmp(text_ + pos_, word, n) != 0) return false;
        pos_ += n;
        return true;
    }

    const std::uint8_t *text_;
    std::size_t size_;
    std::size_t base_;
    const std::string &source_;
    const char *format_;
    std::size_t pos_ = 0;
};

class NpyHeaderParser : HeaderCursor {
public:
    NpyHeaderParser(const std::uint8_t *text, std::size_t size, std::size_t base, const std::string &source)
        : HeaderCursor(text, size, base, source, ".npy") {}

    void parse(std::string &descr, bool &fortran_order, Shape &shape) {
        bool have_descr = false, have_order = false, have_shape = false;
        skip_space();
        expect('{');
        for (;;) {
            skip_space();
            if (peek() == '}') break;
            const std::size_t key_at = pos_;
            const std::string key = parse_string();
            skip_space();
            expect(':');
            skip_space();
            if (key == "descr") {
                if (have_descr) fail_here("duplicate key 'descr'", key_at);
                descr = parse_string();
                have_descr = true;
            } else if (key == "fortran_order") {
                if (have_order) fail_here("duplicate key 'fortran_order'", key_at);
                fortran_order = parse_bool();
                have_order = true;
            } else if (key == "shape") {
                if (have_shape) fail_here("duplicate key 'shape'", key_at);
                shape = parse_shape();
                have_shape = true;
            } else {
                fail_here("unexpected header key '" + key + "'", key_at);
            }
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() != '}') fail_here("expected ',' or '}' in header dict", pos_);
        }
        expect('}');
        skip_space();
        if (pos_ != size_) fail_here("unexpected text after the header dict", pos_);
        if (!have_descr) fail_here("header has no 'descr'", 0);
        if (!have_order) fail_here("header has no 'fortran_order'", 0);
        if (!have_shape) fail_here("header has no 'shape'", 0);
    }

private:
    std::string parse_string() {
        const int quote = peek();
        if (quote != '\'' && quote != '"') fail_here("expected a quoted string", pos_);
        const std::size_t start = ++pos_;
        while (pos_ < size_ && text_[pos_] != quote) {
            if (text_[pos_] == '\\' || text_[pos_] < 0x20 || text_[pos_] >= 0x7f)
                fail_here("unsupported character in string", pos_);
            if (pos_ - start > 64) fail_here("string too long", start);
            ++pos_;
        }
        if (pos_ >= size_) fail_here("unterminated string", start - 1);
        std::string value(reinterpret_cast<const char *>(text_ + start), pos_ - start);
        ++pos_;
        return value;
    }
    bool parse_bool() {
        if (matches("True")) return true;
        if (matches("False")) return false;
        fail_here("expected True or False", pos_);
    }
    Shape parse_shape() {
        Shape shape;
        expect('(');
        bool trailing_comma = false;
        for (;;) {
            skip_space();
            if (peek() == ')') break;
            if (shape.size() >= kMaxTensorRank)
                fail_here("shape has more than " + std::to_string(kMaxTensorRank) + " dimensions", pos_);
            shape.push_back(parse_extent());
            skip_space();
            trailing_comma = false;
            if (peek() == ',') {
                ++pos_;
                trailing_comma = true;
                continue;
            }
            if (peek() != ')') fail_here("expected ',' or ')' in shape", pos_);
        }
        // Python needs "(5,)" for a 1-tuple; "(5)" is just 5 and numpy never writes it.
        if (shape.size() == 1 && !trailing_comma) fail_here("one-dimensional shape written without ','", pos_);
        expect(')');
        return shape;
    }
    std::int64_t parse_extent() {
        const std::size_t start = pos_;
        std::int64_t value = 0;
        while (pos_ < size_ && text_[pos_] >= '0' && text_[pos_] <= '9') {
            const int digit = text_[pos_] - '0';
            if (value > (std::numeric_limits<std::int64_t>::max() - digit) / 10)
                fail_here("shape extent too large", start);
            value = value * 10 + digit;
            ++pos_;
        }
        if (pos_ == start) fail_here("expected a non-negative integer in shape", pos_);
        if (pos_ - start > 1 && text_[start] == '0') fail_here("shape extent with a leading zero", start);
        return value;
    }

};

// ---------------------------------------------------------------------------------------------
// .safetensors header: a strict JSON subset parser (RFC 8259 syntax; numbers must be integers, which is
// all the format uses) producing a small tree.

struct Json {
    enum class Kind { null, boolean, integer, string, array, object } kind = Kind::null;
    bool boolean = false;
    std::int64_t integer = 0;
    std::string string;
    std::vector<Json> items;                            // array
    std::vector<std::pair<std::string, Json>> members;  // object, in file order
    std::size_t offset = 0;                             // where the value starts (absolute)
};

constexpr int kMaxJsonDepth = 32;
// Caps the parse tree (about 100 bytes a value) whatever the header claims; a real header has a few
// values per tensor.
constexpr std::size_t kMaxJsonValues = 1000000;

class JsonParser : HeaderCursor {
public:
    JsonParser(const std::uint8_t *text, std::size_t size, std::size_t base, const std::string &source)
        : HeaderCursor(text, size, base, source, "safetensors") {}

    Json parse_document() {
        skip_space();
        Json root = parse_value(0);
        skip_space();
        if (pos_ != size_) fail_here("unexpected text after the JSON header", pos_);
        return root;
    }

private:

    Json parse_value(int depth) {
        if (depth > kMaxJsonDepth) fail_here("nesting deeper than " + std::to_string(kMaxJsonDepth), pos_);
        if (++value_count_ > kMaxJsonValues)
            fail_here("more than " + std::to_string(kMaxJsonValues) + " JSON values", pos_);
        Json value;
        value.offset = base_ + pos_;
        const int c = peek();
        if (c == '{') {
            value.kind = Json::Kind::object;
            ++pos_;
            skip_space();
            if (peek() == '}') {
                ++pos_;
                return value;
            }
            std::set<std::string> keys;
            for (;;) {
                skip_space();
                const std::size_t key_at = pos_;
                std::string key = parse_string();
                if (!keys.insert(key).second) fail_here("duplicate key \"" + key + "\"", key_at);
                skip_space();
                expect(':');
                skip_space();
                value.members.emplace_back(std::move(key), parse_value(depth + 1));
                skip_space();
                if (peek() == ',') {
                    ++pos_;
                    continue;
                }
                expect('}');
                return value;
            }
        }
        if (c == '[') {
            value.kind = Json::Kind::array;
            ++pos_;
            skip_space();
            if (peek() == ']') {
                ++pos_;
                return value;
            }
            for (;;) {
                skip_space();
                value.items.push_back(parse_value(depth + 1));
                skip_space();
                if (peek() == ',') {
                    ++pos_;
                    continue;
                }
                expect(']');
                return value;
            }
        }
        if (c == '"') {
            value.kind = Json::Kind::string;
            value.string = parse_string();
            return value;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            value.kind = Json::Kind::integer;
            value.integer = parse_integer();
            return value;
        }
        if (matches("true")) {
            value.kind = Json::Kind::boolean;
            value.boolean = true;
            return value;
        }
        if (matches("false")) {
            value.kind = Json::Kind::boolean;
            return value;
        }
        if (matches("null")) return value;
        fail_here("expected a JSON value", pos_);
    }

    std::int64_t parse_integer() {
        const std::size_t start = pos_;
        const bool negative = peek() == '-';
        if (negative) ++pos_;
        if (peek() < '0' || peek() > '9') fail_here("expected a digit", pos_);
        if (peek() == '0' && pos_ + 1 < size_ && text_[pos_ + 1] >= '0' && text_[pos_ + 1] <= '9')
            fail_here("number with a leading zero", start);
        std::int64_t value = 0;
        while (peek() >= '0' && peek() <= '9') {
            const int digit = text_[pos_] - '0';
            if (value > (std::numeric_limits<std::int64_t>::max() - digit) / 10)
                fail_here("integer out of range", start);
            value = value * 10 + digit;
            ++pos_;
        }
        if (peek() == '.' || peek() == 'e' || peek() == 'E') fail_here("non-integer number", start);
        return negative ? -value : value;
    }

    unsigned parse_hex4() {
        if (size_ - pos_ < 4) fail_here("truncated \\u escape", pos_);
        unsigned value = 0;
        for (int i = 0; i < 4; ++i) {
            const int c = text_[pos_++];
            value <<= 4;
            if (c >= '0' && c <= '9') value |= unsigned(c - '0');
            else if (c >= 'a' && c <= 'f') value |= unsigned(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') value |= unsigned(c - 'A' + 10);
            else fail_here("bad hex digit in \\u escape", pos_ - 1);
        }
        return value;
    }

    static void append_utf8(std::string &out, unsigned code_point) {
        if (code_point < 0x80) {
            out += static_cast<char>(code_point);
        } else if (code_point < 0x800) {
            out += static_cast<char>(0xc0 | (code_point >> 6));
            out += static_cast<char>(0x80 | (code_point & 0x3f));
        } else if (code_point < 0x10000) {
            out += static_cast<char>(0xe0 | (code_point >> 12));
            out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (code_point & 0x3f));
        } else {
            out += static_cast<char>(0xf0 | (code_point >> 18));
            out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3f));
            out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (code_point & 0x3f));
        }
    }

    // Raw bytes >= 0x80 are passed through unchecked: names are compared byte for byte and only
    // ever printed, so UTF-8 validity does not affect safety.
    std::string parse_string() {
        const std::size_t start = pos_;
        expect('"');
        std::string out;
        for (;;) {
            if (pos_ >= size_) fail_here("unterminated string", start);
            const std::uint8_t c = text_[pos_];
            if (c == '"') {
                ++pos_;
                return out;
            }
            if (c < 0x20) fail_here("control character in string", pos_);
            if (c != '\\') {
                out += static_cast<char>(c);
                ++pos_;
                continue;
            }
            ++pos_;
            if (pos_ >= size_) fail_here("unterminated escape", pos_ - 1);
            const std::uint8_t e = text_[pos_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    const std::size_t escape_at = pos_ - 2;
                    unsigned code_point = parse_hex4();
                    if (code_point >= 0xdc00 && code_point <= 0xdfff) fail_here("lone low surrogate", escape_at);
                    if (code_point >= 0xd800 && code_point <= 0xdbff) {
                        if (!(size_ - pos_ >= 2 && text_[pos_] == '\\' && text_[pos_ + 1] == 'u'))
                            fail_here("high surrogate without a low surrogate", escape_at);
                        pos_ += 2;
                        const unsigned low = parse_hex4();
                        if (low < 0xdc00 || low > 0xdfff) fail_here("invalid surrogate pair", escape_at);
                        code_point = 0x10000 + ((code_point - 0xd800) << 10) + (low - 0xdc00);
                    }
                    append_utf8(out, code_point);
                    break;
                }
                default: fail_here("invalid escape", pos_ - 2);
            }
        }
    }

    std::size_t value_count_ = 0;
};

struct SafetensorsDType {
    const char *text;
    DType dtype;
};
constexpr SafetensorsDType kSafetensorsDTypes[] = {
    {"F16", DType::f16}, {"BF16", DType::bf16}, {"F32", DType::f32},    {"F64", DType::f64},
    {"I8", DType::i8},   {"U8", DType::e4m3},   {"F8_E4M3", DType::e4m3}, {"I32", DType::i32},
    {"U16", DType::u16},
};

struct SafetensorsEntry {
    std::string name;
    DType dtype;
    Shape shape;
    std::size_t begin;  // relative to the data buffer
    std::size_t end;
};

const Json *find_member(const Json &object, const char *key) {
    for (const auto &member : object.members)
        if (member.first == key) return &member.second;
    return nullptr;
}

// Validates the whole header against the data buffer and returns the entries sorted by offset.
std::vector<SafetensorsEntry> index_safetensors(const std::uint8_t *data, std::size_t size,
                                                const std::string &source) {
    if (size < 8) bad_input_at(source, "too short for a safetensors header length (" + std::to_string(size) + " bytes)", 0);
    std::uint64_t header_length = 0;
    for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | data[i];
    if (header_length > kMaxSafetensorsHeaderBytes)
        bad_input_at(source, "safetensors header length " + std::to_string(header_length) + " exceeds the limit of " +
                                 std::to_string(kMaxSafetensorsHeaderBytes), 0);
    if (header_length > size - 8)
        bad_input_at(source, "safetensors header length " + std::to_string(header_length) + " runs past the end of the " +
                                 std::to_string(size) + "-byte file", 0);
    if (header_length < 2) bad_input_at(source, "safetensors header is shorter than '{}'", 8);
    if (data[8] != '{') bad_input_at(source, "safetensors header does not start with '{'", 8);

    const Json root = JsonParser(data + 8, static_cast<std::size_t>(header_length), 8, source).parse_document();
    if (root.kind != Json::Kind::object) bad_input_at(source, "safetensors header is not a JSON object", 8);

    const std::size_t buffer_start = 8 + static_cast<std::size_t>(header_length);
    const std::size_t buffer_size = size - buffer_start;
    std::vector<SafetensorsEntry> entries;
    for (const auto &[name, info] : root.members) {
        if (name == "__metadata__") {
            if (info.kind != Json::Kind::object)
                bad_input_at(source, "__metadata__ is not an object", info.offset);
            for (const auto &[key, value] : info.members)
                if (value.kind != Json::Kind::string)
                    bad_input_at(source, "__metadata__ value of \"" + key + "\" is not a string", value.offset);
            continue;
        }
        const std::string what = "tensor \"" + name + "\"";
        if (info.kind != Json::Kind::object) bad_input_at(source, what + ": entry is not an object", info.offset);
        for (const auto &member : info.members)
            if (member.first != "dtype" && member.first != "shape" && member.first != "data_offsets")
                bad_input_at(source, what + ": unexpected key \"" + member.first + "\"", member.second.offset);
        const Json *dtype = find_member(info, "dtype");
        const Json *shape = find_member(info, "shape");
        const Json *offsets = find_member(info, "data_offsets");
        if (!dtype || !shape || !offsets)
            bad_input_at(source, what + ": needs dtype, shape and data_offsets", info.offset);

        SafetensorsEntry entry;
        entry.name = name;
        if (dtype->kind != Json::Kind::string) bad_input_at(source, what + ": dtype is not a string", dtype->offset);
        const SafetensorsDType *known = nullptr;
        for (const auto &candidate : kSafetensorsDTypes)
            if (dtype->string == candidate.text) known = &candidate;
        if (!known) bad_input_at(source, what + ": unsupported dtype \"" + dtype->string + "\"", dtype->offset);
        entry.dtype = known->dtype;

        if (shape->kind != Json::Kind::array) bad_input_at(source, what + ": shape is not an array", shape->offset);
        if (shape->items.size() > kMaxTensorRank)
            bad_input_at(source, what + ": shape has more than " + std::to_string(kMaxTensorRank) + " dimensions",
                         shape->offset);
        for (const Json &extent : shape->items) {
            if (extent.kind != Json::Kind::integer || extent.integer < 0)
                bad_input_at(source, what + ": shape entries must be non-negative integers", extent.offset);
            entry.shape.push_back(extent.integer);
        }

        if (offsets->kind != Json::Kind::array || offsets->items.size() != 2 ||
            offsets->items[0].kind != Json::Kind::integer || offsets->items[1].kind != Json::Kind::integer ||
            offsets->items[0].integer < 0 || offsets->items[1].integer < offsets->items[0].integer)
            bad_input_at(source, what + ": data_offsets must be [begin, end] with 0 <= begin <= end", offsets->offset);
        const auto begin = static_cast<std::uint64_t>(offsets->items[0].integer);
        const auto end = static_cast<std::uint64_t>(offsets->items[1].integer);
        if (end > buffer_size)
            bad_input_at(source, what + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                                     "] run past the " + std::to_string(buffer_size) + "-byte data buffer",
                         offsets->offset);
        entry.begin = static_cast<std::size_t>(begin);
        entry.end = static_cast<std::size_t>(end);
        const std::optional<std::size_t> expected = data_bytes(entry.shape, dtype_size(entry.dtype));
        if (expected != entry.end - entry.begin)
            bad_input_at(source, what + ": shape " + shape_to_string(entry.shape) + " of " + dtype->string + " needs " +
                                     describe_bytes(expected) + " bytes but data_offsets span " +
                                     std::to_string(entry.end - entry.begin), offsets->offset);
        entries.push_back(std::move(entry));
    }

    // The data buffer must be exactly the tensors, back to back: no overlaps, no holes, nothing after.
    std::sort(entries.begin(), entries.end(), [](const SafetensorsEntry &a, const SafetensorsEntry &b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    std::size_t covered = 0;
    for (const auto &entry : entries) {
        if (entry.begin < covered)
            bad_input_at(source, "tensor \"" + entry.name + "\" overlaps the previous tensor's data", buffer_start + entry.begin);
        if (entry.begin > covered)
            bad_input_at(source, "unused bytes before tensor \"" + entry.name + "\"", buffer_start + covered);
        covered = entry.end;
    }
    if (covered != buffer_size)
        bad_input_at(source, std::to_string(buffer_size - covered) + " bytes after the last tensor's data",
                     buffer_start + covered);
    return entries;
}

Tensor materialize(const SafetensorsEntry &entry, const std::uint8_t *buffer) {
    Tensor tensor;
    tensor.dtype = entry.dtype;
    tensor.shape = entry.shape;
    tensor.bytes.assign(buffer + entry.begin, buffer + entry.end);
    return tensor;
}

std::size_t safetensors_buffer_start(const std::uint8_t *data) {
    std::uint64_t header_length = 0;
    for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | data[i];
    return 8 + static_cast<std::size_t>(header_length);
}

bool is_safetensors_path(const std::filesystem::path &path) { return path.extension() == ".safetensors"; }

}  // namespace

void adopt_requested_dtype(Tensor &tensor, const TensorRequest &request) {
    if (request.dtype == DType::bf16 && tensor.dtype == DType::u16) tensor.dtype = DType::bf16;
}

void check_tensor(const Tensor &tensor, const TensorRequest &request, const std::string &source) {
    if (request.dtype && *request.dtype != tensor.dtype)
        bad_input(source, std::string("dtype is ") + dtype_name(tensor.dtype) + ", expected " + dtype_name(*request.dtype));
    if (request.shape) {
        const Shape &want = *request.shape;
        bool same = want.size() == tensor.shape.size();
        for (std::size_t i = 0; same && i < want.size(); ++i) same = want[i] == -1 || want[i] == tensor.shape[i];
        if (!same)
            bad_input(source, "shape is " + shape_to_string(tensor.shape) + ", expected " + shape_to_string(want) +
                                  " (-1: any extent)");
    }
    if (tensor.bytes.size() != static_cast<std::size_t>(shape_numel(tensor.shape)) * dtype_size(tensor.dtype))
        fail(ExitCode::internal, source + ": tensor buffer size does not match its shape");
    if (!request.require_finite || !dtype_is_floating(tensor.dtype)) return;
    const std::int64_t count = tensor.numel();
    for (std::int64_t i = 0; i < count; ++i) {
        const double value = tensor.value_at(i);
        if (!std::isfinite(value)) {
            bad_input(source, std::string(std::isnan(value) ? "NaN" : "infinite value") + " at flat index " +
                                  std::to_string(i) + ", index " + shape_to_string(unravel_index(i, tensor.shape)));
        }
    }
}

Tensor parse_npy(const std::uint8_t *data, std::size_t size, const std::string &source, const TensorRequest &request) {
    if (size < 10) bad_input_at(source, "too short for a .npy header (" + std::to_string(size) + " bytes)", 0);
    if (std::memcmp(data, kNpyMagic, sizeof kNpyMagic) != 0) bad_input_at(source, "not a .npy file (bad magic)", 0);
    const unsigned major = data[6], minor = data[7];
    if (!((major == 1 || major == 2 || major == 3) && minor == 0))
        bad_input_at(source, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor), 6);
    std::size_t header_length;
    std::size_t header_start;
    if (major == 1) {
        header_length = std::size_t(data[8]) | (std::size_t(data[9]) << 8);
        header_start = 10;
    } else {
        if (size < 12) bad_input_at(source, "too short for a .npy v" + std::to_string(major) + " header", 0);
        header_length = std::size_t(data[8]) | (std::size_t(data[9]) << 8) | (std::size_t(data[10]) << 16) |
                        (std::size_t(data[11]) << 24);
        header_start = 12;
    }
    if (header_length > kMaxNpyHeaderBytes)
        bad_input_at(source, ".npy header length " + std::to_string(header_length) + " exceeds the limit of " +
                                 std::to_string(kMaxNpyHeaderBytes), 8);
    if (header_length > size - header_start)
        bad_input_at(source, ".npy header length " + std::to_string(header_length) + " runs past the end of the " +
                                 std::to_string(size) + "-byte file", 8);

    std::string descr;
    bool fortran_order = false;
    Shape shape;
    NpyHeaderParser(data + header_start, header_length, header_start, source).parse(descr, fortran_order, shape);
    if (fortran_order) bad_input_at(source, "fortran_order is True (only C order is supported)", header_start);
    const NpyDescriptor *known = nullptr;
    for (const auto &candidate : kNpyDescriptors)
        if (descr == candidate.text) known = &candidate;
    if (!known)
        bad_input_at(source, "unsupported descr '" + descr + "' (supported: <f2 <f4 <f8 |i1 |u1 <u2 <i4)", header_start);

    const std::size_t data_start = header_start + header_length;
    const std::size_t available = size - data_start;
    const std::optional<std::size_t> expected = data_bytes(shape, dtype_size(known->dtype));
    if (expected != available)
        bad_input_at(source, "data is " + std::to_string(available) + " bytes but shape " + shape_to_string(shape) +
                                 " of '" + descr + "' needs " + describe_bytes(expected), data_start);

    Tensor tensor;
    tensor.dtype = known->dtype;
    tensor.shape = std::move(shape);
    tensor.bytes.assign(data + data_start, data + size);
    adopt_requested_dtype(tensor, request);
    check_tensor(tensor, request, source);
    return tensor;
}

Tensor read_npy(const std::filesystem::path &path, const TensorRequest &request) {
    const std::vector<std::uint8_t> data = read_whole_file(path);
    return parse_npy(data.data(), data.size(), path.string(), request);
}

std::string encode_npy(const Tensor &tensor) {
    if (tensor.bytes.size() != static_cast<std::size_t>(tensor.numel()) * tensor.element_size())
        fail(ExitCode::internal, "encode_npy: tensor buffer size does not match its shape");
    std::string dict = std::string("{'descr': '") + npy_descriptor(tensor.dtype) + "', 'fortran_order': False, 'shape': (";
    for (std::size_t i = 0; i < tensor.shape.size(); ++i) {
        if (i) dict += ", ";
        dict += std::to_string(tensor.shape[i]);
    }
    if (tensor.shape.size() == 1) dict += ",";
    dict += "), }";
    // numpy pads with spaces and a final newline so that the data starts 64-byte aligned.
    const std::size_t unpadded = 10 + dict.size() + 1;
    dict.append((64 - unpadded % 64) % 64, ' ');
    dict += '\n';
    if (dict.size() > 0xffff) fail(ExitCode::internal, "encode_npy: header too long for format 1.0");
    std::string out(reinterpret_cast<const char *>(kNpyMagic), sizeof kNpyMagic);
    out += static_cast<char>(1);
    out += static_cast<char>(0);
    out += static_cast<char>(dict.size() & 0xff);
    out += static_cast<char>(dict.size() >> 8);
    out += dict;
    out.append(reinterpret_cast<const char *>(tensor.bytes.data()), tensor.bytes.size());
    return out;
}

void save_npy(const std::filesystem::path &path, const Tensor &tensor) {
    const std::string encoded = encode_npy(tensor);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) fail(ExitCode::usage, path.string() + ": cannot open for writing");
    out.write(encoded.data(), static_cast<std::streamsize>(encoded.size()));
    out.close();
    if (!out) fail(ExitCode::usage, path.string() + ": write failed");
}

std::map<std::string, Tensor> parse_safetensors(const std::uint8_t *data, std::size_t size, const std::string &source,
                                                bool require_finite) {
    const std::vector<SafetensorsEntry> entries = index_safetensors(data, size, source);
    const std::uint8_t *buffer = data + safetensors_buffer_start(data);
    std::map<std::string, Tensor> tensors;
    TensorRequest finiteness;
    finiteness.require_finite = require_finite;
    for (const auto &entry : entries) {
        Tensor tensor = materialize(entry, buffer);
        check_tensor(tensor, finiteness, source + " tensor \"" + entry.name + "\"");
        tensors.emplace(entry.name, std::move(tensor));
    }
    return tensors;
}

std::map<std::string, Tensor> read_safetensors(const std::filesystem::path &path, bool require_finite) {
    const std::vector<std::uint8_t> data = read_whole_file(path);
    return parse_safetensors(data.data(), data.size(), path.string(), require_finite);
}

Tensor read_safetensors_tensor(const std::filesystem::path &path, const std::string &name, const TensorRequest &request) {
    const std::string source = path.string();
    const std::vector<std::uint8_t> data = read_whole_file(path);
    const std::vector<SafetensorsEntry> entries = index_safetensors(data.data(), data.size(), source);
    const SafetensorsEntry *chosen = nullptr;
    if (name.empty()) {
        if (entries.size() != 1)
            bad_input(source, "holds " + std::to_string(entries.size()) + " tensors; name the one to load");
        chosen = &entries.front();
    } else {
        for (const auto &entry : entries)
            if (entry.name == name) chosen = &entry;
        if (!chosen) bad_input(source, "no tensor named \"" + name + "\"");
    }
    Tensor tensor = materialize(*chosen, data.data() + safetensors_buffer_start(data.data()));
    adopt_requested_dtype(tensor, request);
    check_tensor(tensor, request, source + " tensor \"" + chosen->name + "\"");
    return tensor;
}

Tensor load_tensor(const std::filesystem::path &path, const TensorRequest &request, const std::string &name) {
    if (is_safetensors_path(path)) return read_safetensors_tensor(path, name, request);
    if (path.extension() == ".npy") {
        if (!name.empty()) bad_input(path.string(), "a .npy file holds one unnamed tensor; cannot select \"" + name + "\"");
        return read_npy(path, request);
    }
    bad_input(path.string(), "unsupported tensor file extension (expected .npy or .safetensors)");
}

}  // namespace s2tp
