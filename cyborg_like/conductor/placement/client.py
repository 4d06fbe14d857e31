"""Placement's REST API: one method per request, on a keystoneauth
adapter built from [placement]."""

import urllib.parse

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading

# 1.14 nested providers, 1.18 ?required=, 1.19 a provider's aggregates
# with its generation, 1.20 POST returns the provider, 1.23 error codes,
# 1.26 reserved may equal total (a disabled device).
MICROVERSION = '1.26'
# Allocations carry the consumer's generation from 1.28 on.
ALLOCATIONS_MICROVERSION = '1.28'


class Unreachable(Exception):
    """Placement did not answer, or answered with a server error."""


class UnexpectedAnswer(Exception):
    """Placement answered a read with an error: this host is skipped."""


class PlacementClient:
    """Placement's REST API on a keystoneauth session ([placement])."""

    def __init__(self, conf, group='placement'):
        auth = ks_loading.load_auth_from_conf_options(conf, group)
        session = ks_loading.load_session_from_conf_options(
            conf, group, auth=auth)
        self._adapter = ks_loading.load_adapter_from_conf_options(
            conf, group, session=session, auth=auth)

    def request(self, method, url, body=None, microversion=MICROVERSION):
        try:
            response = self._adapter.request(
                url, method, json=body, microversion=microversion,
                raise_exc=False)
        except ks_exc.ClientException as error:
            # Refused, timed out, no endpoint in the catalog, bad auth.
            raise Unreachable('%s %s: %s' % (method, url, error))
        if response.status_code >= 500:
            raise Unreachable('%s %s: %s %s' % (
                method, url, response.status_code, response.text[:200]))
        return response

    def _json(self, method, url, body=None):
        response = self.request(method, url, body)
        if response.status_code != 200:
            raise UnexpectedAnswer('%s %s: %s %s' % (
                method, url, response.status_code, response.text[:200]))
        return response.json()

    def providers(self, **query):
        url = '/resource_providers?' + urllib.parse.urlencode(query)
        return self._json('GET', url)['resource_providers']

    def provider(self, uuid):
        response = self.request('GET', '/resource_providers/%s' % uuid)
        return response.json() if response.status_code == 200 else None

    def create_provider(self, uuid, name, parent_uuid):
        return self.request('POST', '/resource_providers', {
            'uuid': uuid, 'name': name,
            'parent_provider_uuid': parent_uuid})

    def update_provider(self, uuid, name, parent_uuid):
        return self.request('PUT', '/resource_providers/%s' % uuid, {
            'name': name, 'parent_provider_uuid': parent_uuid})

    def delete_provider(self, uuid):
        return self.request('DELETE', '/resource_providers/%s' % uuid)

    def inventories(self, uuid):
        body = self._json('GET', '/resource_providers/%s/inventories' % uuid)
        return body['resource_provider_generation'], body['inventories']

    def set_inventories(self, uuid, generation, inventories):
        return self.request(
            'PUT', '/resource_providers/%s/inventories' % uuid,
            {'resource_provider_generation': generation,
             'inventories': inventories})

    def traits(self, uuid):
        body = self._json('GET', '/resource_providers/%s/traits' % uuid)
        return body['resource_provider_generation'], set(body['traits'])

    def set_traits(self, uuid, generation, traits):
        return self.request(
            'PUT', '/resource_providers/%s/traits' % uuid,
            {'resource_provider_generation': generation,
             'traits': sorted(traits)})

    def aggregates(self, uuid):
        """The aggregates a provider is in (1.19 on: with its
        generation)."""
        body = self._json('GET', '/resource_providers/%s/aggregates' % uuid)
        return body['resource_provider_generation'], body['aggregates']

    def existing_traits(self, names):
        url = '/traits?name=in:' + ','.join(sorted(names))
        return set(self._json('GET', url)['traits'])

    def create_trait(self, name):
        return self.request('PUT', '/traits/%s' % name).status_code in (
            201, 204)

    def resource_class_exists(self, name):
        return self.request('GET', '/resource_classes/%s' % name
                            ).status_code == 200

    def create_resource_class(self, name):
        return self.request('PUT', '/resource_classes/%s' % name
                            ).status_code in (201, 204)

    # A consumer's allocations, with its generation (1.28): standalone
    # bindings claim theirs (conductor/placement/claims.py).
    def allocations(self, consumer):
        response = self.request('GET', '/allocations/%s' % consumer,
                                microversion=ALLOCATIONS_MICROVERSION)
        if response.status_code != 200:
            raise UnexpectedAnswer('GET /allocations/%s: %s' % (
                consumer, describe(response)))
        return response.json()

    def set_allocations(self, consumer, body):
        return self.request('PUT', '/allocations/%s' % consumer, body,
                            microversion=ALLOCATIONS_MICROVERSION)


def error_code(response):
    try:
        return response.json()['errors'][0].get('code')
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def describe(response):
    return '%s %s' % (response.status_code, response.text[:300])
