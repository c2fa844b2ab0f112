"""The package as pip installs it: a wheel built from the checkout's files holds every module, the presets
and every command, and installs into a fresh environment where `keras-bert-app --help` runs; dependencies are
ranges whose floors constraints-floor.txt pins; `keras-bert-app --help` imports no TensorFlow."""

import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

from keras_bert_app.commands.main import COMMANDS

ROOT = pathlib.Path(__file__).resolve().parent.parent
UNPINNED = ("keras", "tensorflow", "tensorflow-text", "numpy")


def _project_files():
    """The checkout's files a commit holds: tracked or untracked-not-ignored, present on disk."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout.decode("utf-8").split("\0")
    return sorted({name for name in listed if name and (ROOT / name).is_file()})


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """(names in the wheel, the checkout's files): the wheel built from a copy of those files only,
    as from a fresh clone (no build folder, no egg-info, nothing ignored)."""
    pytest.importorskip("setuptools")
    files = _project_files()
    source = tmp_path_factory.mktemp("source")
    for name in files:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "-w", str(out), str(source)],
        capture_output=True, text=True,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (path,) = out.glob("keras_bert_app-*.whl")
    with zipfile.ZipFile(path) as archive:
        return set(archive.namelist()), files, archive.read(
            next(n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt"))
        ).decode(), path


def test_wheel_installs_into_a_fresh_environment_and_the_command_runs(wheel, tmp_path):
    """pip installs the wheel into a new virtual environment (no network, no dependencies: `--help` needs
    none) and its console script prints the commands."""
    *_, path = wheel
    venv = tmp_path / "venv"
    fresh = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}  # not the checkout
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    install = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(path)],
        capture_output=True, text=True, timeout=300, env=fresh,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    result = subprocess.run(
        [str(venv / "bin" / "keras-bert-app"), "--help"], cwd=tmp_path, capture_output=True, text=True,
        timeout=120, env={"PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert all(name in result.stdout for name in COMMANDS)
    script = (  # the wheel's copy answers, not the checkout's, with its built-in presets
        "import keras_bert_app\n"
        "from keras_bert_app import presets\n"
        "print(keras_bert_app.__file__)\n"
        "print(presets.vocabulary_path('bert_tiny_uncased'))\n"
        "print(len(presets.names()))\n"
    )
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    package, vocabulary, count = installed.stdout.split()
    assert package.startswith(str(venv)) and vocabulary.startswith(str(venv)), installed.stdout
    assert pathlib.Path(vocabulary).is_file() and int(count) == len(list((ROOT / "presets").glob("*/config.json")))


def test_wheel_holds_every_module_of_the_checkout(wheel):
    names, files, *_ = wheel
    modules = [name for name in files if name.startswith("keras_bert_app/") and name.endswith(".py")]
    assert len(modules) > 50
    missing = [name for name in modules if name not in names]
    assert not missing, f"modules left out of the wheel: {missing}"
    assert "keras_bert_app/benchmark/suite.py" in names  # the package the old hand list forgot


def test_wheel_holds_the_built_in_presets(wheel):
    names, files, *_ = wheel
    preset_files = [name for name in files if name.startswith("presets/") and name.endswith((".json", ".txt"))]
    assert any(name.endswith("bert_tiny_uncased/config.json") for name in preset_files)
    missing = [name for name in preset_files if "keras_bert_app/preset_files/" + name.removeprefix("presets/") not in names]
    assert not missing, f"preset files left out of the wheel: {missing}"


def test_wheel_holds_every_command_and_the_console_script(wheel):
    names, _, entry_points, _ = wheel
    missing = [module for module, _ in COMMANDS.values() if f"keras_bert_app/commands/{module}.py" not in names]
    assert not missing, f"command modules left out of the wheel: {missing}"
    assert "keras-bert-app = keras_bert_app.commands.main:console_script" in entry_points


def _pyproject():
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_dependencies_are_ranges_with_a_lower_bound():
    from packaging.requirements import Requirement

    requirements = {}
    for line in _pyproject()["project"]["dependencies"]:
        requirement = Requirement(line)
        requirements[requirement.name] = requirement
    for name in UNPINNED:
        operators = {spec.operator for spec in requirements[name].specifier}
        assert not operators & {"==", "==="}, f"{name} is pinned: {requirements[name]}"
    unbounded = [str(r) for r in requirements.values() if not {s.operator for s in r.specifier} & {">=", "~=", "=="}]
    assert not unbounded, f"dependencies without a lower bound: {unbounded}"


def _pins(name):
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins = {}
    for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            assert spec.operator == "==", line
            pins[canonicalize_name(requirement.name)] = spec.version
    return pins


def _requirements(extras=None):
    """pyproject.toml's requirements: the core's and those of `extras` (default: every extra), not the
    project's own extras that an extra names (`keras-bert-app[eval]`)."""
    from packaging.requirements import Requirement

    project = _pyproject()["project"]
    optional = project["optional-dependencies"]
    lines = project["dependencies"] + [line for extra in (optional if extras is None else extras) for line in optional[extra]]
    return [requirement for requirement in map(Requirement, lines) if requirement.name != project["name"]]


def test_constraints_pin_versions_inside_the_ranges():
    """constraints.txt (what CI installs with) pins every dependency, at a version its range allows."""
    from packaging.utils import canonicalize_name

    pins = _pins("constraints.txt")
    for requirement in _requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"constraints.txt has no version for {name}"
        assert requirement.specifier.contains(pins[name], prereleases=True), (str(requirement), pins[name])
    assert 'install .venv -c constraints.txt -e ".[test,' in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_floor_constraints_pin_every_direct_dependency_at_its_lower_bound():
    """constraints-floor.txt (CI's floor job) holds each requirement of the core and of the extras it installs
    at pyproject.toml's lower bound: the floors a user's pip may keep are the ones the suite ran on."""
    from packaging.utils import canonicalize_name

    pins = _pins("constraints-floor.txt")
    project_extras = [extra for extra in _pyproject()["project"]["optional-dependencies"] if extra != "docs"]
    for requirement in _requirements(project_extras):
        name = canonicalize_name(requirement.name)
        floors = [spec.version for spec in requirement.specifier if spec.operator in (">=", "==")]
        assert floors and pins.get(name) == floors[0], f"{requirement}: constraints-floor.txt has {pins.get(name)}"
    assert 'install .venv-floor -c constraints-floor.txt -e ".[test,beam]"' in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_no_extra_installs_no_optional_package():
    """The core requires none of the packages a few features use (each is an extra named by use), and no
    requirement of the core or the jax extra has an upper bound (a notebook's stack is kept)."""
    core = {requirement.name: requirement for requirement in _requirements([])}
    assert not set(core) & {"keras-hub", "scikit-learn", "scipy", "tensorflow-serving-api", "apache-beam"}
    assert set(core) >= {"keras", "tensorflow", "tensorflow-text", "numpy"}
    bounded = [str(r) for r in _requirements(["jax"]) if {s.operator for s in r.specifier} & {"<", "<=", "~=", "=="}]
    assert not bounded, f"upper bounds: {bounded}"


def test_help_imports_no_tensorflow():
    script = (
        "import sys\n"
        "from keras_bert_app.commands.main import main\n"
        "for argv in (['--help'], ['quickstart', '--help'], ['bench', '--help']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit as exit:\n"
        "        assert exit.code == 0, (argv, exit.code)\n"
        "heavy = sorted(name for name in ('tensorflow', 'tensorflow_text', 'keras_hub', 'jax', 'torch') if name in sys.modules)\n"
        "assert not heavy, heavy\n"
        "print('OK')\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip().endswith("OK"), result.stdout[-2000:] + result.stderr[-2000:]
    for name in COMMANDS:
        assert name in result.stdout  # every subcommand listed in the top-level help
