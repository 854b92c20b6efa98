"""The wheel's build step (pyproject.toml holds the metadata): builds libsegmux with CMake and puts it
inside the package with a _paths.py naming it, so an installed `import segmux` finds its library.

SEGMUX_BUILD_DIR: a CMake build tree to reuse (configured already: only the libsegmux target is
built, so an up-to-date tree costs seconds); unset: build/python-wheel, configured here (a full
build, tests and benchmarks off). SEGMUX_BUILD_JOBS: parallel compile jobs (default: the cores)."""

import glob
import os
import re
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        match = re.search(r"project\(segmux VERSION (\d+\.\d+\.\d+)", f.read())
    if not match:
        raise RuntimeError("setup.py: no project(segmux VERSION x.y.z) in CMakeLists.txt")
    return match.group(1)


def build_libsegmux():
    """The path of the built libsegmux.so.X.Y.Z."""
    build = os.environ.get("SEGMUX_BUILD_DIR") or os.path.join(ROOT, "build", "python-wheel")
    build = os.path.abspath(build)
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build, *generator, "-DCMAKE_BUILD_TYPE=Release",
                               "-DSEGMUX_TESTS=OFF", "-DSEGMUX_BENCH=OFF"])
    jobs = os.environ.get("SEGMUX_BUILD_JOBS") or str(len(os.sched_getaffinity(0)))
    subprocess.check_call(["cmake", "--build", build, "--target", "segmux_shared", "-j", jobs])
    found = glob.glob(os.path.join(build, "libsegmux.so.%s" % project_version()))
    if not found:
        raise RuntimeError(f"setup.py: the build in {build} made no libsegmux.so.{project_version()}")
    return found[0]


class BuildPyWithLibrary(build_py):
    """The pure-Python files, then libsegmux (under its SONAME, the name it is loaded by) and _paths.py."""

    def run(self):
        super().run()
        major, minor, _ = project_version().split(".")
        soname = f"libsegmux.so.{major}.{minor}"
        package = os.path.join(self.build_lib, "segmux")
        os.makedirs(package, exist_ok=True)
        shutil.copyfile(build_libsegmux(), os.path.join(package, soname))
        with open(os.path.join(package, "_paths.py"), "w", encoding="utf-8") as f:
            f.write("# Written by setup.py: libsegmux relative to this package (inside it).\n"
                    f"LIBRARY = {soname!r}\n")


class BinaryDistribution(Distribution):
    """A wheel for this platform (it carries a native library), for any Python 3."""

    def has_ext_modules(self):
        return True


cmdclass = {"build_py": BuildPyWithLibrary}
try:
    from wheel.bdist_wheel import bdist_wheel

    class BdistWheel(bdist_wheel):
        def get_tag(self):  # the library is loaded with ctypes: no Python ABI in it
            _, _, platform = super().get_tag()
            return "py3", "none", platform

    cmdclass["bdist_wheel"] = BdistWheel
except ImportError:
    pass

# Setuptools' own files go under build/ (ignored by git), not beside the sources.
os.makedirs(os.path.join(ROOT, "build", "python-setuptools"), exist_ok=True)
setup(version=project_version(), cmdclass=cmdclass, distclass=BinaryDistribution,
      options={"build": {"build_base": os.path.join(ROOT, "build", "python-setuptools")},
               "egg_info": {"egg_base": os.path.join(ROOT, "build", "python-setuptools")}})
