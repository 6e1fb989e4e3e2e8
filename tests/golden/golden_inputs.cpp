// golden_inputs CASES_TOML OUT_DIR: writes OUT_DIR/<case>/{q,k,v}.npy for every case of CASES_TOML,
// from its seed through sage2tp's input generator (bf16 as uint16 bit patterns). make_golden.py feeds
// them to upstream's extension, so that upstream's outputs are for exactly the inputs sage2tp's checks
// regenerate. Exit status: 0 written, 2 bad cases file or arguments.
#include "golden_cases_file.h"

#include "formats/tensor_io.h"
#include "model/input_generator.h"

#include <filesystem>
#include <iostream>

int main(int argc, char **argv) {
    if (argc != 3) {
        std::cerr << "usage: golden_inputs CASES_TOML OUT_DIR\n";
        return 2;
    }
    try {
        const std::filesystem::path out = argv[2];
        for (const s2tp::golden::SeededCase &c : s2tp::golden::seeded_cases(argv[1])) {
            const s2tp::GeneratedInputs in = s2tp::generate_inputs(c.problem.shape, c.problem.dtype, c.seed);
            std::filesystem::create_directories(out / c.name);
            s2tp::save_npy(out / c.name / "q.npy", in.q);
            s2tp::save_npy(out / c.name / "k.npy", in.k);
            s2tp::save_npy(out / c.name / "v.npy", in.v);
            std::cout << c.name << ": " << c.problem.describe() << ", seed " << c.seed << "\n";
        }
        return 0;
    } catch (const s2tp::Error &e) {
        std::cerr << "golden_inputs: " << e.what() << "\n";
        return static_cast<int>(e.code());
    }
}
