"""The speed targets of the numeric path, measured as ratios in one run (a busy machine slows both sides alike).

Run: python benchmarks/speed_targets.py [--preset qwen3-32b] [--repeat 5] [--configs 2000]

Every process runs as from an installed package, with its modules' bytecode cached (in a temporary folder given as
PYTHONPYCACHEPREFIX, written by one warm-up run of each command): with PYTHONDONTWRITEBYTECODE set, as in some
development shells, Python would compile every module of llmcount from source on each start and time that instead.

1. Whole process: ``llmcount count PRESET`` against transformers building the same model on the meta device
   (``AutoModelForCausalLM.from_config`` under ``torch.device("meta")``, its parameters summed), each the median of
   --repeat fresh processes, with Python's own start (``python -c pass``) and ``llmcount --help`` beside them.
   Target: count at least 25x faster than the meta build. Wall and CPU time are both shown (CPU time is the
   steadier on a shared machine).
2. Many configs in one call: ``llmcount count <N config files> --csv`` against ``llmcount count <1 file> --csv``,
   whole processes, of every preset, then of the presets the compiled path counts whose config declares no
   quantisation scheme (a row of a config that declares one adds the bytes the scheme stores, computed per tensor by
   :mod:`llmcount.quant` from the sympy path's model; a composite config is read by the sympy path: either imports
   sympy, about a second of CPU, once per batch).
   Target: N = 2,000 files cost at most 0.5 s more than one (4,000 configs/s). Then N / 4 files of the presets
   that declare a quantisation scheme alone (their rows' stored bytes), and with ``--before`` the same batch from
   that checkout, its CSV compared.
3. Through the API, in this process: ``llmcount.load(path).counts`` for each file, and the library's readers on
   configs already parsed, once every family's record is loaded: ``read_config`` (the sympy path's Model) and
   ``counting.read`` (the compiled path, no sympy; over the configs it takes, a composite one is not), first with
   every config new to it (what it remembers of configs read before cleared, its plans kept), then the same configs
   read again; beside them ``json.loads`` of the same files' bytes, a reference of plain CPython work. Seven passes of
   each, the cases taken in turn in each pass (a pass takes milliseconds; a change of load falls on every case), the
   median pass shown with the slowest and fastest, and each as a ratio to the reference's median.
   Target: 50,000 configs/s.
4. Commands that now take the compiled path, whole processes: ``verify PRESET --index FILE`` (an index of the
   preset's tensor names in the order transformers' Qwen3/Llama modules name them, its total_size the bf16 bytes of
   the formula's parameters), ``verify FOLDER`` (a one-layer Llama checkpoint: its config and a safetensors file of
   zeros), ``memory PRESET --training --lora 16`` and ``memory PRESET --training --conventions``, each the median of
   --repeat runs; with ``--before PATH`` (a checkout of the code before, e.g. the landed main) the same commands run
   from it in the same minutes, and the ratio is printed.

The config files are the bundled presets (every family they cover), each written N / len(presets) times with its
vocab_size moved by a few rows so that no two files are the same model. Every total is checked against the first
pass, and the count of the preset against the meta build's.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # llmcount from this checkout

from batch_count import write_configs
from count_vs_meta import META

from llmcount.presets import presets

ROOT = Path(__file__).resolve().parent.parent
ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    "PYTHONPATH": str(ROOT),
    "PYTHONPYCACHEPREFIX": tempfile.mkdtemp(prefix="llmcount-pycache-"),
}
atexit.register(shutil.rmtree, ENV["PYTHONPYCACHEPREFIX"], True)


def timed(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """The median wall time and the median CPU time (user + system, of the process and its children) of ``repeat``
    runs of ``cmd``, and the first run's stdout. On a shared machine the CPU time is the steadier measure: a busy
    machine stretches the wall time of a process, much less the CPU time it spends."""
    env = env or ENV
    cwd = env["PYTHONPATH"]  # python -m puts the working folder first on the path: the code timed is this one's
    times, cpus, out = [], [], None
    subprocess.run(cmd, capture_output=True, env=env, check=True, cwd=cwd)  # the warm-up run writes the bytecode cache
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True, cwd=cwd)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        out = done.stdout if out is None else out
    return statistics.median(times), statistics.median(cpus), out


def whole_process(preset: str, repeat: int) -> None:
    llmcount = [sys.executable, "-m", "llmcount"]
    python, python_cpu, _ = timed([sys.executable, "-c", "pass"], repeat)
    helped, helped_cpu, _ = timed([*llmcount, "--help"], repeat)
    ours, ours_cpu, out = timed([*llmcount, "count", preset, "--json"], repeat)
    text, text_cpu, _ = timed([*llmcount, "count", preset], repeat)
    theirs, theirs_cpu, total = timed([sys.executable, "-c", META, preset], repeat)
    same = json.loads(out)["total"] == int(total)
    print(f"1. whole process, {preset} (median of {repeat}; wall time, CPU time):")
    print(f"   python -c pass {python:.3f} s, {python_cpu:.3f} s; llmcount --help {helped:.3f} s, {helped_cpu:.3f} s")
    print(f"   llmcount count --json {ours:.3f} s, {ours_cpu:.3f} s; llmcount count {text:.3f} s, {text_cpu:.3f} s")
    print(f"   transformers meta build {theirs:.3f} s, {theirs_cpu:.3f} s; same total: {same}")
    print(f"   ratio --json {theirs / ours:.1f}x wall, {theirs_cpu / ours_cpu:.1f}x CPU (target >= 25x)")
    print(f"   ratio text   {theirs / text:.1f}x wall, {theirs_cpu / text_cpu:.1f}x CPU (target >= 25x)")


def many_configs(paths: list[str], repeat: int, which: str, before: str | None = None) -> None:
    """Section 2 for one batch; with ``before``, the same batch timed from that checkout too, and its CSV compared."""
    llmcount = [sys.executable, "-m", "llmcount", "count"]
    print(f"2. {len(paths):,} config files in one call, {which} (median of {repeat}; wall time, CPU time):")
    outs = []
    for label, env in (("", ENV), ("before: ", None if before is None else {**ENV, "PYTHONPATH": before})):
        if env is None:
            continue
        one, one_cpu, _ = timed([*llmcount, paths[0], "--csv"], repeat, env)
        many, many_cpu, out = timed([*llmcount, *paths, "--csv"], repeat, env)
        outs.append(out)
        rows = len(out.splitlines()) - 1
        extra, extra_cpu = many - one, many_cpu - one_cpu
        print(f"   {label}one {one:.3f} s, {one_cpu:.3f} s; all {many:.3f} s, {many_cpu:.3f} s; {rows:,} rows")
        print(f"   {label}{extra:.3f} s, {extra_cpu:.3f} s more than one (target <= 0.5 s for 2,000)")
        print(
            f"   {label}{(len(paths) - 1) / extra:,.0f} configs/s wall, {(len(paths) - 1) / extra_cpu:,.0f} configs/s"
            " CPU through the CLI (target >= 4,000)"
        )
    if len(outs) == 2:
        print(f"   the CSV of both: {'the same' if outs[0] == outs[1] else 'DIFFERS'}")


def through_api(paths: list[str], passes: int = 7) -> None:
    import llmcount
    from llmcount import counting
    from llmcount.formulas.config import read_config

    configs = [json.loads(Path(path).read_text()) for path in paths]
    first = [llmcount.load(path).counts.total for path in paths]  # every record loaded, every selection compiled
    taken = []  # the configs the compiled path takes (a composite one is read by the sympy path)
    for config, total in zip(configs, first, strict=True):
        try:
            counting.read(config, "bench")  # every snapshot loaded, every selection planned
        except counting.Fallback:
            continue
        taken.append((config, total))
    compiled, compiled_first = [c for c, _ in taken], [t for _, t in taken]
    texts = [Path(path).read_bytes() for path in paths]

    def forget() -> None:  # the configs read before are forgotten (the families' plans are kept)
        for config in compiled:
            counting.compiled(config["model_type"])._known.clear()

    cases = (
        ("llmcount.load(path).counts", lambda: [llmcount.load(path).counts.total for path in paths], first, None),
        ("read_config(parsed).counts", lambda: [read_config(c, "bench").counts.total for c in configs], first, None),
        (
            f"counting.read(parsed), the compiled path ({len(compiled):,} configs it takes), each config new",
            lambda: [counting.read(c, "bench").total for c in compiled],
            compiled_first,
            forget,
        ),
        (
            "counting.read(parsed), the same configs read again",
            lambda: [counting.read(c, "bench").total for c in compiled],
            compiled_first,
            None,
        ),
        ("json.loads of the same files' bytes (reference)", lambda: [json.loads(t) for t in texts], None, None),
    )
    rates: dict[str, list[tuple[float, float]]] = {name: [] for name, *_ in cases}
    for _ in range(passes):  # the cases in turn, pass after pass: a change of load falls on all alike
        for name, count, expected, before in cases:
            if before is not None:
                before()
            start, cpu = time.perf_counter(), time.process_time()
            got = count()
            wall, used = time.perf_counter() - start, time.process_time() - cpu
            assert expected is None or got == expected
            rates[name].append((len(got) / wall, len(got) / used))
    print(
        f"3. through the API, {len(paths):,} configs, records loaded ({passes} passes of each case in turn; configs/s"
        " CPU, median [slowest, fastest] pass; wall median):"
    )
    reference = statistics.median(cpu for _, cpu in rates[cases[-1][0]])
    for name, measured in rates.items():
        cpu = sorted(c for _, c in measured)
        wall = statistics.median(w for w, _ in measured)
        median = statistics.median(cpu)
        print(
            f"   {name}: {median:,.0f} [{cpu[0]:,.0f}, {cpu[-1]:,.0f}] CPU, {wall:,.0f} wall;"
            f" {median / reference:.2f}x the reference (target >= 50,000)"
        )


def _index(folder: Path, preset: str) -> Path:
    """A safetensors index of ``preset`` (a Llama-like decoder: Qwen3, Llama) naming its tensors as transformers'
    modules do, total_size its formula's parameters in bf16."""
    from llmcount import counting

    config = presets()[preset].config()
    layers = config["num_hidden_layers"]
    names = ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
    per_layer = ["input_layernorm", "post_attention_layernorm", "self_attn.q_norm", "self_attn.k_norm"]
    per_layer += [f"self_attn.{m}" for m in ("q_proj", "k_proj", "v_proj", "o_proj")]
    per_layer += [f"mlp.{m}" for m in ("gate_proj", "up_proj", "down_proj")]
    names += [f"model.layers.{i}.{m}.weight" for i in range(layers) for m in per_layer]
    total = counting.read(config, preset).total
    index = folder / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 2 * total}, "weight_map": dict.fromkeys(names, "x")}))
    return index


def _tiny_checkpoint(folder: Path) -> Path:
    """A one-layer Llama (d = 32, d_ff = 64, V = 64, untied): its config and a safetensors file of zeros."""
    import struct

    config = {"model_type": "llama", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64}
    config |= {"num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "tie_word_embeddings": False}
    (folder / "config.json").write_text(json.dumps(config))
    shapes = {"model.embed_tokens.weight": (64, 32), "lm_head.weight": (64, 32), "model.norm.weight": (32,)}
    layer = {"self_attn.q_proj": (32, 32), "self_attn.k_proj": (16, 32), "self_attn.v_proj": (16, 32)}
    layer |= {"self_attn.o_proj": (32, 32), "mlp.gate_proj": (64, 32), "mlp.up_proj": (64, 32)}
    layer |= {"mlp.down_proj": (32, 64), "input_layernorm": (32,), "post_attention_layernorm": (32,)}
    shapes |= {f"model.layers.0.{m}.weight": shape for m, shape in layer.items()}
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2 * shape[0] * (shape[1] if len(shape) > 1 else 1)
        header[name] = {"dtype": "F16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + bytes(offset))
    return folder


def now_plain(preset: str, repeat: int, before: str | None) -> None:
    """Section 4 (the module's docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "index").mkdir()
        (Path(folder) / "tiny").mkdir()
        index = _index(Path(folder) / "index", preset)
        tiny = _tiny_checkpoint(Path(folder) / "tiny")
        commands = {
            f"verify {preset} --index": ["verify", preset, "--index", str(index)],
            "verify FOLDER (one-layer Llama)": ["verify", str(tiny)],
            f"memory {preset} --training --lora 16": ["memory", preset, "--training", "--lora", "16"],
            f"memory {preset} --training --conventions": ["memory", preset, "--training", "--conventions"],
        }
        print(f"4. whole process, commands the compiled path now takes (median of {repeat}; wall time, CPU time):")
        for name, words in commands.items():
            wall, cpu, out = timed([sys.executable, "-m", "llmcount", *words], repeat)
            line = f"   {name}: {wall:.3f} s, {cpu:.3f} s"
            if before is not None:
                env = {**ENV, "PYTHONPATH": before}
                old_wall, old_cpu, old_out = timed([sys.executable, "-m", "llmcount", *words], repeat, env)
                same = "same output" if old_out == out else "OUTPUT DIFFERS"
                line += f"; before {old_wall:.3f} s, {old_cpu:.3f} s ({old_cpu / cpu:.1f}x the CPU time; {same})"
            print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="qwen3-32b")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--configs", type=int, default=2000)
    parser.add_argument("--before", help="a checkout of the code before, to time section 4's commands from")
    parser.add_argument("--only", choices=("1", "2", "3", "4"), help="run one section only")
    args = parser.parse_args()
    if args.preset not in presets():
        parser.error(f"unknown preset {args.preset} (see `llmcount list`)")
    if args.only in (None, "4"):
        now_plain(args.preset, args.repeat, args.before)
    if args.only == "4":
        return
    if args.only in (None, "1"):
        whole_process(args.preset, args.repeat)
    if args.only == "1":
        return
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as plain_folder:
        paths = write_configs(Path(folder), args.configs)
        if args.only in (None, "2"):
            many_configs(paths, max(1, args.repeat // 2), "every preset")
            plain = write_configs(Path(plain_folder), args.configs, plain=True)
            many_configs(plain, max(1, args.repeat // 2), "the compiled path's presets without quantisation")
            with tempfile.TemporaryDirectory() as quantised_folder:
                quantised = write_configs(Path(quantised_folder), args.configs // 4, quantised=True)
                which = "the presets that declare a quantisation scheme"
                many_configs(quantised, max(1, args.repeat // 2), which, args.before)
        if args.only in (None, "3"):
            through_api(paths)


if __name__ == "__main__":
    main()
