"""/v2/accelerator_requests: ARQs, and binding them to instances.

Binding is accepted with 202 and completed by the conductor; Nova then
waits for ``GET ?instance=<uuid>&bind_state=resolved`` to stop answering
423 (or for its external event).
"""

from oslo_utils import uuidutils
import pecan
from pecan import rest
import webob.exc

from cyborg_like.api import audit
from cyborg_like.api import microversion
from cyborg_like.api import policy
from cyborg_like.api import validation
from cyborg_like.api.controllers import listing
from cyborg_like.api.schemas import accelerator_requests as schema
from cyborg_like.common import states

RESOURCE = 'arqs'
_FIELDS = ('uuid', 'state', 'state_reason', 'device_profile_name',
           'device_profile_group_id', 'hostname', 'device_rp_uuid',
           'instance_uuid', 'project_id', 'attach_handle_type',
           'attach_handle_uuid', 'attach_handle_info', 'device_health',
           'lease_ends_at', 'lease_starts_at', 'created_at', 'updated_at')
_BIND_FIELDS = ('hostname', 'device_rp_uuid', 'instance_uuid')


def _view(arq):
    shown = {k: arq[k] for k in _FIELDS}
    shown['links'] = listing.self_link('accelerator_requests', arq['uuid'])
    return shown


def _split(patches):
    """{uuid: ops} -> ('bind', {uuid: fields}) or ('unbind', [uuids])."""
    ops = {op['op'] for patch in patches.values() for op in patch}
    if len(ops) != 1:
        raise webob.exc.HTTPBadRequest(
            detail='Every op must be add (bind) or every op remove (unbind).')
    if ops == {'remove'}:
        return 'unbind', list(patches)
    return 'bind', {uuid: _bind_fields(uuid, patch)
                    for uuid, patch in patches.items()}


def _bind_fields(uuid, patch):
    fields = {op['path'].lstrip('/'): op.get('value') for op in patch}
    if 'project_id' in fields:
        microversion.require(microversion.PROJECT_ID_IN_BIND)
        policy.authorize('cyborg:arq:bind_project_id',
                         pecan.request.context)
    missing = [f for f in _BIND_FIELDS if not fields.get(f)]
    if missing:
        raise webob.exc.HTTPBadRequest(
            detail='Fields absent in patch of %s: %s' % (
                uuid, ','.join(missing)))
    if not fields.get('project_id'):
        # The request stays its creator's project's: Nova or an admin
        # binding it must not take it (and its quota usage) over.
        fields.pop('project_id', None)
    return fields


def _is_object(request):
    try:
        return isinstance(validation.json_document(request), dict)
    except webob.exc.HTTPBadRequest:
        return False  # validation.body answers why


def _require_uuids(name, values):
    bad = [v for v in values if not uuidutils.is_uuid_like(v)]
    if bad:
        raise webob.exc.HTTPBadRequest(
            detail='Invalid %s: %s is not a UUID.' % (
                name, validation.excerpt(bad[0])))


class AcceleratorRequestsController(rest.RestController):
    _custom_actions = {'schedule': ['POST']}

    @pecan.expose('json')
    def post(self):
        policy.authorize('cyborg:arq:create', pecan.request.context)
        body = validation.body(pecan.request, schema.CREATE)
        created = pecan.request.conductor_api.create_arqs(
            pecan.request.context, body['device_profile_name'],
            body.get('device_profile_group_id'),
            pecan.request.api_conf.max_accelerators_per_request)
        pecan.response.status = 201
        return {RESOURCE: [_view(a) for a in created]}

    @pecan.expose('json')
    def get_all(self, **params):
        policy.authorize('cyborg:arq:get_all', pecan.request.context)
        bind_state = params.pop('bind_state', None)
        if bind_state not in (None, 'resolved'):
            raise webob.exc.HTTPBadRequest(
                detail='bind_state may only be "resolved".')
        instance = params.pop('instance', None)
        _require_uuids('instance', [instance] if instance else [])
        device_health = params.pop('device_health', None)
        if device_health not in (None,) + schema.DEVICE_HEALTH:
            raise webob.exc.HTTPBadRequest(
                detail='device_health may only be one of %s.'
                % ', '.join(schema.DEVICE_HEALTH))
        query = listing.ListQuery(params, (), schema.SORT_KEYS)
        filters = {'instance_uuid': instance}
        if device_health:
            # The workloads holding failed devices (admins: of every
            # project).
            filters['device_health'] = device_health
        if bind_state and not instance:
            filters['states'] = list(states.RESOLVED)
        arqs = pecan.request.conductor_api.list_arqs(
            pecan.request.context, filters, query.limit, query.marker,
            query.sort_key, query.sort_dir)
        if bind_state and instance and any(
                a['state'] not in states.RESOLVED for a in arqs):
            # Nova polls until every ARQ of the instance is resolved.
            pecan.response.status = 423
            return None
        return query.page(RESOURCE, arqs, _view)

    @pecan.expose('json')
    def get_one(self, uuid):
        policy.authorize('cyborg:arq:get_one', pecan.request.context)
        return _view(pecan.request.conductor_api.get_arq(
            pecan.request.context, uuid))

    @pecan.expose('json')
    def patch(self, uuid=None):
        """Bulk: PATCH / with {uuid: [ops]}; one: PATCH /<uuid> [ops]."""
        policy.authorize('cyborg:arq:update', pecan.request.context)
        if uuid is None or _is_object(pecan.request):
            # openstacksdk (so the cyborgclient CLI) sends the bulk form to
            # /<uuid>; Cyborg, too, takes the body and ignores the URL.
            patches = validation.body(pecan.request,
                                      schema.PATCH_MANY_SHAPE)
            documented = (schema.PATCH_MANY, patches)
        else:
            ops = validation.body(pecan.request, schema.PATCH_ONE_SHAPE)
            patches, documented = {uuid: ops}, (schema.PATCH_ONE, ops)
        # _split says what is wrong in words; the schemas of the document
        # say the same rules, and are the last word.
        action, arg = _split(patches)
        audit.note(pecan.request, 'update/' + action, list(patches))
        validation.validate(*documented, what='body')
        api = pecan.request.conductor_api
        if action == 'bind':
            api.bind_arqs(pecan.request.context, arg)
        else:
            api.unbind_arqs(pecan.request.context, arg, unbind_bound=(
                policy.check('cyborg:arq:unbind_bound',
                             pecan.request.context)))
        pecan.response.status = 202

    @pecan.expose('json')
    def schedule(self, uuid):
        """Bind without Nova (ours): the conductor picks the deployable
        (on ``hostname`` if given); 202 with the ARQ, BindStarted, which
        ends Bound or BindFailed as a Nova binding does."""
        policy.authorize('cyborg:arq:schedule', pecan.request.context)
        _require_uuids('uuid', [uuid])
        body = validation.body(pecan.request, schema.SCHEDULE)
        arq = pecan.request.conductor_api.schedule_arq(
            pecan.request.context, uuid, body['instance_uuid'],
            hostname=body.get('hostname'),
            preferences=body.get('preferences'))
        pecan.response.status = 202
        return _view(arq)

    @pecan.expose('json')
    def delete(self, uuid=None, arqs=None, instance=None):
        """DELETE ?arqs=<uuid>,<uuid> or ?instance=<uuid> (or /<uuid>)."""
        policy.authorize('cyborg:arq:delete', pecan.request.context)
        uuids = [uuid] if uuid else [a for a in (arqs or '').split(',') if a]
        if bool(uuids) == bool(instance):
            raise webob.exc.HTTPBadRequest(
                detail='Provide either an ARQ uuid list or an instance '
                       'UUID.')
        _require_uuids('arqs', uuids)
        _require_uuids('instance', [instance] if instance else [])
        audit.note(pecan.request, target_ids=uuids)
        pecan.request.conductor_api.delete_arqs(
            pecan.request.context, uuids=uuids or None,
            instance_uuid=instance, delete_bound=policy.check(
                'cyborg:arq:delete_bound', pecan.request.context))
        pecan.response.status = 204
