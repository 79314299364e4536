"""pip's way to the `gossipd` package: `pip install ./python`.

The extension, gossipd._gossipd, is the CMake target `_gossipd`
(python/CMakeLists.txt) built from the repository this directory is in;
setuptools only runs CMake and copies the module beside the Python files.
With no package index (as on a machine with Debian's packages only):

    python3 -m venv --system-site-packages venv     # sees Debian's torch
    venv/bin/pip install --no-build-isolation --no-index ./python

GOSSIPD_CMAKE_BUILD_DIR=DIR builds the target in an existing, configured
build tree (e.g. build/, where ./tests/run.sh built everything) instead of
configuring a new one under pip's build directory.
"""
import glob
import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent


def version():
    """project(gossipd VERSION x.y.z) of the top CMakeLists.txt."""
    m = re.search(r"project\(gossipd VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    if not m:
        sys.exit("python/setup.py: no 'project(gossipd VERSION ...)' in " + str(ROOT / "CMakeLists.txt"))
    return m.group(1)


class CMakeBuild(build_ext):
    """Builds _gossipd with CMake and copies it where setuptools wants the extension."""

    def build_extension(self, ext):
        build = os.environ.get("GOSSIPD_CMAKE_BUILD_DIR")
        if build:
            build = pathlib.Path(build).resolve()
            if not (build / "CMakeCache.txt").exists():
                sys.exit(f"python/setup.py: GOSSIPD_CMAKE_BUILD_DIR={build} is not a configured build tree "
                         "(cmake -S . -B build first, or leave it unset)")
        else:
            build = pathlib.Path(self.build_temp).resolve() / "cmake"
            subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                            f"-DPython3_EXECUTABLE={sys.executable}"], check=True)
        jobs = str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", str(build), "--target", "_gossipd", "-j", jobs], check=True)
        built = glob.glob(str(build / "python" / "gossipd" / "_gossipd*.so"))
        if len(built) != 1:
            sys.exit(f"python/setup.py: expected one _gossipd*.so in {build}/python/gossipd, found {built}")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


setup(
    name="gossipd",
    version=version(),
    description="Train torch models as members of a gossipd cluster (Crossover-SGD, SGP, AllReduce-SGD)",
    packages=["gossipd"],
    package_dir={"gossipd": "gossipd"},
    ext_modules=[Extension("gossipd._gossipd", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    install_requires=["numpy"],
    zip_safe=False,
)
