"""Build hook: stamp the source commit into the wheel, so run files made with an installed
(non-editable) wisconsin still record which code measured them."""

import os
import shutil
import subprocess
import tempfile

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _git(root: str, *args: str) -> str:
    try:
        out = subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version, build_data):
        if version == "editable":
            return  # a checkout asks git directly at run time
        commit = _git(self.root, "rev-parse", "HEAD") or "unknown"
        if commit != "unknown" and _git(self.root, "status", "--porcelain", "--untracked-files=no"):
            commit += "-dirty"
        self._stamp_dir = tempfile.mkdtemp(prefix="wisconsin-build-")
        path = os.path.join(self._stamp_dir, "_build_info.py")
        with open(path, "w") as fh:
            fh.write(f'"""Written at build time by hatch_build.py."""\n\nGIT_COMMIT = "{commit}"\n')
        build_data["force_include"][path] = "wisconsin/_build_info.py"

    def finalize(self, version, build_data, artifact_path):
        # the wheel holds the stamp now: nothing of the build stays in $TMPDIR
        stamp_dir = getattr(self, "_stamp_dir", None)
        if stamp_dir:
            shutil.rmtree(stamp_dir, ignore_errors=True)
