"""Directory images lose their setuid/setgid bits, device nodes and world-writable folders (portal/admin/imagesafety.py);
runs as root."""

from __future__ import annotations

import os
import stat

from portal.admin.imagesafety import make_unprivileged, privileged_entries


def test_an_image_with_a_setuid_su_and_a_world_writable_device_is_made_harmless(tmp_path):
    image = tmp_path / "image"
    (image / "bin").mkdir(parents=True)
    (image / "dev").mkdir()
    su, wall, ls = image / "bin" / "su", image / "bin" / "wall", image / "bin" / "ls"
    for program in (su, wall, ls):
        program.write_text("#!/bin/sh\n")
    su.chmod(0o4755)
    wall.chmod(0o2755)
    ls.chmod(0o755)
    os.mknod(image / "dev" / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    (image / "bin" / "link-to-host").symlink_to("/usr/bin/passwd")  # never followed
    (image / "var" / "tmp").mkdir(parents=True)
    (image / "var" / "tmp").chmod(0o1777)  # as debootstrap makes it: a neighbour's files would enter the image
    assert sorted(privileged_entries(image)) == [
        f"{image}/bin/su (setuid -rwsr-xr-x)",
        f"{image}/bin/wall (setgid -rwxr-sr-x)",
        f"{image}/dev/null (device node)",
        f"{image}/var/tmp (a folder every user may write, drwxrwxrwt)",
    ]
    assert len(make_unprivileged(image)) == 4
    assert privileged_entries(image) == []
    assert (stat.S_IMODE(su.stat().st_mode), stat.S_IMODE(wall.stat().st_mode)) == (0o755, 0o755)
    assert not (image / "dev" / "null").exists() and (image / "dev").is_dir()
    assert stat.S_IMODE((image / "var" / "tmp").stat().st_mode) == 0o755
    assert stat.S_IMODE(os.stat("/usr/bin/passwd").st_mode) & stat.S_ISUID  # the host's own is untouched
