"""Gabbi fixtures: the YAML files name these in their ``fixtures`` list."""

from gabbi import fixture

from tests.functional import cloud as cloud_module

# The app of the running fixture; gabbi's intercept asks for it per request.
CURRENT = {}


class InProcessCloud(fixture.GabbiFixture):
    """The whole service in one process, reporting inventory.yaml."""

    def start_fixture(self):
        self.cloud = cloud_module.Cloud().start()
        CURRENT['app'] = self.cloud.app

    def stop_fixture(self):
        CURRENT.pop('app', None)
        self.cloud.stop()


def _dispatch(environ, start_response):
    return CURRENT['app'](environ, start_response)


def current_app():
    """Gabbi builds its transport before fixtures start: hand it a
    dispatcher to whichever app is running when a request is made."""
    return _dispatch


class CatalogCloud(InProcessCloud):
    """The cloud with regions offering PR interfaces (inventory-catalog.yaml)
    and the API also on a port of 127.0.0.1, where the agent fetches
    catalog images."""

    def start_fixture(self):
        self.cloud = cloud_module.Cloud(
            inventory_file=cloud_module.CATALOG_INVENTORY, http=True,
            overrides={('catalog', 'max_image_size'): 64 * 1024}).start()
        CURRENT['app'] = self.cloud.app


class QuotaCloud(InProcessCloud):
    """The cloud with default limits: 2 FPGAs and 4 PGPUs a project."""

    def start_fixture(self):
        self.cloud = cloud_module.Cloud(overrides={
            ('quota', 'default_limits'): {'FPGA': '2', 'PGPU': '4'}}).start()
        CURRENT['app'] = self.cloud.app
