"""/v2/device_profiles: named requirements that ARQs are made from."""

import uuid

import pecan
from pecan import rest
from oslo_utils import uuidutils
import webob.exc

from cyborg_like.api import microversion
from cyborg_like.api import policy
from cyborg_like.api import validation
from cyborg_like.api.controllers import listing
from cyborg_like.api.schemas import device_profiles as schema

RESOURCE = 'device_profiles'
_FIELDS = ('uuid', 'name', 'description', 'groups', 'created_at',
           'updated_at')


def _view(profile):
    shown = {k: profile[k] for k in _FIELDS}
    shown['links'] = listing.self_link(RESOURCE, profile['uuid'])
    return shown


def _names(value):
    return [n for n in value.split(',') if n]


def _normalized_group(group):
    normalized = {}
    for key, value in group.items():
        name = schema.normalized_key(key)
        if schema.is_unknown_trait(name):
            raise webob.exc.HTTPBadRequest(
                detail='Unsupported trait name %s: traits must be CUSTOM_* '
                       'or standard traits (os-traits).' % validation.excerpt(
                           name.split(':', 1)[1]))
        if name in normalized:
            raise webob.exc.HTTPBadRequest(
                detail='A group names %s twice.' % validation.excerpt(name))
        normalized[name] = value
    return normalized


def _normalize(document):
    """Strip the spaces around group key names, as Cyborg does, before
    the schema checks them; refuse traits Placement cannot know with a
    clearer message than the schema's."""
    profiles = document if isinstance(document, list) else [document]
    for profile in profiles:
        groups = profile.get('groups') if isinstance(profile, dict) else None
        if isinstance(groups, list):
            profile['groups'] = [
                _normalized_group(g) if isinstance(g, dict) else g
                for g in groups]
    return document


def _check_groups(groups):
    """400 for what the schema cannot tell: more accelerators than one
    request may create (a bound of the configuration)."""
    bound = pecan.request.api_conf.max_accelerators_per_request
    count = schema.accelerator_count(groups)
    if count > bound:
        raise webob.exc.HTTPBadRequest(
            detail='The profile asks for %d accelerators; at most %d may be '
                   'requested at once ([api] max_accelerators_per_request).'
                   % (count, bound))


def _posted_uuid(profile):
    """The uuid the client chose, canonical (Cyborg keeps it); None where
    it sent none, or an empty one as older clients do."""
    posted = profile.get('uuid')
    return str(uuid.UUID(posted)) if posted else None


class DeviceProfilesController(rest.RestController):

    @pecan.expose('json')
    def post(self):
        policy.authorize('cyborg:device_profile:create',
                         pecan.request.context)
        document = _normalize(validation.json_document(pecan.request))
        validation.validate(schema.CREATE, document, what='body')
        profile = document[0] if isinstance(document, list) else document
        _check_groups(profile['groups'])
        created = pecan.request.conductor_api.create_device_profile(
            pecan.request.context, profile['name'], profile['groups'],
            profile.get('description'), uuid=_posted_uuid(profile))
        pecan.response.status = 201
        return _view(created)

    @pecan.expose('json')
    def get_all(self, **params):
        policy.authorize('cyborg:device_profile:get_all',
                         pecan.request.context)
        query = listing.ListQuery(params, schema.LIST_FILTERS,
                                  schema.SORT_KEYS)
        names = _names(query.filters.get('name', ''))
        profiles = pecan.request.conductor_api.list_device_profiles(
            pecan.request.context, names, query.limit, query.marker,
            query.sort_key, query.sort_dir)
        return query.page(RESOURCE, profiles, _view)

    @pecan.expose('json')
    def get_one(self, uuid_or_name):
        policy.authorize('cyborg:device_profile:get_one',
                         pecan.request.context)
        api = pecan.request.conductor_api
        if uuidutils.is_uuid_like(uuid_or_name):
            profile = api.get_device_profile(pecan.request.context,
                                             uuid=uuid_or_name)
        else:
            microversion.require(microversion.DEVICE_PROFILE_BY_NAME)
            profile = api.get_device_profile(pecan.request.context,
                                             name=uuid_or_name)
        return {'device_profile': _view(profile)}

    @pecan.expose('json')
    def delete(self, value=None):
        """DELETE /{uuid}, /{name,name} or ?value=name,name (Cyborg's)."""
        policy.authorize('cyborg:device_profile:delete',
                         pecan.request.context)
        if not value:
            raise pecan.abort(400, 'Name the profiles to delete: '
                                   '/v2/device_profiles/<uuid> or '
                                   '?value=<name>,<name>')
        api = pecan.request.conductor_api
        if uuidutils.is_uuid_like(value):
            api.delete_device_profiles(pecan.request.context, uuid=value)
        else:
            api.delete_device_profiles(pecan.request.context,
                                       names=_names(value))
        pecan.response.status = 204
