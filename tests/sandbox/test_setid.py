"""`setid.clear_setid`, the host walk that clears setuid and setgid bits in the folders a docker sandbox writes:
every regular file at any depth loses them, a link is never followed, and other modes are kept."""

from __future__ import annotations

import stat
import subprocess

from terminus.sandbox.setid import clear_setid


def test_bits_are_cleared_at_any_depth_and_no_link_is_followed(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    deep = root / ("d/" * 1100)  # deeper than Python's recursion limit
    subprocess.run(["mkdir", "-p", str(deep)], check=True)
    outside.mkdir()
    try:
        victim = outside / "host-setuid"
        victim.write_text("x")
        victim.chmod(0o6755)
        files = {root / "u": 0o4755, root / "g": 0o2750, deep / "x": 0o6711, root / "plain": 0o640}
        for path, mode in files.items():
            path.write_text("x")
            path.chmod(mode)
        (root / "file-link").symlink_to(victim)
        (root / "dir-link").symlink_to(outside)
        found, failed = clear_setid(root)
        assert (found, failed) == (3, [])
        for path, mode in files.items():
            assert stat.S_IMODE(path.lstat().st_mode) == mode & 0o777, path.name
        assert stat.S_IMODE(victim.lstat().st_mode) == 0o6755
    finally:  # pytest's own rmtree recurses
        subprocess.run(["rm", "-rf", "--", str(root / "d")], check=False)
