# pbr reads setup.cfg: dependencies from requirements.txt, the version from
# git tags (or PBR_VERSION where there is no git metadata), AUTHORS and
# ChangeLog from the git history.
import setuptools

setuptools.setup(setup_requires=['pbr>=6.0.0'], pbr=True)
