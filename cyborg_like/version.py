"""The installed version, as pbr recorded it from the git tags."""

from pbr import version

version_info = version.VersionInfo('cyborg_like')


def version_string():
    return version_info.release_string()
