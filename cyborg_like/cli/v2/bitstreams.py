"""The image catalog: FPGA bitstreams and firmware (``/v2/bitstreams``),
their records and their data."""

import hashlib

from osc_lib import exceptions as osc_exc

from cyborg_like.cli import common

COLUMNS = ('uuid', 'name', 'kind', 'vendor', 'board', 'function_name',
           'status', 'size')
LONG_COLUMNS = COLUMNS + ('description', 'interface_id', 'hardware_id',
                          'function_version', 'status_reason', 'sha256',
                          'project_id', 'created_at', 'updated_at')
SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'name', 'kind',
             'function_name', 'size', 'status')
KINDS = ('bitstream', 'firmware')
STATUSES = ('queued', 'uploading', 'active', 'failed')
# Metadata options of "create", as (option, field).
METADATA = (('--description', 'description'), ('--kind', 'kind'),
            ('--vendor', 'vendor'), ('--board', 'board'),
            ('--interface-id', 'interface_id'),
            ('--hardware-id', 'hardware_id'),
            ('--function-name', 'function_name'),
            ('--function-version', 'function_version'),
            ('--sha256', 'sha256'))
CHUNK = 1 << 20


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(CHUNK), b''):
            digest.update(chunk)
    return digest.hexdigest()


def upload(api, uuid, path):
    """Stream the file at ``path`` as the image's data; the image."""
    try:
        digest = sha256_of(path)
        with open(path, 'rb') as f:
            resp = api.request(
                'PUT', '/bitstreams/%s/data' % uuid, data=f,
                headers={'Content-Type': 'application/octet-stream',
                         'X-Image-Sha256': digest})
    except OSError as exc:
        raise osc_exc.CommandError('Cannot read %s: %s' % (path, exc))
    return resp.json()


class ListBitstream(common.Lister):
    """List the images of the catalog."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--name', metavar='<name>')
        parser.add_argument('--kind', choices=KINDS)
        parser.add_argument('--vendor', metavar='<pci-id>')
        parser.add_argument('--board', metavar='<pci-id>')
        parser.add_argument('--interface-id', metavar='<uuid>')
        parser.add_argument('--hardware-id', metavar='<uuid>')
        parser.add_argument('--function-name', metavar='<name>')
        parser.add_argument('--function-version', metavar='<version>')
        parser.add_argument('--status', choices=STATUSES)
        common.add_long(parser)
        return common.add_paging(parser, SORT_KEYS)

    def take_action(self, args):
        params, all_pages = common.paging(args)
        params.update(
            name=args.name, kind=args.kind, vendor=args.vendor,
            board=args.board, interface_id=args.interface_id,
            hardware_id=args.hardware_id, function_name=args.function_name,
            function_version=args.function_version, status=args.status)
        found = self.api.list('/bitstreams', 'bitstreams', params,
                              all_pages)
        return common.rows(found, LONG_COLUMNS if args.long else COLUMNS)


class ShowBitstream(common.ShowOne):
    """Show an image of the catalog."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The image')
        return parser

    def take_action(self, args):
        return common.one(self.api.get('/bitstreams/%s' % args.uuid))


class CreateBitstream(common.ShowOne):
    """Create an image of the catalog and, with --file, upload its data
    (metadata left out is read from the image's header when it has one)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>')
        parser.add_argument('--file', metavar='<path>',
                            help='Upload this file as the data at once')
        for option, _field in METADATA:
            parser.add_argument(option, metavar='<value>',
                                choices=KINDS if option == '--kind'
                                else None)
        return parser

    def take_action(self, args):
        body = {'name': args.name}
        for _option, field in METADATA:
            if getattr(args, field) is not None:
                body[field] = getattr(args, field)
        image = self.api.post('/bitstreams', body)
        if args.file:
            image = upload(self.api, image['uuid'], args.file)
        return common.one(image)


class UploadBitstream(common.ShowOne):
    """Upload the data of an image (streamed, with its sha256)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The image')
        parser.add_argument('file', metavar='<path>')
        return parser

    def take_action(self, args):
        return common.one(upload(self.api, args.uuid, args.file))


class DownloadBitstream(common.Command):
    """Download the data of an active image to a file, checking its
    sha256."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid', metavar='<uuid>', help='The image')
        parser.add_argument('file', metavar='<path>')
        return parser

    def take_action(self, args):
        resp = self.api.request('GET', '/bitstreams/%s/data' % args.uuid,
                                stream=True,
                                headers={'Accept': 'application/octet-stream'})
        digest = hashlib.sha256()
        with open(args.file, 'wb') as f:
            for chunk in resp.iter_content(CHUNK):
                digest.update(chunk)
                f.write(chunk)
        expected = resp.headers.get('X-Image-Sha256')
        if expected and digest.hexdigest() != expected:
            raise osc_exc.CommandError(
                'Downloaded data of %s has sha256 %s, not %s'
                % (args.uuid, digest.hexdigest(), expected))


class DeleteBitstream(common.Command):
    """Delete images of the catalog and their data."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuids', metavar='<uuid>', nargs='+',
                            help='The images')
        return parser

    def take_action(self, args):
        common.delete_each(
            lambda uuid: self.api.delete('/bitstreams/%s' % uuid),
            args.uuids, 'image')
