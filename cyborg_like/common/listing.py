"""Filters and sort keys of each list, shared by the API and the database."""

DEVICE_FILTERS = ('type', 'vendor', 'hostname', 'status')
DEVICE_SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'type', 'vendor',
                    'model', 'hostname', 'status')

DEPLOYABLE_FILTERS = ('name', 'driver_name', 'rp_uuid', 'bitstream_id')
DEPLOYABLE_SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'name',
                        'num_accelerators')

BITSTREAM_FILTERS = ('name', 'kind', 'vendor', 'board', 'interface_id',
                     'hardware_id', 'function_name', 'function_version',
                     'status')
BITSTREAM_SORT_KEYS = ('created_at', 'updated_at', 'uuid', 'name', 'kind',
                       'function_name', 'size', 'status')
