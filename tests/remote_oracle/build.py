"""Figures for the remote-code records: build a family's own modeling code on the meta device and count.

A family whose modeling file is published beside its checkpoints (remote code) is not in transformers, so its oracle
is that file itself, built from configs on the meta device as transformers' own classes are. Each family has a JSON
file here (``<family>.json``) holding the public repository and commit the files are read from, the files, the
classes, the configs, and the figures this script recorded: the parameter count of each config (``total``, as
``sum(p.numel() for p in model.parameters())``, a tied weight once) and, for configs marked ``"shapes": true``, the
name and shape of every parameter (the small configs the tests write as checkpoints for ``verify``).

The modeling code is never copied into the project: the script reads it from a git clone at the recorded commit,
copies it into a temporary package and imports it from there. Old remote code imports names transformers has since
removed; ``shims`` in the JSON lists them (module -> names), and the script puts a stand-in in their place before the
import: ``false`` for an ``is_..._available`` check (the optional kernel is absent), ``identity`` for a decorator,
``missing`` for a function the forward pass would call (it raises if called; building a model never calls it),
``typing`` for a name of ``typing`` an old module re-exported (``List`` of torch.nn.functional, which remote code
star-imports), and a module with no names (``{}``) for one the remote code imports and never uses in ``__init__``.
``placeholders`` names packages a dependency imports at module level and building never uses (timm's data
pipeline imports torchvision): every module and name under them is a placeholder class that raises when called.
``on_cpu`` names torch factories built on the CPU inside the meta device, whose result ``__init__`` reads as a
number (timm's stochastic-depth rates, ``torch.linspace(...)[i].item()``): no parameter is made by them.
``config_attributes`` restates a config attribute (dotted into sub-configs) in the form the old code reads
(transformers 5 fills ``rope_scaling`` from its ``rope_parameters``; the old code reads a dict with a ``type``, and
``None`` as no scaling, which is what the configs here ask for); rotary tables are not parameters.
``replace`` puts a stand-in in place of a name a module has: ``offline`` for a class whose ``from_pretrained`` would
download files that ``__init__`` loads and no parameter comes from (Moondream's tokenizer), returning None.
A config's own ``attributes`` are set on its config object after it is made, as ``config_attributes`` (Moondream's
HfConfig sets its ``config`` to ``{}`` whatever it is given; the small figures set it after).
``class_attributes`` restates a class attribute in the form transformers now reads (4.x's list of tied weights,
``_tied_weights_keys = ["lm_head.weight"]``, is a mapping ``{"lm_head.weight": "model.embed_tokens.weight"}`` in 5.x:
the same tie). Neither changes what ``__init__`` builds.

Re-run (needs torch and transformers; the figures were recorded with the versions the JSON names):

    git clone https://github.com/MiniMax-AI/MiniMax-M1 /tmp/MiniMax-M1
    python tests/remote_oracle/build.py minimax_m1 --git /tmp/MiniMax-M1            # compare with the figures
    python tests/remote_oracle/build.py minimax_m1 --git /tmp/MiniMax-M1 --write    # record them again

    git clone https://github.com/404805854/minicpmv2.6-onnx /tmp/minicpmv      # MiniCPM-V 2.6 (commit 8490e59)
    python tests/remote_oracle/build.py minicpmv --git /tmp/minicpmv
    git clone https://github.com/deepseek-ai/DeepSeek-VL2 /tmp/DeepSeek-VL2     # needs pip install --no-deps timm
    python tests/remote_oracle/build.py deepseek_vl_v2 --git /tmp/DeepSeek-VL2
    git clone https://github.com/reubzdubz/Molmo7B_D_NF4Quant /tmp/molmo    # Molmo-7B-D's files; needs einops
    python tests/remote_oracle/build.py molmo --git /tmp/molmo
    git clone https://github.com/vikhyat/moondream /tmp/moondream             # moondream2's files (hf_moondream.py)
    python tests/remote_oracle/build.py moondream1 --git /tmp/moondream
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
import types
from pathlib import Path

HERE = Path(__file__).parent


def _stand_in(kind: str, name: str):
    if kind == "false":
        return lambda *args, **kwargs: False
    if kind == "identity":
        return lambda *args, **kwargs: lambda f: f
    if kind == "typing":  # a typing name an old module re-exported (the remote code star-imports it from there)
        import typing

        return getattr(typing, name)
    if kind == "offline":  # a class whose loaders would fetch files: building keeps what they return, unused

        class Offline:
            @staticmethod
            def from_pretrained(*args, **kwargs):
                return None

            from_file = from_pretrained

        Offline.__name__ = Offline.__qualname__ = name
        return Offline
    if kind == "missing":

        def missing(*args, **kwargs):
            raise RuntimeError(f"{name} is a stand-in (not in this transformers); building a model never calls it")

        return missing
    raise SystemExit(f"unknown shim kind {kind!r} for {name}")


class _PlaceholderType(type):
    """The type of a placeholder: any attribute of one is another placeholder."""

    def __getattr__(cls, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return placeholder(f"{cls.__qualname__}.{name}")


def placeholder(name: str) -> type:
    """A name of a placeholder package: a class (it can be subclassed, as timm subclasses torchvision's transforms)
    that raises when called; building a model never calls one."""

    def refuse(self, *args, **kwargs):
        raise RuntimeError(f"{name} is a placeholder (the package is not installed); building never calls it")

    return _PlaceholderType(name.rsplit(".", 1)[-1], (), {"__init__": refuse, "__qualname__": name})


def install_placeholders(packages: list[str]) -> None:
    """Make every module under each of ``packages`` importable, each name in it a placeholder: for a package that a
    dependency of the remote code imports at module level and building never uses (timm's data pipeline imports
    torchvision; its VisionTransformer does not use it)."""
    import importlib.abc
    import importlib.machinery

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname, path, target=None):
            if fullname.split(".")[0] in packages:
                return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            return None

        def create_module(self, spec):
            module = types.ModuleType(spec.name)
            module.__path__ = []
            module.__getattr__ = lambda name: placeholder(f"{spec.name}.{name}")
            return module

        def exec_module(self, module):
            return None

    sys.meta_path.insert(0, Finder())


def install_shims(shims: dict[str, dict[str, str]]) -> None:
    """Put stand-ins for names the remote code imports and the installed transformers lacks."""
    for module_name, names in shims.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            module = types.ModuleType(module_name)
            sys.modules[module_name] = module
        for name, kind in names.items():
            if not hasattr(module, name):
                setattr(module, name, _stand_in(kind, name))


def install_replacements(replace: dict[str, dict[str, str]]) -> None:
    """Put stand-ins in place of names a module has, before the remote code imports them (``replace``)."""
    for module_name, names in replace.items():
        module = importlib.import_module(module_name)
        for name, kind in names.items():
            setattr(module, name, _stand_in(kind, name))


def load_package(spec: dict, git: Path, root: Path) -> str:
    """Copy the family's files at the recorded commit from the clone ``git`` into a package under ``root``."""
    package = spec["package"]
    folder = root / package
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    for path in spec["files"]:
        text = subprocess.run(
            ["git", "-C", str(git), "show", f"{spec['commit']}:{path}"], check=True, capture_output=True, text=True
        ).stdout
        for old, new in spec.get("imports", {}).items():  # absolute imports of a source tree's own package
            text = text.replace(old, new)
        (folder / Path(path).name).write_text(text)
    return package


def build(spec: dict, git: Path) -> dict[str, dict]:
    import torch
    import transformers

    install_placeholders(spec.get("placeholders", []))
    for name in spec.get("on_cpu", []):  # a torch factory whose result __init__ reads as a number (.item())
        made = getattr(torch, name)
        setattr(torch, name, lambda *args, _made=made, **kwargs: _made(*args, **{"device": "cpu", **kwargs}))
    install_shims(spec.get("shims", {}))
    install_replacements(spec.get("replace", {}))
    figures: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as root:
        sys.path.insert(0, root)
        package = load_package(spec, git, Path(root))
        config_module, config_class = spec["config_class"].rsplit(".", 1)
        model_module, model_class = spec["model_class"].rsplit(".", 1)
        config_type = getattr(importlib.import_module(f"{package}.{config_module}"), config_class)
        model_type = getattr(importlib.import_module(f"{package}.{model_module}"), model_class)
        for class_name, attributes in spec.get("class_attributes", {}).items():
            owner = getattr(importlib.import_module(f"{package}.{model_module}"), class_name)
            for key, value in attributes.items():
                setattr(owner, key, value)
        for name, entry in spec["configs"].items():
            config = config_type(**entry["config"])
            for dotted, value in {**spec.get("config_attributes", {}), **entry.get("attributes", {})}.items():
                *path, leaf = dotted.split(".")
                owner = config
                for step in path:
                    owner = getattr(owner, step)
                setattr(owner, leaf, value)
            with torch.device("meta"):
                model = model_type(config)
            figure: dict = {"total": sum(p.numel() for p in model.parameters())}
            if entry.get("shapes"):
                figure["shapes"] = {n: list(p.shape) for n, p in model.named_parameters()}
            figures[name] = figure
    figures["_versions"] = {"torch": torch.__version__, "transformers": transformers.__version__}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("family", help="the JSON file's name here, without .json")
    parser.add_argument("--git", type=Path, required=True, help="a clone of the family's repository")
    parser.add_argument("--write", action="store_true", help="record the figures in the JSON file")
    args = parser.parse_args()
    path = HERE / f"{args.family}.json"
    spec = json.loads(path.read_text("utf-8"))
    figures = build(spec, args.git)
    versions = figures.pop("_versions")
    if args.write:
        spec["versions"] = versions
        spec["figures"] = figures
        path.write_text(json.dumps(spec, indent=1) + "\n", "utf-8")
        print(f"wrote {len(figures)} figures to {path}")
        return
    different = [n for n, f in figures.items() if spec.get("figures", {}).get(n) != f]
    for name in different:
        recorded = spec.get("figures", {}).get(name, {}).get("total")
        print(f"{name}: built {figures[name]['total']:,}, recorded {recorded}")
    print("every figure as recorded" if not different else f"{len(different)} figures differ")
    sys.exit(1 if different else 0)


if __name__ == "__main__":
    main()
