#!/usr/bin/env python3
"""Upstream SageAttention's own outputs for every CUDA launcher on the golden cases.

Run on a GPU host with PyTorch, Triton, nvcc and ninja (an H200: everything is built for sm_90a):

    build/tests/golden_inputs tests/golden/cases.toml /tmp/golden-inputs
    python3 tests/golden/make_golden.py --sageattention ~/SageAttention --inputs /tmp/golden-inputs \
        --out tests/golden/upstream.toml [--arrays DIR] [--cubins DIR] [--bench FILE] [--only EXT ...]

It builds upstream's extensions from the checkout's own sources, unchanged (csrc/fused, the seven sm89
launchers, the sm90 and sm80 files), with upstream setup.py's compiler flags, for sm_90a whatever the
GPU (setup.py picks kernels by the GPU's arch; the sm89 launchers run on sm_90a as the H200 runs them).
For every case it quantizes q, k and v as sageattention/core.py does for each launcher (per-warp CUDA
or per-thread Triton Q/K with the launcher's block sizes, per-channel fp8 V with the launcher's
scale_max, V mean for fuse_v_mean), runs the launcher with return_lse, and writes the sha256 of every
tensor's bytes to --out: the kernel's o and raw base-2 LSE and each quantized input. sage2tp's
`gpu_kernel_check launchers` regenerates the inputs and checks its quantizers and every adapter
against those digests, byte for byte. The K mean (torch's reduction) and V mean (upstream's block
reduction) are written as small .npy files beside --out, since sage2tp's checks feed them in rather
than reproduce torch's summation order; so is the mean the sm80 fuse_v_mean launcher is given
(sub_mean's, in V's dtype: sm80_v_mean.npy). --only builds and runs the named launcher families alone
(with _fused), and --out then holds their digests alone, to append to upstream.toml. --arrays also saves every tensor as .npy, --cubins copies the
built extensions' sm_90a cubins, --bench times the kernels at Wan 480p with triton's do_bench.
"""
import argparse
import hashlib
import importlib.util
import os
import pathlib
import subprocess
import sys
import time
import tomllib
import traceback

import numpy as np
import torch

ARCH = ["-gencode", "arch=compute_90a,code=sm_90a"]
# upstream setup.py's flags (less -Xptxas=-v, which only prints)
NVCC_FLAGS = ["-O3", "-std=c++17", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
              "--use_fast_math", "--threads=8", "-diag-suppress=174"]
CXX_FLAGS = ["-O3", "-fopenmp", "-std=c++17", "-DENABLE_BF16"]

SM89_LAUNCHERS = [
    "sm89_qk_int8_sv_f8_accum_f16_fuse_v_scale_attn_inst_buf",
    "sm89_qk_int8_sv_f8_accum_f16_attn_inst_buf",
    "sm89_qk_int8_sv_f8_accum_f32_attn",
    "sm89_qk_int8_sv_f8_accum_f32_attn_inst_buf",
    "sm89_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn",
    "sm89_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf",
    "sm89_qk_int8_sv_f8_accum_f32_fuse_v_scale_fuse_v_mean_attn",
]
# The tensors --arrays keeps (every digest is written regardless): one launcher of each quantization.
ARRAYS_KEPT = ("sm89_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf.",
               "sm89_qk_int8_sv_f8_accum_f32_fuse_v_scale_fuse_v_mean_attn.", "sm90_qk_int8_sv_f8_accum_f32_fuse_v_scale",
               "sm80_qk_int8_sv_f16_accum_f32_attn.", "sm80_qk_int8_sv_f16_accum_f16_fuse_v_mean_attn.")
EXTENSIONS = {
    "_fused": (["csrc/fused/pybind.cpp", "csrc/fused/fused.cu"], []),
    "_qattn_sm89": (["csrc/qattn/pybind_sm89.cpp"] + [f"csrc/qattn/{n}.cu" for n in SM89_LAUNCHERS], []),
    "_qattn_sm90": (["csrc/qattn/pybind_sm90.cpp", "csrc/qattn/qk_int_sv_f8_cuda_sm90.cu"], ["-lcuda"]),
    "_qattn_sm80": (["csrc/qattn/pybind_sm80.cpp", "csrc/qattn/qk_int_sv_f16_cuda_sm80.cu"], []),
}


def load_extension(name, root, build_dir):
    """Builds (or finds built) one extension and imports it."""
    from torch.utils import cpp_extension
    sources, ldflags = EXTENSIONS[name]
    directory = pathlib.Path(build_dir) / name
    directory.mkdir(parents=True, exist_ok=True)
    abi = f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"
    return cpp_extension.load(name=name, sources=[str(pathlib.Path(root) / s) for s in sources],
                              extra_cflags=CXX_FLAGS + [abi], extra_cuda_cflags=NVCC_FLAGS + ARCH + [abi],
                              extra_ldflags=ldflags, build_directory=str(directory), verbose=False)


def build_extensions(names, args):
    """One process per extension, side by side (ninja parallelises inside each); one still compiling
    after --build-timeout seconds is stopped and left out, and the launchers it holds are skipped."""
    started = time.time()
    processes = {name: subprocess.Popen([sys.executable, __file__, "--build-one", name, "--sageattention",
                                         str(args.sageattention), "--build", str(args.build), "--inputs", "-",
                                         "--out", "-"], start_new_session=True)
                 for name in names}
    built = {}
    for name, process in processes.items():
        try:
            code = process.wait(timeout=max(1.0, started + args.build_timeout - time.time()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
            print(f"{name}: still compiling after {args.build_timeout} s, left out", flush=True)
            continue
        if code != 0:
            print(f"{name}: build failed (exit {code}), left out", flush=True)
            continue
        built[name] = load_extension(name, args.sageattention, args.build)
        print(f"{name}: built in {time.time() - started:.0f} s ({built[name].__file__})", flush=True)
    return built


def load_upstream_python(root, fused):
    """sageattention/quant.py and triton/quant_per_thread.py as upstream ships them, with _fused built here."""
    package = type(sys)("sageattention")
    package.__path__ = [str(pathlib.Path(root) / "sageattention")]
    sys.modules["sageattention"] = package
    sys.modules["sageattention._fused"] = fused
    modules = {}
    for dotted, relative in [("sageattention.quant", "quant.py"),
                             ("sageattention.triton.quant_per_thread", "triton/quant_per_thread.py")]:
        spec = importlib.util.spec_from_file_location(dotted, pathlib.Path(root) / "sageattention" / relative)
        module = importlib.util.module_from_spec(spec)
        sys.modules[dotted] = module
        spec.loader.exec_module(module)
        modules[dotted] = module
    return modules["sageattention.quant"], modules["sageattention.triton.quant_per_thread"]


def sha256(tensor):
    return hashlib.sha256(tensor.contiguous().cpu().view(torch.uint8).numpy().tobytes()).hexdigest()


def to_numpy(tensor):
    t = tensor.contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.uint16).numpy()
    if t.dtype == torch.float8_e4m3fn:
        return t.view(torch.uint8).numpy()
    return t.numpy()


def load_input(path, dtype):
    array = np.load(path)
    t = torch.from_numpy(array)
    if dtype == "bf16":
        t = t.view(torch.bfloat16)
    return t.cuda()


def f32_from_hex(text):
    return float(np.frombuffer(bytes.fromhex(text)[::-1], dtype="<f4")[0])


class Case:
    def __init__(self, table, inputs):
        self.__dict__.update(table)
        self.q = load_input(inputs / self.name / "q.npy", self.dtype)
        self.k = load_input(inputs / self.name / "k.npy", self.dtype)
        self.v = load_input(inputs / self.name / "v.npy", self.dtype)
        self.tl = 0 if self.layout == "NHD" else 1
        self.seq_dim = 1 if self.tl == 0 else 2
        self.sm_scale_f32 = f32_from_hex(self.sm_scale_f32_hex)
        # core.py: km = k.mean(dim=seq_dim, keepdim=True), in k's dtype
        self.km = self.k.mean(dim=self.seq_dim, keepdim=True)


def quantize_qk(quant, per_thread, c, granularity, blkq, warpq, blkk, warpk):
    if granularity == "per_warp":
        return quant.per_warp_int8(c.q, c.k, c.km, tensor_layout=c.layout, BLKQ=blkq, WARPQ=warpq, BLKK=blkk)
    return per_thread.per_thread_int8(c.q, c.k, c.km, tensor_layout=c.layout, BLKQ=blkq, WARPQ=warpq, BLKK=blkk,
                                      WARPK=warpk)


def pad_v_to(v, seq_dim, multiple):
    """core.py's sm90 path: V padded with zero tokens to a multiple of 128 before per_channel_fp8."""
    length = v.size(seq_dim)
    pad = (multiple - length % multiple) % multiple
    if pad == 0:
        return v
    shape = list(v.shape)
    shape[seq_dim] = pad
    return torch.cat([v, torch.zeros(shape, dtype=v.dtype, device=v.device)], dim=seq_dim)


GRANULARITY_CODE = {"per_warp": 2, "per_thread": 3}  # upstream's QuantGranularity kPerWarp, kPerThread


def run_sm89(c, ext, quant, per_thread, record):
    """The seven sm89 launchers: BLKQ 128, WARPQ 32, BLKK 64, WARPK 64 (core.py's sm89 path)."""
    # ---- sm89: BLKQ 128, WARPQ 32, BLKK 64, WARPK 64 ----
    for granularity in ("per_warp", "per_thread"):
        q_int8, q_scale, k_int8, k_scale = quantize_qk(quant, per_thread, c, granularity, 128, 32, 64, 64)
        v_fp8_16, v_scale_16, _ = quant.per_channel_fp8(c.v, tensor_layout=c.layout, scale_max=2.25, smooth_v=False)
        v_fp8_32, v_scale_32, _ = quant.per_channel_fp8(c.v, tensor_layout=c.layout, scale_max=448.0, smooth_v=False)
        v_fp8_m, v_scale_m, v_mean = quant.per_channel_fp8(c.v, tensor_layout=c.layout, scale_max=448.0, smooth_v=True)
        g = GRANULARITY_CODE[granularity]
        common = dict(q_int8=q_int8, q_scale=q_scale, k_int8=k_int8, k_scale=k_scale)
        for launcher in SM89_LAUNCHERS:
            function = getattr(ext["_qattn_sm89"], launcher[len("sm89_"):])
            o = torch.empty(c.q.shape, dtype=c.q.dtype, device="cuda")
            tail = (c.tl, int(c.causal), g, c.sm_scale_f32, 1)
            if "fuse_v_mean" in launcher:
                v_fp8, v_scale = v_fp8_m, v_scale_m
                lse = function(q_int8, k_int8, v_fp8, o, q_scale, k_scale, v_scale, v_mean, *tail)
                extra = dict(v_fp8=v_fp8, v_scale=v_scale, v_mean=v_mean)
            else:
                v_fp8, v_scale = (v_fp8_16, v_scale_16) if "accum_f16" in launcher else (v_fp8_32, v_scale_32)
                if "fuse_v_scale" in launcher:
                    lse = function(q_int8, k_int8, v_fp8, o, q_scale, k_scale, v_scale, *tail)
                    extra = dict(v_fp8=v_fp8, v_scale=v_scale)
                else:
                    lse = function(q_int8, k_int8, v_fp8, o, q_scale, k_scale, *tail)
                    extra = dict(v_fp8=v_fp8)
            torch.cuda.synchronize()
            record(launcher, granularity, dict(common, **extra, o=o, lse=lse))


def run_sm90(c, ext, quant, per_thread, record):
    """The sm90 (wgmma) launchers: BLKQ 64, WARPQ 16, BLKK 128, WARPK 128; V padded to 128 tokens."""
    # ---- sm90: BLKQ 64, WARPQ 16, BLKK 128, WARPK 128; V padded to 128 tokens; scale_max 448 ----
    v90 = pad_v_to(c.v, c.seq_dim, 128)
    for granularity in ("per_warp", "per_thread"):
        q_int8, q_scale, k_int8, k_scale = quantize_qk(quant, per_thread, c, granularity, 64, 16, 128, 128)
        v_fp8, v_scale, _ = quant.per_channel_fp8(v90, tensor_layout=c.layout, smooth_v=False)
        for launcher in ("qk_int8_sv_f8_accum_f32_attn_inst_buf", "qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf"):
            o = torch.empty(c.q.shape, dtype=c.q.dtype, device="cuda")
            tail = (c.tl, int(c.causal), GRANULARITY_CODE[granularity], c.sm_scale_f32, 1)
            function = getattr(ext["_qattn_sm90"], launcher)
            if "fuse_v_scale" in launcher:
                lse = function(q_int8, k_int8, v_fp8, o, q_scale, k_scale, v_scale, *tail)
            else:
                lse = function(q_int8, k_int8, v_fp8, o, q_scale, k_scale, *tail)
            torch.cuda.synchronize()
            record("sm90_" + launcher, granularity, dict(q_int8=q_int8, q_scale=q_scale, k_int8=k_int8,
                                                         k_scale=k_scale, v_fp8=v_fp8, v_scale=v_scale, o=o, lse=lse))


def run_sm80(c, ext, quant, per_thread, record):
    """The sm80 launchers: FP16 V, BLKQ 128, WARPQ 32 (16 for D 128 with fp16+fp32), BLKK 64."""
    # ---- sm80: FP16 V; BLKQ 128, WARPQ 32 (16 for D 128 with fp16+fp32), BLKK 64 ----
    # core.py casts V to fp16 for every sm80 launcher but fuse_v_mean, whose sub_mean writes fp16 itself.
    v16 = c.v.to(torch.float16)
    for granularity in ("per_warp", "per_thread"):
        for launcher in ("qk_int8_sv_f16_accum_f32_attn", "qk_int8_sv_f16_accum_f16_attn",
                         "qk_int8_sv_f16_accum_f16_attn_inst_buf", "qk_int8_sv_f16_accum_f16_fuse_v_mean_attn"):
            warpq = 16 if (c.head_dim == 128 and launcher == "qk_int8_sv_f16_accum_f16_attn_inst_buf") else 32
            q_int8, q_scale, k_int8, k_scale = quantize_qk(quant, per_thread, c, granularity, 128, warpq, 64, 64)
            o = torch.empty(c.q.shape, dtype=c.q.dtype, device="cuda")
            tail = (c.tl, int(c.causal), GRANULARITY_CODE[granularity], c.sm_scale_f32, 1)
            function = getattr(ext["_qattn_sm80"], launcher)
            tensors = dict(q_int8=q_int8, q_scale=q_scale, k_int8=k_int8, k_scale=k_scale)
            if "fuse_v_mean" in launcher:
                smoothed_v, vm = quant.sub_mean(c.v, tensor_layout=c.layout)
                lse = function(q_int8, k_int8, smoothed_v, o, q_scale, k_scale, vm, *tail)
                tensors.update(v=smoothed_v, v_mean=vm)
            else:
                lse = function(q_int8, k_int8, v16, o, q_scale, k_scale, *tail)
                tensors.update(v=v16)
            torch.cuda.synchronize()
            record("sm80_" + launcher, granularity, dict(tensors, o=o, lse=lse))


FAMILIES = (("_qattn_sm89", run_sm89), ("_qattn_sm90", run_sm90), ("_qattn_sm80", run_sm80))


def run_case(c, ext, quant, per_thread):
    """Every built launcher on one case: ({launcher: {granularity: {tensor: sha256}}}, {name: tensor}).
    A family that fails is reported and left out; the others still run."""
    results, saved = {}, {}

    def record(launcher, granularity, tensors):
        results.setdefault(launcher, {})[granularity] = {name: sha256(t) for name, t in tensors.items()}
        for name, t in tensors.items():
            saved[f"{launcher}.{granularity}.{name}"] = t

    for extension, family in FAMILIES:
        if extension not in ext:
            continue
        try:
            family(c, ext, quant, per_thread, record)
        except Exception:
            traceback.print_exc()
            print(f"{c.name}: {family.__name__} failed, left out", flush=True)
    return results, saved


def bench(ext, quant, per_thread, path):
    """do_bench medians of the kernels alone at Wan 480p (B1 H40 N32760 D128, HND, bf16, not causal)."""
    import triton.testing
    torch.manual_seed(0)
    b, h, n, d = 1, 40, 32760, 128
    q, k, v = (torch.randn(b, h, n, d, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    km = k.mean(dim=2, keepdim=True)
    flops = 4 * b * h * n * n * d
    lines = ["# do_bench medians (ms) of upstream's kernels alone, inputs quantized beforehand",
             f"# Wan 480p: B{b} H{h} N{n} D{d} HND bf16, {torch.cuda.get_device_name()}"]
    rows = []
    for granularity, g in (("per_thread", 3), ("per_warp", 2)):
        q8, qs, k8, ks = (quant.per_warp_int8(q, k, km, tensor_layout="HND", BLKQ=64, WARPQ=16, BLKK=128)
                          if g == 2 else per_thread.per_thread_int8(q, k, km, tensor_layout="HND", BLKQ=64, WARPQ=16,
                                                                    BLKK=128, WARPK=128))
        vf, vs, _ = quant.per_channel_fp8(pad_v_to(v, 2, 128), tensor_layout="HND", smooth_v=False)
        o = torch.empty_like(q)
        f = ext["_qattn_sm90"].qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf
        rows.append((f"sm90_qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf.{granularity}",
                     triton.testing.do_bench(lambda: f(q8, k8, vf, o, qs, ks, vs, 1, 0, g, d ** -0.5, 0))))
        v16 = v.to(torch.float16)
        for launcher in ("qk_int8_sv_f16_accum_f32_attn", "qk_int8_sv_f16_accum_f16_attn_inst_buf"):
            if "_qattn_sm80" not in ext:
                break
            warpq = 16 if launcher.endswith("inst_buf") else 32  # core.py: 16 for D 128 with fp16+fp32
            q8, qs, k8, ks = (quant.per_warp_int8(q, k, km, tensor_layout="HND", BLKQ=128, WARPQ=warpq, BLKK=64)
                              if g == 2 else per_thread.per_thread_int8(q, k, km, tensor_layout="HND", BLKQ=128,
                                                                        WARPQ=warpq, BLKK=64, WARPK=64))
            f = getattr(ext["_qattn_sm80"], launcher)
            rows.append((f"sm80_{launcher}.{granularity}",
                         triton.testing.do_bench(lambda: f(q8, k8, v16, o, qs, ks, 1, 0, g, d ** -0.5, 0))))
        q8, qs, k8, ks = (quant.per_warp_int8(q, k, km, tensor_layout="HND", BLKQ=128, WARPQ=32, BLKK=64)
                          if g == 2 else per_thread.per_thread_int8(q, k, km, tensor_layout="HND", BLKQ=128, WARPQ=32,
                                                                    BLKK=64, WARPK=64))
        for launcher, scale_max in (("accum_f16_fuse_v_scale_attn_inst_buf", 2.25),
                                    ("accum_f32_fuse_v_scale_attn_inst_buf", 448.0)):
            vf, vs, _ = quant.per_channel_fp8(v, tensor_layout="HND", scale_max=scale_max, smooth_v=False)
            f = getattr(ext["_qattn_sm89"], "qk_int8_sv_f8_" + launcher)
            rows.append((f"sm89_qk_int8_sv_f8_{launcher}.{granularity}",
                         triton.testing.do_bench(lambda: f(q8, k8, vf, o, qs, ks, vs, 1, 0, g, d ** -0.5, 0))))
    for name, ms in rows:
        lines.append(f'"{name}" = {{ ms = {ms:.4f}, tops = {flops / ms / 1e9:.1f} }}')
    pathlib.Path(path).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sageattention", required=True, type=pathlib.Path, help="upstream checkout (d1a57a5)")
    parser.add_argument("--cases", type=pathlib.Path, default=pathlib.Path(__file__).with_name("cases.toml"))
    parser.add_argument("--inputs", required=True, type=pathlib.Path, help="golden_inputs' output folder")
    parser.add_argument("--build", type=pathlib.Path, default=pathlib.Path("/tmp/sage2tp-golden-build"))
    parser.add_argument("--out", required=True, type=pathlib.Path, help="the digests file to write")
    parser.add_argument("--arrays", type=pathlib.Path, help="also save every tensor here as .npy")
    parser.add_argument("--cubins", type=pathlib.Path, help="copy the extensions' sm_90a cubins here")
    parser.add_argument("--bench", type=pathlib.Path, help="write do_bench figures at Wan 480p here")
    parser.add_argument("--build-timeout", type=float, default=900.0, help="seconds the builds may take")
    parser.add_argument("--only", nargs="+", choices=[name for name in EXTENSIONS if name != "_fused"],
                        help="build and run only these launcher families (with _fused, which quantizes); "
                             "--out then holds their digests alone, to be merged into upstream.toml")
    parser.add_argument("--build-one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_one:
        load_extension(args.build_one, args.sageattention, args.build)
        return
    cases = tomllib.loads(args.cases.read_text())["case"]
    wanted = ["_fused"] + (args.only or [name for name in EXTENSIONS if name != "_fused"])
    ext = build_extensions(wanted, args)
    for required in ["_fused"] + ([] if args.only else ["_qattn_sm89"]):
        if required not in ext:
            sys.exit(f"make_golden.py: {required} did not build")
    quant, per_thread = load_upstream_python(args.sageattention, ext["_fused"])

    if args.cubins:
        args.cubins.mkdir(parents=True, exist_ok=True)
        for name, module in ext.items():
            subprocess.run(["cuobjdump", "-xelf", "all", module.__file__], cwd=args.cubins, check=True,
                           stdout=subprocess.DEVNULL)

    means_dir = args.out.parent / "means"
    lines = ["# Upstream SageAttention's own outputs and quantized inputs, as sha256 of each tensor's bytes, per",
             "# golden case (cases.toml), launcher and Q/K quantization granularity: written by make_golden.py",
             f"# on {torch.cuda.get_device_name()} (torch {torch.__version__}), extensions built for sm_90a from",
             f"# the checkout's own sources. lse is the kernel's raw base-2 LSE. K and V means: means/<case>.",
             ""]
    for table in cases:
        c = Case(table, args.inputs)
        results, saved = run_case(c, ext, quant, per_thread)
        (means_dir / c.name).mkdir(parents=True, exist_ok=True)
        np.save(means_dir / c.name / "k_mean.npy", to_numpy(c.km))
        v_mean = saved.get("sm89_qk_int8_sv_f8_accum_f32_fuse_v_scale_fuse_v_mean_attn.per_warp.v_mean")
        if v_mean is not None:
            np.save(means_dir / c.name / "v_mean.npy", to_numpy(v_mean))
        # The sm80 fuse_v_mean launcher is given sub_mean's mean instead: in V's dtype, torch's reduction.
        sub_mean = saved.get("sm80_qk_int8_sv_f16_accum_f16_fuse_v_mean_attn.per_warp.v_mean")
        if sub_mean is not None:
            np.save(means_dir / c.name / "sm80_v_mean.npy", to_numpy(sub_mean))
        if args.arrays:
            (args.arrays / c.name).mkdir(parents=True, exist_ok=True)
            for name, t in saved.items():
                if any(name.startswith(kept) for kept in ARRAYS_KEPT):
                    np.save(args.arrays / c.name / f"{name}.npy", to_numpy(t))
        for launcher, by_granularity in results.items():
            for granularity, digests in by_granularity.items():
                lines.append(f'[case."{c.name}".{launcher}.{granularity}]')
                lines.extend(f'{name} = "{digest}"' for name, digest in digests.items())
                lines.append("")
        print(f"{c.name}: {sum(len(g) for g in results.values())} launcher runs", flush=True)
    args.out.write_text("\n".join(lines))
    if args.bench:
        bench(ext, quant, per_thread, args.bench)


if __name__ == "__main__":
    main()
