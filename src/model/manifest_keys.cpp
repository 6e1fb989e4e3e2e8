#include "model/manifest_keys.h"

namespace s2tp {

const std::vector<SchemaKey> &manifest_keys() {
#define S2TP_MANIFEST_KEY_ROW(NAME, TABLE, KEY, KIND, LOW, HIGH, DEFAULT, DOC) manifest_key::NAME##_##KEY,
    static const std::vector<SchemaKey> keys{S2TP_MANIFEST_KEYS(S2TP_MANIFEST_KEY_ROW)};
#undef S2TP_MANIFEST_KEY_ROW
    return keys;
}

std::vector<std::string> manifest_keys_of(const std::string &table) {
    std::vector<std::string> keys;
    for (const SchemaKey &key : manifest_keys())
        if (table == key.table) keys.emplace_back(key.key);
    return keys;
}

}  // namespace s2tp
